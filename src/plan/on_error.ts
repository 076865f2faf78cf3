/**
 * Parsing of a step's `onError` setting.
 *
 * @module
 */
import { parseOnErrorPolicy, PLAN_ON_ERROR } from "../on_error.ts";
import type { ErrorStrategy, OnErrorSetting } from "./types.ts";

/**
 * Parses a plan step's `onError` setting ({@linkcode PLAN_ON_ERROR} of the one grammar); `undefined`
 * for anything that is not one (the schema reports those).
 *
 * @example
 * ```ts
 * import { parseOnError } from "./on_error.ts";
 * parseOnError("retry=3"); // { kind: "retry", count: 3 }
 * parseOnError({ recover: 2 }); // { kind: "recover", maxAttempts: 2 }
 * parseOnError(undefined); // { kind: "fail" }
 * ```
 */
export function parseOnError(setting: OnErrorSetting | undefined): ErrorStrategy | undefined {
  return parseOnErrorPolicy(setting, PLAN_ON_ERROR) as ErrorStrategy | undefined;
}
