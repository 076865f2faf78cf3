/**
 * The router (seed 004 `WorkflowRouter`): turns a gate intent into the next step or the end of the run.
 *
 * @module
 */
import type { GateIntent } from "../definition/schema.ts";
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import type { Transition } from "./types.ts";

/** Where an intent leads. */
export type Route =
  | { kind: "goto"; stepId: string; transition: Transition }
  | { kind: "complete" }
  | { kind: "abort" }
  | { kind: "error"; message: string };

/**
 * Routes `intent` from `step` (STEPFLOW.md §5): `repeat` → same step; `jump` → `target` (a flow step);
 * `abort` → end aborted; `complete` → the `complete` transition's closing step, else end completed;
 * any other intent → `transitions[intent].target`.
 *
 * @example
 * ```ts ignore
 * routeTransition(definition, step, "next"); // { kind: "goto", stepId: "continuation.issue", transition: "next" }
 * ```
 */
export function routeTransition(
  definition: AgentDefinition,
  step: FlowStep,
  intent: GateIntent,
  target?: string,
): Route {
  switch (intent) {
    case "repeat":
      return { kind: "goto", stepId: step.id, transition: "repeat" };
    case "abort":
      return { kind: "abort" };
    case "jump": {
      if (!target) {
        return {
          kind: "error",
          message: `[StepFlow] Step "${step.id}" produced intent "jump" but no target at "${
            step.gate?.targetField ?? "(no targetField)"
          }". Return the target step id there.`,
        };
      }
      const dest = definition.steps[target];
      if (!dest || dest.kind === "section") {
        return {
          kind: "error",
          message:
            `[StepFlow] Step "${step.id}" tried to jump to "${target}", which is not a flow step. Known steps: ${
              Object.values(definition.steps).filter((s) => s.kind !== "section").map((s) => s.id)
                .join(", ")
            }.`,
        };
      }
      return { kind: "goto", stepId: target, transition: "jump" };
    }
    case "complete": {
      const closing = step.transitions.complete?.target;
      return closing
        ? { kind: "goto", stepId: closing, transition: "complete" }
        : { kind: "complete" };
    }
    default: {
      const next = step.transitions[intent]?.target;
      if (!next) {
        return {
          kind: "error",
          message:
            `[StepFlow] Step "${step.id}" produced intent "${intent}" but declares no transitions.${intent}. Add it to the step's transitions.`,
        };
      }
      return { kind: "goto", stepId: next, transition: intent };
    }
  }
}
