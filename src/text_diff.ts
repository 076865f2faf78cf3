/**
 * A short line diff for messages: what changed between two texts, with a little context, bounded
 * in length. Used when a replayed prompt drifted from its recording and by golden prompts.
 *
 * @module
 */

/** Options of {@linkcode shortDiff}. */
export interface ShortDiffOptions {
  /** Unchanged lines shown around each change (default 2). */
  context?: number;
  /** At most this many diff lines (default 20); the rest is counted. */
  maxLines?: number;
}

/** Texts with more lines than this are compared around their first and last difference only. */
const MAX_LCS_LINES = 2_000;

/**
 * The lines that differ between `before` and `after`: `- ` removed, `+ ` added, `  ` context,
 * `…` between distant changes; `""` when the texts are equal.
 *
 * @example
 * ```ts
 * import { shortDiff } from "./text_diff.ts";
 * console.log(shortDiff("a\nb\nc", "a\nB\nc"));
 * //   a
 * // - b
 * // + B
 * //   c
 * ```
 */
export function shortDiff(before: string, after: string, options: ShortDiffOptions = {}): string {
  if (before === after) return "";
  const context = options.context ?? 2;
  const maxLines = options.maxLines ?? 20;
  const a = before.split("\n");
  const b = after.split("\n");
  // Trim the common head and tail: the diff only needs the middle (and it bounds the work).
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head && tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) tail++;
  const ops: string[] = [];
  for (let i = Math.max(0, head - context); i < head; i++) ops.push(`  ${a[i]}`);
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  ops.push(...middleOps(midA, midB, context));
  for (let i = a.length - tail; i < Math.min(a.length, a.length - tail + context); i++) {
    ops.push(`  ${a[i]}`);
  }
  if (ops.length <= maxLines) return ops.join("\n");
  return [...ops.slice(0, maxLines), `… (${ops.length - maxLines} more diff lines)`].join("\n");
}

/** The diff of two texts' differing middles, with long unchanged stretches cut to `…`. */
function middleOps(a: string[], b: string[], context: number): string[] {
  if (a.length > MAX_LCS_LINES || b.length > MAX_LCS_LINES || a.length * b.length > 4e6) {
    return [...a.map((l) => `- ${l}`), ...b.map((l) => `+ ${l}`)];
  }
  // Longest common subsequence table, read back into operations.
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const raw: string[] = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      raw.push(`  ${a[i]}`);
      i++, j++;
    } else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) raw.push(`- ${a[i++]}`);
    else raw.push(`+ ${b[j++]}`);
  }
  // Keep `context` unchanged lines around each change.
  const keep = raw.map(() => false);
  raw.forEach((line, k) => {
    if (line.startsWith("  ")) return;
    for (let d = Math.max(0, k - context); d <= Math.min(raw.length - 1, k + context); d++) {
      keep[d] = true;
    }
  });
  const out: string[] = [];
  raw.forEach((line, k) => {
    if (keep[k]) out.push(line);
    else if (out[out.length - 1] !== "…") out.push("…");
  });
  return out;
}
