/**
 * Linear scans over Unicode character classes that never overflow the stack.
 *
 * An unbounded `+` / `*` over a `\p{…}` class makes V8's regexp engine overflow on multi-megabyte
 * runs (`/^[\p{L}]+$/u` throws "Maximum call stack size exceeded" on 6.5 M CJK characters). Text
 * that users or models write — names, titles, tokens — goes through these helpers instead: they
 * match in bounded chunks, so any length works in linear time.
 *
 * @module
 */

const CHUNK = 1024;
const chunkers = new Map<string, RegExp>();

/**
 * The end of the run of characters of `charClass` that starts at `start` in `text` (`start` when
 * none starts there). `charClass` is the source of a bracketed class, e.g. `"[\\p{L}\\p{N}_]"`.
 *
 * @example
 * ```ts
 * import { spanEnd } from "./unicode_span.ts";
 * console.log(spanEnd("漢字 x", 0, "[\\p{L}]")); // 2
 * ```
 */
export function spanEnd(text: string, start: number, charClass: string): number {
  let chunk = chunkers.get(charClass);
  if (!chunk) {
    chunk = new RegExp(`${charClass}{1,${CHUNK}}`, "uy");
    chunkers.set(charClass, chunk);
  }
  let end = start;
  for (;;) {
    chunk.lastIndex = end;
    if (!chunk.test(text)) return end;
    end = chunk.lastIndex;
  }
}

/**
 * True when `text` is one character of `first` followed by characters of `rest` only (at any
 * length). With `first` undefined every character must be of `rest`, and `text` non-empty.
 *
 * @example
 * ```ts
 * import { isSpanOf } from "./unicode_span.ts";
 * console.log(isSpanOf("_名前1", "[\\p{L}\\p{N}_]", "[\\p{L}_]")); // true
 * ```
 */
export function isSpanOf(text: string, rest: string, first?: string): boolean {
  if (text.length === 0) return false;
  let start = 0;
  if (first !== undefined) {
    start = spanEnd(text, 0, first);
    if (start === 0) return false;
    // One character only: an astral letter is two code units.
    start = text.codePointAt(0)! > 0xffff ? 2 : 1;
  }
  return spanEnd(text, start, rest) === text.length;
}
