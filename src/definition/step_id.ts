/**
 * The step id rule (STEPFLOW.md §2): seed-001 hashes or seed-004 dotted names.
 *
 * @module
 */

/** Seed 001 step ids: `s_` followed by 4–8 hexadecimal digits (`s_a8f3`, `s_b2c1de`). */
export const HASH_STEP_ID: RegExp = /^s_[0-9a-fA-F]{4,8}$/;

/**
 * Seed 004 step ids: two or more dot-separated segments (`initial.issue`,
 * `continuation.externalState`, `complete.issue`, `section.projectcontext`). The first segment
 * starts with a letter; every segment holds letters, digits, `_` and `-` and starts with a letter
 * or digit.
 */
export const DOTTED_STEP_ID: RegExp = /^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9][A-Za-z0-9_-]*)+$/;

/**
 * True when `id` is a valid step id: a seed-001 hash ({@linkcode HASH_STEP_ID}) or a seed-004
 * dotted name ({@linkcode DOTTED_STEP_ID}). Neither form can hold `/`, `#`, spaces or `..`, so a
 * step id is always safe in a JSON Pointer, a scripted-backend key (`<id>#check`) and a file name.
 *
 * @example
 * ```ts
 * import { isValidStepId } from "./step_id.ts";
 * isValidStepId("s_a8f3"); // true
 * isValidStepId("initial.issue"); // true
 * isValidStepId("analyze"); // false — neither form
 * ```
 */
export function isValidStepId(id: string): boolean {
  return HASH_STEP_ID.test(id) || DOTTED_STEP_ID.test(id);
}

/** The fix-it text shown with an invalid step id. */
export const STEP_ID_RULE =
  'use "s_" + 4–8 hex digits (seed 001, e.g. "s_a8f3") or a dotted name (seed 004, e.g. "initial.issue")';
