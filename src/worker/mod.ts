/**
 * Scale-out: workers that take runs from a PostgreSQL queue (pg-boss) and drive them against the
 * PostgreSQL run store, and the submission side (`--submit`, `--wait`). See docs/scaling.md.
 *
 * @example
 * ```ts ignore
 * import { startWorker } from "jsr:@stepflow/core/worker";
 * const worker = await startWorker({
 *   store: "postgres://stepflow@db.internal/stepflow",
 *   agentRoot: ".agent",
 *   concurrency: 4,
 * });
 * Deno.addSignalListener("SIGTERM", () => void worker.stop());
 * ```
 *
 * @module
 */
export {
  DEFAULT_RATE_LIMIT_YIELD_MS,
  MAX_RATE_LIMIT_YIELDS,
  type RunWorker,
  startWorker,
  type SubmittedRequest,
  type WorkerOptions,
} from "./worker.ts";
export {
  type FollowHandlers,
  followRun,
  resubmitWithRerun,
  type SubmitOptions,
  submitRun,
} from "./submit.ts";
export {
  openRunQueue,
  RUN_QUEUE,
  type RunJobHandler,
  type RunJobInfo,
  type RunQueue,
  type RunQueueOptions,
  type SendOptions,
} from "./queue.ts";
export { agentContentHash } from "./agent_hash.ts";
export {
  claimOrphans,
  clearRerunPermission,
  deferredUntil,
  markDeferred,
  markGivenUp,
  markHeld,
  markTaken,
  recordSubmission,
  releaseHeld,
  type RerunPermission,
  rerunPermissionOf,
  submissionOf,
  type SubmittedRun,
} from "./submissions.ts";
export { type AnswerSubmittedOptions, answerSubmittedRun } from "./answer.ts";
