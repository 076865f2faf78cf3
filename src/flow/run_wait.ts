/**
 * "The run waits" has one shape: a {@linkcode WaitOutcome}, returned — never thrown — by whatever
 * finds that the run cannot go on until someone answers: an input step (its question), a tool call
 * whose permission ask waits (the tool loop stops at the call and returns it, up through the
 * backend call and the step's handler), an agent step whose child run waits. The loop records a
 * wait the same way whatever it is made of: the request in the run state (checkpointed `waiting`),
 * an `input_request` log line, and the drive ends.
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import type { PermissionAsk } from "../engine/tool_loop.ts";
import type { PendingInput } from "./input_request.ts";
import { permissionPending } from "./permission_wait.ts";

/** One thing a run waits for. */
export type WaitFor =
  /** An input step's question (the step's prompt, resolved). */
  | { kind: "input"; prompt: string }
  /** A tool call whose permission ask waits (`permissionAsks: "wait"`). */
  | { kind: "permission"; ask: PermissionAsk }
  /**
   * An agent step's child run, which waits on `request`; for a fan-out step's child, `item` (its
   * index) and `store` (`agent`: recorded in its agent's own store).
   */
  | { kind: "child"; runId: string; request: PendingInput; item?: number; store?: "agent" };

/**
 * The run waits: the drive stops, and the run is `waiting` until what it waits for is answered.
 * A wait is not an iteration (it adds no history entry; the iteration that goes on from the
 * answer is the step's). `waits` lists what it waits for: one thing, or several children of a
 * fan-out step (each answered on its own).
 */
export interface WaitOutcome {
  /** Tells a wait from the outcomes that move the run. */
  kind: "wait";
  /** What the run waits for: at least one thing. */
  waits: readonly [WaitFor, ...WaitFor[]];
}

/** The wait of a single thing. */
export function waitFor(wait: WaitFor): WaitOutcome {
  return { kind: "wait", waits: [wait] };
}

/** True for a wait (what a backend call returns instead of a response when a tool call waits). */
export function isWait(value: unknown): value is WaitOutcome {
  return typeof value === "object" && value !== null &&
    (value as { kind?: unknown }).kind === "wait" && Array.isArray((value as WaitOutcome).waits);
}

/**
 * The request a run records for `wait` at `step` (its state's `waiting`, answered by
 * `StepFlowRunner.answer`): an input step's question with a new request id (and when it passes,
 * for a step with `waitTimeout`); a permission ask's request; a child run's own request, answered
 * through this run's agent step.
 */
export function pendingRequest(wait: WaitFor, step: FlowStep, now: Date): PendingInput {
  if (wait.kind === "permission") return permissionPending(wait.ask, now);
  if (wait.kind === "child") {
    const request = wait.request;
    return {
      ...request,
      stepId: step.id,
      child: {
        runId: wait.runId,
        stepId: request.child?.stepId ?? request.stepId,
        agentDir: request.child?.agentDir ?? step.child!.dir,
        ...(wait.item !== undefined ? { item: wait.item } : {}),
        ...(wait.store ? { store: wait.store } : {}),
      },
    };
  }
  const pending: PendingInput = {
    requestId: crypto.randomUUID(),
    stepId: step.id,
    prompt: wait.prompt,
    schemaRef: step.outputSchemaRef!,
    requestedAt: now.toISOString(),
  };
  if (step.waitTimeout) {
    pending.expiresAt = new Date(now.getTime() + step.waitTimeout.ms).toISOString();
    pending.timeoutIntent = step.waitTimeout.intent;
  }
  return pending;
}
