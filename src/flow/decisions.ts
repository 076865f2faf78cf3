/**
 * What the runner does after a response, as pure functions over data: a check verdict, a gate
 * reading, a schema strike, a completion condition or an execution failure in, an {@linkcode Outcome}
 * out (go to a step, or end the run and why). Nothing here calls a backend, emits an event, writes
 * a log or touches the run state: the loop in `flow_run.ts` does that with what these return, so every
 * rule of docs/runner.md ("How one iteration runs", "Error policies") can be tested on plain
 * values.
 *
 * @module
 */
import type { WaitOutcome } from "./run_wait.ts";
import type { CompletionCondition, GateIntent } from "../definition/schema.ts";
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import type { CheckVerdict } from "./check.ts";
import { completionReached } from "./completion.ts";
import { interpretGate } from "./gate.ts";
import { routeTransition } from "./router.ts";
import type { CompletionReason, DeclinedAnswer, Transition } from "./types.ts";
import type { ValidatorRun } from "./validators.ts";

/** The run error of an outcome that ends the run unsuccessfully. */
export interface StepError {
  /** Stable code (`STEP_ROUTING_FAILED`, `RETRIES_EXHAUSTED`, …). */
  code: string;
  /** What went wrong and how to fix it. */
  message: string;
  /** The step it happened at. */
  stepId?: string;
  /**
   * Facts about it as data; `next` is the step that carries the run on (a `NextStep`:
   * `{ action: "resume", runId, args }` for a run its budget stopped), which the CLI prints as a
   * command line and the dashboard as a command.
   */
  details?: Record<string, unknown>;
}

/**
 * What one iteration decided: run a step next, end the run, or wait ({@linkcode WaitOutcome}: the
 * drive stops until what the run waits for is answered — a wait is not an iteration: it records
 * no history entry, and the iteration that goes on from the answer is the step's).
 */
export type Outcome =
  | { kind: "goto"; stepId: string; transition: Transition }
  | {
    kind: "end";
    reason: CompletionReason;
    transition: Transition;
    output?: unknown;
    error?: StepError;
    /** A person's decision that ended the run (reason `declined`). */
    declined?: DeclinedAnswer;
  }
  | WaitOutcome;

/** An outcome that moves the run (everything but a wait). */
export type MovingOutcome = Exclude<Outcome, { kind: "wait" }>;

/** Configuration errors: `onError` never applies to them (docs/runner.md, "Error policies"). */
const CONFIGURATION_CODES: ReadonlySet<string> = new Set([
  "PROMPT_NOT_FOUND",
  "PROMPT_PATH_INVALID",
  "PROMPT_VARIABLES_MISSING",
  "PROMPT_FRONTMATTER_INVALID",
  // A replay that no longer matches its recording: no onError policy can make it match.
  "REPLAY_PROMPT_CHANGED",
  "REPLAY_STEP_UNKNOWN",
  "REPLAY_EXHAUSTED",
]);

/** The check counters of the current visit of a check-gated step (kept in the run state). */
export interface CheckCounters {
  /** Runs of the step in its current check attempt (iterations.min/max). */
  checkRuns: number;
  /** `onFail.retry` retries used in this visit. */
  checkRetries: number;
  /** NG verdicts in this visit (absent in checkpoints written before it was counted). */
  checkFailures?: number;
}

/**
 * The routing of a check-gated step's verdict: OK → `onPass`; NG → the step runs again while it has
 * run fewer than `iterations.max` times, then `onFail` (`fallback`, or `retry` within `maxRetries`,
 * 0 = unlimited), then `retries_exhausted`. Returns the outcome and the counters to keep.
 *
 * @example
 * ```ts ignore
 * checkOutcome(step, { checkRuns: 1, checkRetries: 0, checkFailures: 0 }, { result: "ok", message: "" });
 * // { outcome: { kind: "goto", stepId: "review", transition: "next" }, counters: { … } }
 * ```
 */
export function checkOutcome(
  step: FlowStep,
  counters: Readonly<CheckCounters>,
  verdict: CheckVerdict,
): { outcome: MovingOutcome; counters: Required<CheckCounters> } {
  const check = step.check!;
  const next = {
    checkRuns: counters.checkRuns,
    checkRetries: counters.checkRetries,
    checkFailures: counters.checkFailures ?? 0,
  };
  if (verdict.result === "ng") next.checkFailures++;
  const decided = (outcome: MovingOutcome) => ({ outcome, counters: next });
  if (verdict.result === "ok") {
    return decided(
      "next" in check.onPass
        ? { kind: "goto", stepId: check.onPass.next, transition: "next" }
        : { kind: "end", reason: "completed", transition: "complete" },
    );
  }
  if (next.checkRuns < step.iterations.max) {
    return decided({ kind: "goto", stepId: step.id, transition: "repeat" });
  }
  if ("fallback" in check.onFail) {
    return decided({ kind: "goto", stepId: check.onFail.fallback, transition: "fallback" });
  }
  const maxRetries = check.onFail.maxRetries ?? 0;
  if (maxRetries === 0 || next.checkRetries < maxRetries) {
    next.checkRetries++;
    next.checkRuns = 0;
    return decided({ kind: "goto", stepId: step.id, transition: "retry" });
  }
  return decided({
    kind: "end",
    reason: "retries_exhausted",
    transition: "fail",
    error: {
      code: "RETRIES_EXHAUSTED",
      message: `[StepFlow] Step "${step.id}" failed ${plural(next.checkFailures, "check")} over ${
        plural(maxRetries + 1, "attempt")
      } (onFail.maxRetries ${maxRetries}, iterations.max ${step.iterations.max}). Last check: ${verdict.message}`,
      stepId: step.id,
    },
  });
}

