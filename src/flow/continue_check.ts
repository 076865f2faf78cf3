/**
 * Whether a run's recorded status lets it be resumed or redriven — the one rule shared by the
 * runner (`run({ resume | redrive })`) and the dashboard's Resume and Redrive buttons, so both
 * refuse with the same words.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { RunStatus } from "../store/types.ts";
import { recordedNextStep } from "../invocation.ts";

/**
 * Throws `RUN_NOT_RESUMABLE` (resume of a run that ended) or `RUN_NOT_REDRIVABLE` (redrive of a
 * completed or still running run, or of one its budget stopped: its next step is the resume with
 * the raised budget its end recorded, read from `state`, the run's recorded state).
 *
 * @example
 * ```ts
 * import { assertContinuable } from "./continue_check.ts";
 * assertContinuable("r1", "running", "resume"); // an interrupted run: fine
 * assertContinuable("r1", "failed", "redrive"); // fine
 * ```
 */
export function assertContinuable(
  runId: string,
  status: RunStatus,
  mode: "resume" | "redrive",
  state?: unknown,
): void {
  const active = status === "running" || status === "paused";
  if (mode === "redrive" && status === "waiting") {
    throw new StepflowError(
      "RUN_NOT_REDRIVABLE",
      `Run ${runId} is waiting for an answer at an input step; it has not failed. Answer it, or resume it once its waitTimeout passed.`,
      { details: { runId, next: { action: "answer", runId, args: ["--value", "<json>"] } } },
    );
  }
  if (mode === "resume" && status === "waiting") return; // the runner checks the answer or the timeout
  if (status === "budget_exceeded") {
    if (mode === "resume") return; // it carries on inside the step its budget stopped it in
    throw new StepflowError(
      "RUN_NOT_REDRIVABLE",
      `Run ${runId} was stopped by its budget; it has not failed. Resume it with a higher budget to carry on inside its step.`,
      { details: { runId, next: recordedNextStep(state) ?? { action: "resume", runId } } },
    );
  }
  if (mode === "redrive" && (status === "completed" || active)) {
    throw new StepflowError(
      "RUN_NOT_REDRIVABLE",
      `Run ${runId} is ${status}; only a run that ended without success can be redriven${
        status === "completed" ? "" : " (use resume for an interrupted run)"
      }.`,
    );
  }
  if (mode === "resume" && !active) {
    throw new StepflowError(
      "RUN_NOT_RESUMABLE",
      `Run ${runId} already ended (${status}); nothing to resume.${
        status === "completed" ? "" : " Redrive it to restart it from its failed step."
      }`,
      status === "completed"
        ? { details: { runId } }
        : { details: { runId, next: { action: "redrive", runId } } },
    );
  }
}
