/**
 * Adding token usages up: one rule for the tool loop (the turns of a step) and the runner (the
 * calls of a run), so the prompt-cache counts travel with the token counts everywhere.
 *
 * @module
 */

/** Token counts that can be added up (a call's `LlmUsage` or a run's usage totals). */
export interface TokenCounts {
  /** Prompt tokens, cache reads and writes included. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache. */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache. */
  cacheWriteTokens?: number;
}

/**
 * Adds `usage` to `total` in place. The cache counts appear on `total` only once some usage
 * reported them, so a run on a backend without a prompt cache shows none.
 *
 * @example
 * ```ts
 * import { addTokenCounts } from "./token_counts.ts";
 * const total = { inputTokens: 0, outputTokens: 0 };
 * addTokenCounts(total, { inputTokens: 1200, outputTokens: 30, cacheReadTokens: 1000 });
 * console.log(total); // { inputTokens: 1200, outputTokens: 30, cacheReadTokens: 1000 }
 * ```
 */
export function addTokenCounts(total: TokenCounts, usage: Readonly<TokenCounts>): void {
  total.inputTokens += usage.inputTokens;
  total.outputTokens += usage.outputTokens;
  if (usage.cacheReadTokens) {
    total.cacheReadTokens = (total.cacheReadTokens ?? 0) + usage.cacheReadTokens;
  }
  if (usage.cacheWriteTokens) {
    total.cacheWriteTokens = (total.cacheWriteTokens ?? 0) + usage.cacheWriteTokens;
  }
}

/**
 * `900 cache read, 100 cache write` for the counts that are above 0 (empty when none is): how a
 * prompt-cache share of the input tokens is written on every surface.
 *
 * @example
 * ```ts
 * import { cacheShare } from "./token_counts.ts";
 * console.log(cacheShare({ cacheReadTokens: 9000, cacheWriteTokens: 0 }, String)); // "9000 cache read"
 * ```
 */
export function cacheShare(
  usage: { cacheReadTokens?: number; cacheWriteTokens?: number },
  count: (n: number) => string,
): string {
  const parts: string[] = [];
  if (usage.cacheReadTokens) parts.push(`${count(usage.cacheReadTokens)} cache read`);
  if (usage.cacheWriteTokens) parts.push(`${count(usage.cacheWriteTokens)} cache write`);
  return parts.join(", ");
}
