/**
 * Turning a step written by a planner, a recovery decision or an edit into a plan `Step`.
 *
 * @module
 */
import type { PlannedStep, Step } from "./types.ts";

/**
 * A pending `Step` from a {@linkcode PlannedStep}. Arguments and dependencies are
 * copied, so the plan never shares objects with the LLM answer or the caller.
 */
export function stepFromNew(newStep: PlannedStep, order: number): Step {
  const step: Step = {
    id: newStep.id,
    order,
    description: newStep.description,
    tool: newStep.tool,
    args: structuredClone(newStep.args ?? {}),
    dependsOn: [...(newStep.dependsOn ?? [])],
    status: "pending",
  };
  if (newStep.onError !== undefined) step.onError = newStep.onError;
  if (newStep.requiresApproval !== undefined) step.requiresApproval = newStep.requiresApproval;
  return step;
}
