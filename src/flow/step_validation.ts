/**
 * Step validators (`validation` in the step) after a gate-routed step's answer: every validator
 * passes → the step's outcome stands; a failure sends the step round again with a retry prompt
 * while `validation.maxRetries` allows (`validationOutcome`), then fails the step.
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import { type Outcome, validationOutcome } from "./decisions.ts";
import type { RunnerState } from "./run_state.ts";
import type { StepDependencies } from "./step_handler.ts";
import type { HistoryEntry } from "./types.ts";
import { DEFAULT_VALIDATION_RETRIES, runStepValidators } from "./validators.ts";

/** What validating a step's answer gave: the outcome or the error, and one entry per validator run. */
export type StepValidation =
  & { entries: HistoryEntry[] }
  & ({ outcome: Outcome; error?: never } | { error: StepflowError; outcome?: never });

/** Runs the step's validators (unless `skipValidators`) and decides what becomes of `outcome`. */
export async function validateStep(
  step: FlowStep,
  state: RunnerState,
  outcome: Outcome,
  deps: StepDependencies,
): Promise<StepValidation> {
  const validation = step.validation!;
  if (deps.options.skipValidators) {
    deps.warn(
      `step "${step.id}": ${validation.validators.length} validator(s) skipped (skipValidators / --skip-validators)`,
    );
    return { outcome, entries: [] };
  }
  const { runs, failure } = await runStepValidators(validation, deps.commandContext());
  const entries = runs.map((run): HistoryEntry => {
    const entry: HistoryEntry = {
      stepId: step.id,
      iteration: state.iteration,
      attempt: state.attempt,
      transition: run.ok ? "next" : "retry",
      startedAt: run.startedAt,
      durationMs: run.durationMs,
      validation: { command: run.command, exitCode: run.exitCode, ok: run.ok },
    };
    if (run.pattern !== undefined) entry.validation!.pattern = run.pattern;
    if (!run.ok) entry.error = `validator "${run.command}" failed (${run.reason})`;
    return entry;
  });
  if (!failure) {
    state.validationRetries = 0;
    delete state.validationRetry;
    return { outcome, entries };
  }
  const used = state.validationRetries ?? 0;
  const max = validation.maxRetries ?? DEFAULT_VALIDATION_RETRIES;
  const decided = validationOutcome(step, failure, used, max);
  if (decided.kind === "fail") {
    const error = new StepflowError("VALIDATION_FAILED", decided.message, {
      details: { stepId: step.id, command: failure.command, exitCode: failure.exitCode },
    });
    return { error, entries };
  }
  state.validationRetries = used + 1;
  state.validationRetry = decided.retry;
  const error = new StepflowError("VALIDATION_FAILED", decided.message);
  await deps.events.emit("onStepRetry", deps.info, used + 1, error);
  await deps.log({
    type: "validation_failed",
    stepId: step.id,
    command: failure.command,
    exitCode: failure.exitCode,
    pattern: failure.pattern,
  });
  return { outcome: { kind: "goto", stepId: step.id, transition: "retry" }, entries };
}
