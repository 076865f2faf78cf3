/**
 * Steps an earlier run left `running` (the process stopped before their outcome was saved) and
 * what a new run does with them: run them again when that is safe or allowed, otherwise refuse
 * with `PLAN_STEP_INTERRUPTED` before anything runs.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { Plan, PlanToolRegistry, Step } from "./types.ts";

/**
 * The steps an earlier run left `running`: started (the tool may have done its work) but no
 * outcome saved, because the process was killed or crashed. Idempotent tools included.
 *
 * @example
 * ```ts ignore
 * const left = interruptedSteps(plan, tools).filter((s) => !tools.descriptor(s.tool)?.idempotent);
 * ```
 */
export function interruptedSteps(plan: Plan): Step[] {
  return plan.steps.filter((s) => s.status === "running");
}

/**
 * The `PLAN_STEP_INTERRUPTED` error for interrupted steps whose tools are not idempotent: names
 * each step and tool and says how to go on.
 */
export function interruptedError(steps: readonly Step[]): StepflowError {
  const list = steps.map((s) => `"${s.id}" (${s.tool})`).join(", ");
  const one = steps.length === 1;
  return new StepflowError(
    "PLAN_STEP_INTERRUPTED",
    `Step ${list} ${
      one ? "was" : "were"
    } running when an earlier run stopped (killed or crashed) before the outcome was saved: the tool may have done its work already, and ${
      one ? `${steps[0].tool} is` : "these tools are"
    } not declared idempotent, so running again could repeat the effect. Check the effect, then re-run anyway (CLI: --yes; API: rerunInterrupted), or set the step's status in the plan file to "completed" (keep the effect) or "pending" (run it again).`,
    { details: { steps: steps.map((s) => ({ id: s.id, tool: s.tool })) } },
  );
}

/**
 * The interrupted steps of `plan` that run again, each with the note logged when the run starts:
 * those whose tool is idempotent, and the others when `allowed` is `true` or lists their ids.
 *
 * @throws StepflowError `PLAN_STEP_INTERRUPTED` naming every interrupted step that may not run again
 */
export function interruptedReruns(
  plan: Plan,
  tools: PlanToolRegistry,
  allowed: boolean | readonly string[],
): Map<string, string> {
  const reruns = new Map<string, string>();
  const refused: Step[] = [];
  for (const step of interruptedSteps(plan)) {
    const note =
      `was running when an earlier run stopped (its outcome was not saved): running it again`;
    if (tools.descriptor(step.tool)?.idempotent === true) {
      reruns.set(step.id, `${note} (${step.tool} is idempotent)`);
    } else if (allowed === true || (Array.isArray(allowed) && allowed.includes(step.id))) {
      reruns.set(
        step.id,
        `${note} although ${step.tool} is not idempotent: its effect may happen twice (re-run allowed)`,
      );
    } else refused.push(step);
  }
  if (refused.length > 0) throw interruptedError(refused);
  return reruns;
}
