/**
 * Parsing of a step's `onError` setting.
 *
 * @module
 */
import type { ErrorStrategy, OnErrorSetting } from "./types.ts";

/**
 * Parses an `onError` setting; `undefined` for anything that is not one (the schema reports those).
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
  if (setting === undefined || setting === "fail") return { kind: "fail" };
  if (setting === "continue") return { kind: "continue" };
  if (setting === "recover") return { kind: "recover" };
  if (typeof setting === "string") {
    const retry = /^retry=(\d+)$/.exec(setting);
    return retry ? { kind: "retry", count: Number(retry[1]) } : undefined;
  }
  if (setting === null || typeof setting !== "object") return undefined;
  if ("retry" in setting && typeof setting.retry === "number") {
    const out: ErrorStrategy = { kind: "retry", count: setting.retry };
    if (setting.backoffMs !== undefined) out.backoffMs = setting.backoffMs;
    return out;
  }
  if ("recover" in setting && typeof setting.recover === "number") {
    return { kind: "recover", maxAttempts: setting.recover };
  }
  return undefined;
}
