/**
 * The step id rule (docs/agents.md, "steps_registry.json"): any safe name — hashes (`s_a8f3`),
 * dotted names (`initial.issue`) and single words (`consider`, `triage`) alike.
 *
 * @module
 */

/** Hash step ids: `s_` followed by 4–8 hexadecimal digits (`s_a8f3`, `s_b2c1de`). */
export const HASH_STEP_ID: RegExp = /^s_[0-9a-fA-F]{4,8}$/;

/**
 * Dotted step ids: two or more dot-separated segments (`initial.issue`,
 * `continuation.externalState`, `complete.issue`, `section.projectcontext`). Every one of them is
 * also a {@linkcode STEP_ID}; kept to tell the two forms apart.
 */
export const DOTTED_STEP_ID: RegExp = /^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9][A-Za-z0-9_-]*)+$/;

/** The longest step id accepted (ids appear in file names, log lines and scripted keys). */
export const MAX_STEP_ID_LENGTH = 128;

/**
 * The source of the step id pattern: one or more `.`-separated segments, each of letters, digits,
 * `_` and `-` and starting with a letter or digit — so no empty segment, no `..`, no leading or
 * trailing dot. Written into the generated JSON Schema so editors flag bad ids as you type.
 */
export const STEP_ID_SOURCE = "^[A-Za-z0-9][A-Za-z0-9_-]*(?:\\.[A-Za-z0-9][A-Za-z0-9_-]*)*$";

/** The step id rule as a RegExp (see {@linkcode STEP_ID_SOURCE}). */
export const STEP_ID: RegExp = new RegExp(STEP_ID_SOURCE);

/**
 * True when `id` is a valid step id: a safe name of at most {@linkcode MAX_STEP_ID_LENGTH}
 * characters matching {@linkcode STEP_ID} — `s_a8f3`, `initial.issue`, `consider`, `triage-2`.
 * No id can hold `/`, `#`, `~`, spaces or `..`, so a step id is always safe in a JSON Pointer, a
 * scripted-backend key (`<id>#check`) and a file name. The `complete.*` (closing step) and
 * `section.*` (template section) prefixes keep their meaning.
 *
 * @example
 * ```ts
 * import { isValidStepId } from "./step_id.ts";
 * isValidStepId("s_a8f3"); // true
 * isValidStepId("initial.issue"); // true
 * isValidStepId("consider"); // true
 * isValidStepId("a..b"); // false
 * ```
 */
export function isValidStepId(id: string): boolean {
  return id.length <= MAX_STEP_ID_LENGTH && STEP_ID.test(id);
}

/** The fix-it text shown with an invalid step id. */
export const STEP_ID_RULE =
  `use letters, digits, "_" and "-", in segments joined by single dots, starting with a letter or digit, at most ${MAX_STEP_ID_LENGTH} characters (e.g. "triage", "initial.issue", "s_a8f3")`;
