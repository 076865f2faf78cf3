/**
 * "Did you mean …?" suggestions for misspelt keys and step ids.
 *
 * @module
 */

/**
 * The candidate closest to `word` by case-insensitive edit distance, when it is close enough to be
 * a likely typo (distance ≤ 1 for words of up to 4 characters, ≤ 2 otherwise).
 *
 * @example
 * ```ts
 * import { closestMatch } from "./suggest.ts";
 * closestMatch("nxt", ["next", "complete"]); // "next"
 * closestMatch("zzz", ["next", "complete"]); // undefined
 * ```
 */
export function closestMatch(word: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const lower = word.toLowerCase();
  const limit = word.length <= 4 ? 1 : 2;
  for (const candidate of candidates) {
    // Cheap length filter first: a registry may hold thousands of step ids.
    if (Math.abs(candidate.length - word.length) > limit) continue;
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length];
}
