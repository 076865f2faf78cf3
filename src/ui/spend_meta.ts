/**
 * The run page's budget parts: the run's budget and what each step spent (its child runs
 * included) in the run's header, and what a run its budget stopped offers instead of Redrive.
 *
 * @module
 */
import { budgetOf, spentBySteps } from "./display_format.ts";
import { type Html, html as h } from "./html.ts";
import { type CommandRenderer, recordedNextStep } from "../invocation.ts";

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
 * with a raised budget), written by `commandFor` as it works where the user stands.
 */
export function budgetStopNote(
  runId: string,
  state: Record<string, unknown> | undefined,
  commandFor: CommandRenderer,
): Html {
  const next = recordedNextStep(state) ?? { action: "resume", runId };
  return h`<span class="note">Stopped by its budget: raise it and carry on inside the step with <code>${
    commandFor(next)
  }</code>.</span>`;
}