/** What a structured gate decided about one output; see {@linkcode gateOutcome}. */
export interface GateDecision {
  /** The outcome. */
  outcome: MovingOutcome;
  /** Handoff values to store under the step (last path segment → value). */
  handoff: Record<string, unknown>;
  /** The intent to record in history (absent when routing failed before one was settled). */
  intent?: GateIntent;
  /** Set when a disallowed intent was replaced by `fallbackIntent`: the warning to give. */
  warning?: string;
}

/**
 * The routing of a gate-routed step's validated output: read the intent (mapped; not allowed →
 * `fallbackIntent` or `step_routing_failed`; none from iteration 2 on → R4 `step_routing_failed`)
 * and the handoff, then route: closing step → completed with the output; `complete` → the closing
 * step or completed; `abort` → aborted; others through `transitions`.
 *
 * @example
 * ```ts ignore
 * gateOutcome(definition, step, { next_action: { action: "repeat" } }, 2).outcome;
 * // { kind: "goto", stepId: "initial.issue", transition: "repeat" }
 * ```
 */
export function gateOutcome(
  definition: AgentDefinition,
  step: FlowStep,
  output: unknown,
  iteration: number,
): GateDecision {
  const gate = step.gate;
  const reading = gate
    ? interpretGate(output, gate)
    : { handoff: {} } as ReturnType<typeof interpretGate>;
  const handoff = reading.handoff;
  if (step.kind === "closing") {
    return {
      outcome: { kind: "end", reason: "completed", transition: "complete", output },
      handoff,
      ...(reading.intent ? { intent: reading.intent } : {}),
    };
  }
  const routingFailed = (message: string): GateDecision => ({
    outcome: {
      kind: "end",
      reason: "step_routing_failed",
      transition: "fail",
      error: { code: "STEP_ROUTING_FAILED", message, stepId: step.id },
    },
    handoff,
  });

  let intent: GateIntent | undefined = reading.intent;
  let warning: string | undefined;
  if (intent === undefined && reading.unknownIntent === undefined) {
    // R4: from iteration 2 on, no intent ends the run.
    if (iteration > 1 || !gate!.fallbackIntent) {
      return routingFailed(
        `[StepFlow] No intent produced for iteration ${iteration} on step "${step.id}".\nFlow steps must produce structured output with a valid intent.\nCheck that the step's schema includes ${
          gate!.intentField
        } and the LLM returns valid JSON.`,
      );
    }
    intent = gate!.fallbackIntent;
  } else if (intent === undefined || !gate!.allowedIntents.includes(intent)) {
    const shown = intent ?? reading.unknownIntent;
    if (!gate!.fallbackIntent) {
      return routingFailed(
        `[StepFlow] Step "${step.id}" produced intent "${shown}", which is not in allowedIntents (${
          gate!.allowedIntents.join(", ")
        }) and the step declares no fallbackIntent.`,
      );
    }
    warning = `step "${step.id}" produced intent "${shown}" (not allowed); using fallbackIntent "${
      gate!.fallbackIntent
    }"`;
    intent = gate!.fallbackIntent;
  }

  const decided = (outcome: MovingOutcome): GateDecision => ({
    outcome,
    handoff,
    intent,
    ...(warning !== undefined ? { warning } : {}),
  });
  const route = routeTransition(definition, step, intent, reading.target);
  switch (route.kind) {
    case "goto":
      return decided(route);
    case "complete":
      return decided({ kind: "end", reason: "completed", transition: "complete", output });
    case "abort":
      return decided({
        kind: "end",
        reason: "aborted",
        transition: "abort",
        error: {
          code: "ABORT_INTENT",
          message: `[StepFlow] Step "${step.id}" asked to abort (intent "abort").`,
          stepId: step.id,
        },
      });
    case "error":
      return decided(routingFailed(route.message).outcome);
  }
}

/**
 * Completion conditions (agent.json `completion`) end a run that would go on: the outcome to take
 * and, when a condition was met, which one (for the warning). `text` is called only when a
 * `detect:keyword` condition needs the answer.
 */
export function completionOutcome(
  conditions: readonly CompletionCondition[] | undefined,
  outcome: MovingOutcome,
  iteration: number,
  text: () => string,
): { outcome: MovingOutcome; met?: string } {
  if (outcome.kind !== "goto" || !conditions) return { outcome };
  const met = completionReached(conditions, { iteration, text });
  if (!met) return { outcome };
  return { outcome: { kind: "end", reason: "completed", transition: "complete" }, met };
}

