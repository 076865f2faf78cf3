/**
 * The routes out of each step, as a graph: used for reachability warnings and by
 * {@linkcode flowToMermaid}.
 *
 * @module
 */
import type { FlowStep } from "./types.ts";

/** Where an edge leads. */
export type EdgeTarget =
  /** To a step. */
  | { step: string }
  /** The run ends completed. */
  | { end: "complete" }
  /** The run ends aborted. */
  | { end: "abort" }
  /** To whatever flow step the output names at `targetField` (a gate `jump`). */
  | { anyStep: string };

/** What kind of route an edge is (drawing style and analysis). */
export type EdgeKind = "route" | "retry" | "fallback" | "error";

/** One route out of a step. */
export interface FlowEdge {
  /** The step the edge leaves. */
  from: string;
  /** Where it leads. */
  to: EdgeTarget;
  /** The label: the intent, `onPass`, `onFail retry`, `onError jump`, … */
  label: string;
  /** The kind of route. */
  kind: EdgeKind;
}

/**
 * Every route out of `step`, in a stable order: check `onPass`/`onFail`, gate intents (in
 * `allowedIntents` order), a closing step's end, then `onError`. Targets are reported as written
 * (validation checks that they exist); sections have no edges.
 *
 * @example
 * ```ts ignore
 * import { stepEdges } from "./edges.ts";
 * stepEdges(definition.steps["s_a8f3"]);
 * // [{ from: "s_a8f3", to: { step: "s_b2c1" }, label: "onPass", kind: "route" }, …]
 * ```
 */
export function stepEdges(step: FlowStep): FlowEdge[] {
  const edges: FlowEdge[] = [];
  const from = step.id;
  const add = (to: EdgeTarget, label: string, kind: EdgeKind = "route") =>
    edges.push({ from, to, label, kind });
  if (step.kind === "section") return edges;

  if (step.kind === "command" || step.kind === "agent") {
    const next = step.transitions.next?.target;
    const label = step.kind === "agent" ? "child completed" : "exit 0";
    add(next !== undefined ? { step: next } : { end: "complete" }, label);
  } else if (step.kind === "closing") {
    add({ end: "complete" }, "end");
  } else if (step.check && !step.gate) {
    const { onPass, onFail } = step.check;
    if ("next" in onPass) add({ step: onPass.next }, "onPass");
    else add({ end: "complete" }, "onPass");
    if ("fallback" in onFail) add({ step: onFail.fallback }, "onFail fallback", "fallback");
    else {
      const max = onFail.maxRetries ? `max ${onFail.maxRetries}` : "unlimited";
      add({ step: from }, `onFail retry (${max})`, "retry");
    }
  } else if (step.gate) {
    for (const intent of step.gate.allowedIntents) {
      const target = step.transitions[intent]?.target;
      switch (intent) {
        case "next":
          if (target !== undefined) add({ step: target }, "next");
          break;
        case "repeat":
          add({ step: from }, "repeat", "retry");
          break;
        case "jump":
          // The model's target (targetField), else the transition's default target.
          if (step.gate.targetField !== undefined) add({ anyStep: step.gate.targetField }, "jump");
          if (target !== undefined) add({ step: target }, "jump (default)");
          break;
        case "complete":
          add(target !== undefined ? { step: target } : { end: "complete" }, "complete");
          break;
        case "abort":
          add({ end: "abort" }, "abort");
          break;
      }
    }
  }

  // An input step's wait limit: the timeout's intent, drawn dashed beside the answer's routes.
  const timeout = step.kind === "input" ? step.waitTimeout : undefined;
  if (timeout) {
    const target = step.transitions[timeout.intent]?.target;
    const label = `wait timeout (${timeout.intent})`;
    if (timeout.intent === "abort") add({ end: "abort" }, label, "fallback");
    else if (timeout.intent === "repeat") add({ step: from }, label, "fallback");
    else if (target !== undefined) add({ step: target }, label, "fallback");
    else if (timeout.intent === "complete") add({ end: "complete" }, label, "fallback");
  }

  const policy = step.onError;
  if (policy.kind === "jump") add({ step: policy.target }, "onError jump", "error");
  else if (policy.kind === "retry") add({ step: from }, `onError retry=${policy.count}`, "error");
  else if (policy.kind === "continue") {
    const next = continueTarget(step);
    if (next) add(next, "onError continue", "error");
  }
  return edges;
}

/** Where `onError: "continue"` leads: the step's `next` route (check `onPass`, gate `next`). */
export function continueTarget(step: FlowStep): EdgeTarget | undefined {
  if (step.kind === "closing") return { end: "complete" };
  if (step.kind === "command" || step.kind === "agent") {
    const next = step.transitions.next?.target;
    return next !== undefined ? { step: next } : { end: "complete" };
  }
  if (step.check && !step.gate) {
    return "next" in step.check.onPass ? { step: step.check.onPass.next } : { end: "complete" };
  }
  const next = step.transitions.next?.target;
  return next !== undefined ? { step: next } : undefined;
}
