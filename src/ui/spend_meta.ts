/**
 * The run page's budget parts: the run's budget and what each step spent (its child runs
 * included) in the run's header, and what a run its budget stopped offers instead of Redrive.
 *
 * @module
 */
import { budgetOf, cost, spentBySteps } from "./display_format.ts";
import { type Html, html as h } from "./html.ts";

/** The run's budget and its spend by step, as header rows (nothing when neither is known). */
export function spendMeta(state: Record<string, unknown> | undefined): Html {
  const budget = budgetOf(state);
  const bySteps = spentBySteps(state);
  return h`${budget ? h`<div><span>Budget</span>${budget}</div>` : ""}${
    bySteps ? h`<div class="wide"><span>Spent by step</span>${bySteps}</div>` : ""
  }`;
}

/**
 * A run its budget stopped has not failed (no Redrive): it goes on, inside the step it stopped in,
 * with a higher budget — the command that does it.
 */
export function budgetStopNote(agent: string | undefined, runId: string): Html {
  return h`<span class="note">Stopped by its budget: raise it and carry on inside the step with <code>run-agent --agent ${
    agent ?? "NAME"
  } --resume ${runId} --budget-usd USD</code>.</span>`;
}

/** An iteration's model calls: `step gpt-4o $0.0100 · reask gpt-4o cost unknown`. */
export function modelCallsText(
  calls: readonly {
    kind: string;
    model?: string;
    costUsd: number | null;
    estimatedUsd?: number;
  }[],
): string {
  return calls.map((c) =>
    `${c.kind}${c.model ? ` ${c.model}` : ""} ${
      c.estimatedUsd !== undefined
        ? `cut off (up to ${cost(c.estimatedUsd)})`
        : c.costUsd === null
        ? "cost unknown"
        : cost(c.costUsd) || "$0"
    }`
  ).join(" · ");
}
