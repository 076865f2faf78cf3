import { assertPlanDepth, PlanTooDeepError } from "./depth.ts";
import { stepLabel } from "./tree.ts";
import { isContainerType, isValidStepType, type PlanSpec, type PlanStep } from "./types.ts";

/**
 * Checks a plan against the six PlanSpec rules and returns the messages (an empty list means the
 * plan is valid). Warnings start with `warn:` and do not make a plan invalid:
 *
 * 1. `plan has no steps` (error)
 * 2. `step 1 (foo): invalid type 'LLM'` (error)
 * 3. `step 2 (bar): duplicate name, first seen at step 1` (error; unnamed steps are skipped)
 * 4. `step 1 (foo): type 'reason' cannot have children` (error)
 * 5. `plan has no goal` (error)
 * 6. `warn: step 1 (foo): type 'subtask' has no children` (warning)
 *
 * Rules 3, 4 and 6 look at every nesting level. Unnamed steps are named `step 1`.
 *
 * @example
 * ```ts
 * import { parsePlan, planErrors, validatePlan } from "./mod.ts";
 * const messages = validatePlan(parsePlan("Goal: g\n1. [subtask] Split the work\n"));
 * console.log(messages); // ["warn: step 1: type 'subtask' has no children"]
 * console.log(planErrors(messages)); // []
 * ```
 */
export function validatePlan(plan: PlanSpec): string[] {
  const errors: string[] = [];
  const warnings: string[] = [];
  if (plan.steps.length === 0) errors.push("plan has no steps");
  try {
    assertPlanDepth(plan.steps);
  } catch (error) {
    if (!(error instanceof PlanTooDeepError)) throw error;
    // Nothing below can be walked safely.
    return [error.message];
  }
  const names = new Map<string, string>();
  check(plan.steps, names, errors, warnings);
  if (plan.goal.trim() === "") errors.push("plan has no goal");
  for (const w of warnings) errors.push(w);
  return errors;
}

function check(
  steps: PlanStep[],
  names: Map<string, string>,
  errors: string[],
  warnings: string[],
): void {
  for (const step of steps) {
    const label = stepLabel(step);
    const validType = isValidStepType(step.stepType);
    if (!validType) errors.push(`${label}: invalid type '${step.stepType}'`);
    if (step.stepName !== "") {
      const first = names.get(step.stepName);
      if (first === undefined) names.set(step.stepName, step.stepId);
      else errors.push(`${label}: duplicate name, first seen at step ${first}`);
    }
    if (validType) {
      const container = isContainerType(step.stepType);
      if (!container && step.children.length > 0) {
        errors.push(`${label}: type '${step.stepType}' cannot have children`);
      }
      if (container && step.children.length === 0) {
        warnings.push(`warn: ${label}: type '${step.stepType}' has no children`);
      }
    }
    if (step.children.length > 0) check(step.children, names, errors, warnings);
  }
}

/** The messages of {@linkcode validatePlan} that are errors (not `warn:` warnings). */
export function planErrors(messages: string[]): string[] {
  return messages.filter((m) => !m.startsWith("warn:"));
}
