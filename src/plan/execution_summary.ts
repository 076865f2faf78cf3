/**
 * The summary of a finished plan run: the step ids by status, the run's status and, when it did
 * not complete, the error that says why.
 *
 * @module
 */
import { STEP_STATUSES } from "./types.ts";
import type { ExecutionStatus, ExecutionSummary, Plan, StepStatus } from "./types.ts";

/** What the executor knows at the end of a run besides the plan itself. */
export interface RunEnd {
  runId: string;
  plan: Plan;
  cancelled: boolean;
  aborted: boolean;
  /** The first failure of the run (a step's error, recovery's abort, the cancel reason). */
  firstError: string | undefined;
  durationMs: number;
  startedAt: string;
  maxParallel: number;
}

/** The step ids of `plan`, by status. */
export function stepsByStatus(plan: Plan): Record<StepStatus, string[]> {
  const steps = {} as Record<StepStatus, string[]>;
  for (const s of STEP_STATUSES) steps[s] = [];
  for (const step of plan.steps) steps[step.status].push(step.id);
  return steps;
}

/** The summary of a run that ended as `end` says. */
export function summarizeRun(end: RunEnd): ExecutionSummary {
  const steps = stepsByStatus(end.plan);
  let status: ExecutionStatus;
  if (end.cancelled) status = "cancelled";
  else if (end.aborted) status = "aborted";
  else if (
    steps.failed.length || steps.blocked.length || steps.pending.length || steps.ready.length ||
    steps.running.length
  ) {
    status = "failed";
  } else status = "completed";
  const summary: ExecutionSummary = {
    runId: end.runId,
    planId: end.plan.id,
    taskId: end.plan.taskId,
    status,
    ok: status === "completed",
    steps,
    durationMs: end.durationMs,
    startedAt: end.startedAt,
    finishedAt: new Date().toISOString(),
    maxParallel: end.maxParallel,
    plan: end.plan,
  };
  if (status !== "completed") {
    summary.error = end.firstError ??
      (steps.pending.length
        ? `${steps.pending.length} step(s) could not start (${
          steps.pending.slice(0, 5).join(", ")
        })`
        : "the plan did not complete");
  }
  return summary;
}
