/**
 * Completion conditions (agent.json `completion`), checked after every iteration that would go on:
 * `count:iteration` ends the run completed after N iterations, `detect:keyword` when a step's
 * answer contains the keyword.
 *
 * @module
 */
import type { CompletionCondition } from "../definition/schema.ts";

/**
 * The condition that ends the run now, described, or undefined.
 *
 * @example
 * ```ts
 * import { completionReached } from "./completion.ts";
 * completionReached([{ type: "count:iteration", maxIterations: 2 }], { iteration: 2, text: "" });
 * // 'count:iteration reached 2 iteration(s)'
 * ```
 */
export function completionReached(
  conditions: readonly CompletionCondition[] | undefined,
  now: { iteration: number; text: string | (() => string) },
): string | undefined {
  let text: string | undefined; // built once, and only when a keyword is looked for
  for (const c of conditions ?? []) {
    if (c.type === "count:iteration") {
      if (now.iteration >= c.maxIterations) {
        return `count:iteration reached ${c.maxIterations} iteration(s)`;
      }
      continue;
    }
    text ??= typeof now.text === "function" ? now.text() : now.text;
    if (text.includes(c.keyword)) return `detect:keyword found "${c.keyword}"`;
  }
  return undefined;
}
