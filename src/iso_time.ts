/**
 * ISO 8601 timestamps for what a run records many times a millisecond. Formatting a `Date` costs
 * about a microsecond; a recorded iteration stamps its history entry, two log lines and a
 * checkpoint, and a fast loop makes dozens of iterations per millisecond — so the text of the
 * millisecond formatted last is kept and given again while the clock has not moved.
 *
 * @module
 */

let lastMs = Number.NaN;
let lastText = "";

/**
 * `new Date(ms).toISOString()`, with the text of the last millisecond asked remembered.
 *
 * @param ms milliseconds since the epoch (default: now)
 *
 * @example
 * ```ts
 * import { isoTime } from "./iso_time.ts";
 * console.log(isoTime(0)); // "1970-01-01T00:00:00.000Z"
 * ```
 */
export function isoTime(ms: number = Date.now()): string {
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastText;
}
