/**
 * Small text helpers of the progress lines: counts with thousands separators, first lines.
 *
 * @module
 */

/** `1234567` → `"1,234,567"`. */
export function formatCount(n: number): string {
  return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** The first line of `text`, with ` …` when more lines follow. */
export function firstLine(text: string): string {
  const i = text.indexOf("\n");
  return i < 0 ? text : `${text.slice(0, i)} …`;
}