/**
 * Two-strike rule: the first consecutive schema-resolution failure on a step (`strikes` 1) tries the
 * step again; the second ends the run `schema_resolution_failed`, naming pointer and file.
 */
export function schemaStrikeOutcome(
  step: FlowStep,
  strikes: number,
  message: string,
): MovingOutcome {
  if (strikes < 2) return { kind: "goto", stepId: step.id, transition: "retry" };
  const ref = step.outputSchemaRef!;
  return {
    kind: "end",
    reason: "schema_resolution_failed",
    transition: "fail",
    error: {
      code: "FAILED_SCHEMA_RESOLUTION",
      message:
        `[StepFlow] Schema resolution failed twice in a row on step "${step.id}": pointer ${ref.schema} in schemas/${ref.file}. ${message}`,
      stepId: step.id,
    },
  };
}

/**
 * The step's `onError` policy applied to an execution failure (docs/runner.md, "Error policies"):
 * `fail` (and every configuration error) → `step_failed`; `continue` → the `next` route (check:
 * `onPass`; gate:
 * `transitions.next`); `retry=N` → the same step with transition `retry` while `errorRetries` < N;
 * `jump` → that step with transition `jump`.
 */
export function failureOutcome(
  step: FlowStep,
  failure: { code: string; message: string },
  errorRetries: number,
): MovingOutcome {
  const failed = (suffix = ""): MovingOutcome => ({
    kind: "end",
    reason: "step_failed",
    transition: "fail",
    error: {
      code: failure.code,
      message: stepFailureMessage(step.id, failure.message) + suffix,
      stepId: step.id,
    },
  });
  if (CONFIGURATION_CODES.has(failure.code)) return failed();
  const policy = step.onError;
  switch (policy.kind) {
    case "fail":
      return failed();
    case "continue": {
      if (step.kind === "check") {
        const onPass = step.check!.onPass;
        return "next" in onPass
          ? { kind: "goto", stepId: onPass.next, transition: "continue" }
          : { kind: "end", reason: "completed", transition: "continue" };
      }
      const next = step.transitions.next?.target;
      return next ? { kind: "goto", stepId: next, transition: "continue" } : failed();
    }
    case "retry":
      if (errorRetries >= policy.count) {
        return failed(` (gave up after ${policy.count} retr${policy.count === 1 ? "y" : "ies"})`);
      }
      return { kind: "goto", stepId: step.id, transition: "retry" };
    case "jump":
      return { kind: "goto", stepId: policy.target, transition: "jump" };
  }
}

/** The failed validation the next iteration's retry prompt reports (kept in the run state). */
export interface ValidationRetry {
  /** The step that failed validation. */
  stepId: string;
  /** The failing validator's command. */
  command: string;
  /** Its output (the last 20,000 characters). */
  output: string;
  /** The failure pattern that selects the retry prompt. */
  pattern?: string;
}

/**
 * After a failed step validator: run the step again with a retry prompt while fewer than
 * `validation.maxRetries` retries were used, else fail the step. `used` is the retries used so far.
 */
export function validationOutcome(
  step: FlowStep,
  failure: ValidatorRun,
  used: number,
  maxRetries: number,
):
  | { kind: "retry"; retry: ValidationRetry; message: string }
  | { kind: "fail"; message: string } {
  const summary = `validator "${failure.command}" failed (${failure.reason}${
    failure.pattern ? `, pattern ${failure.pattern}` : ""
  })`;
  if (used >= maxRetries) {
    return {
      kind: "fail",
      message: `Step "${step.id}": ${summary} after ${used} retr${
        used === 1 ? "y" : "ies"
      } (validation.maxRetries ${maxRetries}). Last output:\n${failure.output.slice(-2000)}`,
    };
  }
  return {
    kind: "retry",
    retry: {
      stepId: step.id,
      command: failure.command,
      output: failure.output.slice(-20_000),
      ...(failure.pattern !== undefined ? { pattern: failure.pattern } : {}),
    },
    message: `Step "${step.id}": ${summary}`,
  };
}

/** The run error when `maxTotalIterations` is reached. */
export function maxIterationsError(maxIterations: number, stepId: string): StepError {
  return {
    code: "MAX_ITERATIONS",
    message:
      `[StepFlow] The run reached maxTotalIterations (${maxIterations}) at step "${stepId}". Raise limits.maxTotalIterations (or --max-iterations) if the flow needs more.`,
    stepId,
  };
}

/**
 * The run error's message for a failed step: the error's own message when it already names the step
 * (`Step "x" output does not match …`, `Backend call of step "x" timed out …`, `Prompt file not
 * found: … (step "x")`), else `Step "x" failed: <message>` — so the step is named exactly once.
 */
export function stepFailureMessage(stepId: string, message: string): string {
  return message.includes(`"${stepId}"`) ? message : `Step "${stepId}" failed: ${message}`;
}

/** `1 check`, `9 checks`. */
function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
