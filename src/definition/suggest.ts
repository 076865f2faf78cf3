/**
 * "Did you mean …?" suggestions for misspelt keys and step ids.
 *
 * @module
 */

/**
 * The candidate closest to `word` by case-insensitive edit distance (a swap of two neighbouring
 * letters counts as one edit), when it is close enough to be a likely typo: one edit for words of
 * 3–9 characters, two for longer ones, none for words of one or two characters. Anything farther is
 * more likely a different word than a typo — `stepKind` is not a misspelt `stepId` — and a wrong
 * suggestion misleads more than none.
 *
 * @example
 * ```ts
 * import { closestMatch } from "./suggest.ts";
 * closestMatch("nxt", ["next", "complete"]); // "next"
 * closestMatch("compelte", ["next", "complete"]); // "complete"
 * closestMatch("stepKind", ["stepId", "name"]); // undefined
 * ```
 */
export function closestMatch(word: string, candidates: Iterable<string>): string | undefined {
  const limit = typoLimit(word);
  if (limit === 0) return undefined;
  let best: string | undefined;
  let bestDistance = Infinity;
  const lower = word.toLowerCase();
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

/** The edits a typo of `word` may have: 0 (too short to tell), 1, or 2 for words of 10+ characters. */
function typoLimit(word: string): number {
  return word.length <= 2 ? 0 : word.length < 10 ? 1 : 2;
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions, adjacent swaps. */
function editDistance(a: string, b: string): number {
  let before = Array.from({ length: b.length + 1 }, () => 0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, before[j - 2] + 1);
      }
      current.push(d);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length];
}
