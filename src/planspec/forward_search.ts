/**
 * A search for one string in a text that only moves forward: the parser reads a plan line by line,
 * so the questions it asks ("where is the next `|` after this position?") come with positions that
 * never decrease. The native `indexOf` is several times faster than a `charCodeAt` loop in script,
 * but it cannot stop at the end of a line: on a text whose lines hold no `|`, asking it once per
 * line would scan to the end of the text every time (quadratic). Remembering the last answer
 * keeps every character scanned at most once per needle, whatever the text.
 *
 * @module
 */

/** The next occurrences of `needle` in `text`, for positions that never decrease. */
export class ForwardSearch {
  readonly #text: string;
  readonly #needle: string;
  /** The first occurrence at or after the last position asked (`text.length`: none). */
  #next = -1;

  /** A search for `needle` (not empty) in `text`. */
  constructor(text: string, needle: string) {
    this.#text = text;
    this.#needle = needle;
  }

  /**
   * The first index of the needle at or after `from`, or `text.length` when there is none.
   * `from` must be at least the `from` of the previous call.
   */
  at(from: number): number {
    if (this.#next < from) {
      const found = this.#text.indexOf(this.#needle, from);
      this.#next = found < 0 ? this.#text.length : found;
    }
    return this.#next;
  }
}
