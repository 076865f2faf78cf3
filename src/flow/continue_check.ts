/**
 * Whether a run's recorded status lets it be resumed or redriven — the one rule shared by the
 * runner (`run({ resume | redrive })`) and the dashboard's Resume and Redrive buttons, so both
 * refuse with the same words.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { RunStatus } from "../store/types.ts";

/**
 * Throws `RUN_NOT_RESUMABLE` (resume of a run that ended) or `RUN_NOT_REDRIVABLE` (redrive of a
 * completed or still running run).
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
): void {
  const active = status === "running" || status === "paused";
  if (mode === "redrive" && status === "waiting") {
    throw new StepflowError(
      "RUN_NOT_REDRIVABLE",
      `Run ${runId} is waiting for an answer at an input step; it has not failed. Answer it (run-agent --answer ${runId} --value '<json>'), or resume it once its waitTimeout passed.`,
    );
  }
  if (mode === "resume" && status === "waiting") return; // the runner checks the answer or the timeout
  if (status === "budget_exceeded") {
    if (mode === "resume") return; // it carries on inside the step its budget stopped it in
    throw new StepflowError(
      "RUN_NOT_REDRIVABLE",
      `Run ${runId} was stopped by its budget; it has not failed. Continue it inside its step with a higher budget: --resume ${runId} --budget-usd N (or --budget-tokens N).`,
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
        status === "completed" ? "" : ` Use --redrive ${runId} to restart it from its failed step.`
      }`,
    );
  }
}
