/**
 * The run page's budget parts: the run's budget and what each step spent (its child runs
 * included) in the run's header, and what a run its budget stopped offers instead of Redrive.
 *
 * @module
 */
import { budgetOf, cost, spentBySteps } from "./display_format.ts";
import { type Html, html as h } from "./html.ts";
import { type CommandRenderer, plainCommandLine, recordedNextStep } from "../invocation.ts";

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
 * with a higher budget — the command that does it (the next step its end recorded: the resume
 * with a raised budget), written by `commandFor` as it works where the user stands (default:
 * `stepflow resume …`).
 */
export function budgetStopNote(
  runId: string,
  state: Record<string, unknown> | undefined,
  commandFor: CommandRenderer = plainCommandLine,
): Html {
  const next = recordedNextStep(state) ?? { action: "resume", runId };
  return h`<span class="note">Stopped by its budget: raise it and carry on inside the step with <code>${
    commandFor(next)
  }</code>.</span>`;
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
