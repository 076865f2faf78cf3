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

/** What a cost is known of: the known part, the calls, the calls whose cost is unknown. */
export interface CostCounts {
  /** Cost in US dollars of the calls whose cost is known. */
  costUsd?: number;
  /** Calls (undefined: not counted; the cost is then shown as it is). */
  calls?: number;
  /** Calls whose cost is unknown (no usage, or no price for the model). */
  callsWithoutCost?: number;
}

/**
 * A cost as every surface writes it: `$0.0123`, `cost unknown` when no call could be priced,
 * `$0.0123 + unknown for 2 calls` when some could not — never `$0` for calls of unknown cost.
 * Empty when there is nothing to say (no calls, or a known cost of 0).
 *
 * @example
 * ```ts
 * import { formatCost } from "./token_counts.ts";
 * console.log(formatCost({ costUsd: 0.0123, calls: 3 })); // "$0.0123"
 * console.log(formatCost({ costUsd: 0, calls: 2, callsWithoutCost: 2 })); // "cost unknown"
 * console.log(formatCost({ costUsd: 0.5, calls: 3, callsWithoutCost: 1 })); // "$0.5000 + unknown for 1 call"
 * ```
 */
export function formatCost(cost: CostCounts): string {
  const unknown = cost.callsWithoutCost ?? 0;
  const known = cost.costUsd ?? 0;
  if (cost.calls !== undefined && cost.calls > 0 && unknown >= cost.calls) return "cost unknown";
  // A known cost of 0 is left out (a free model, or a record older than the unknown-cost count).
  const amount = known > 0 ? `$${known.toFixed(4)}` : "";
  if (unknown === 0) return amount;
  const rest = `unknown for ${unknown} call${unknown === 1 ? "" : "s"}`;
  return amount ? `${amount} + ${rest}` : `cost ${rest}`;
}

/**
 * A cost as JSON shows it: the dollars when every call was priced, `null` when none was (unknown,
 * never 0), the known part otherwise (with `callsWithoutCost` beside it saying it is a lower bound).
 */
export function costOrNull(cost: CostCounts): number | null {
  const unknown = cost.callsWithoutCost ?? 0;
  if (cost.calls !== undefined && cost.calls > 0 && unknown >= cost.calls) return null;
  return cost.costUsd ?? 0;
}
