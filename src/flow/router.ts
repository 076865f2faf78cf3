/**
 * The router of gate-routed steps: turns a gate intent into the next step or the end of the run.
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
 * The flow step `id` names, or undefined: an own key of the registry that is not a `section.*`
 * template. Ids come from models, checkpoints and flags, so `constructor` or `__proto__` must be an
 * unknown step like any other name, never a prototype member.
 */
export function flowStep(definition: AgentDefinition, id: string): FlowStep | undefined {
  if (typeof id !== "string" || !Object.hasOwn(definition.steps, id)) return undefined;
  const step = definition.steps[id];
  return step.kind === "section" ? undefined : step;
}

/** The `target` of the step's own transition `name`, never a prototype member. */
function ownTarget(step: FlowStep, name: string): string | undefined {
  return Object.hasOwn(step.transitions, name) ? step.transitions[name].target : undefined;
}

/**
 * Routes `intent` from `step` (docs/runner.md): `repeat` → same step; `jump` → `target` (a flow
 * step; default: `transitions.jump.target`);
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
      // The model's target wins; the transition's `target` is the default when it names none.
      target ??= ownTarget(step, "jump");
      if (!target) {
        return {
          kind: "error",
          message: `[StepFlow] Step "${step.id}" produced intent "jump" but no target at "${
            step.gate?.targetField ?? "(no targetField)"
          }" and declares no transitions.jump.target. Return the target step id there, or add a default target to transitions.jump.`,
        };
      }
      if (!flowStep(definition, target)) {
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
      const closing = ownTarget(step, "complete");
      return closing
        ? { kind: "goto", stepId: closing, transition: "complete" }
        : { kind: "complete" };
    }
    default: {
      const next = ownTarget(step, intent);
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
