/**
 * `--submit` and `--wait`: queue a run for the workers, then (optionally) follow it until it ends.
 *
 * @module
 */
import { sleep } from "../backoff.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import { isOpenStatus } from "../run_statuses.ts";
import { newRunId } from "../store/run_id.ts";
import type { PostgresRunStore } from "../store/postgres.ts";
import type { RunCheckpoint, RunLogEntry } from "../store/types.ts";
import { agentContentHash } from "./agent_hash.ts";
import { openRunQueue, type RunQueue } from "./queue.ts";
import { recordSubmission, releaseHeld, submissionOf } from "./submissions.ts";
import type { SubmittedRequest } from "./worker.ts";

/** Options of {@linkcode submitRun}. */
export interface SubmitOptions {
  /** The run id (default a new one). */
  runId?: string;
  /** The store's URL (the queue lives in the same database). */
  url: string;
  /** The store's schema (default `stepflow`). */
  schema?: string;
  /** An open queue to use (submitting many runs); default: one opened and closed for this run. */
  queue?: RunQueue;
}

/**
 * Records a run as `queued` with the agent's content hash and puts it on the queue; returns its id.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition } from "jsr:@stepflow/core";
 * import { PostgresRunStore } from "jsr:@stepflow/core/store";
 * import { submitRun } from "jsr:@stepflow/core/worker";
 * const url = "postgres://stepflow@db.internal/stepflow";
 * const definition = await loadAgentDefinition("issue-solver");
 * const store = new PostgresRunStore(url, { agent: definition.name });
 * const runId = await submitRun(store, definition, { args: { topic: "x" } }, { url });
 * ```
 */
export async function submitRun(
  store: PostgresRunStore,
  definition: AgentDefinition,
  request: SubmittedRequest,
  options: SubmitOptions,
): Promise<string> {
  const runId = options.runId ?? newRunId();
  await recordSubmission(store, {
    runId,
    agent: definition.name,
    agentHash: await agentContentHash(definition.dir),
    request: request as Record<string, unknown>,
  });
  await sendToQueue(runId, options);
  return runId;
}

/** Puts `runId` on the queue (the given one, else one opened and closed for it). */
async function sendToQueue(runId: string, options: SubmitOptions): Promise<void> {
  if (options.queue) {
    await options.queue.send(runId);
    return;
  }
  const queue = await openRunQueue(options.url, {
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
  });
  try {
    await queue.send(runId);
  } finally {
    await queue.stop({ graceful: false });
  }
}

/**
 * `run-agent --agent NAME --resume RUN_ID --rerun-unfinished-call --submit`: hands a submitted run
 * that nobody drives — held by the workers because its resume stopped at a tool call its dead
 * worker was running (`TOOL_CALL_UNFINISHED`), or interrupted — back to the queue, with the
 * permission to run that call again: the worker that holds the run's lease reads it, and it covers
 * the call as it was left, once (`RerunPermission`).
 *
 * @example
 * ```ts ignore
 * import { PostgresRunStore } from "jsr:@stepflow/core/store";
 * import { resubmitWithRerun } from "jsr:@stepflow/core/worker";
 * const url = "postgres://stepflow@db.internal/stepflow";
 * await resubmitWithRerun(new PostgresRunStore(url), "20260101-000000-abcd", { url });
 * ```
 *
 * @throws {StepflowError} `RUN_NOT_FOUND` when the run was not submitted to the workers,
 *   `RUN_LOCKED` when a worker drives it, `RUN_NOT_RESUMABLE` when it ended or waits for an answer
 */
export async function resubmitWithRerun(
  store: PostgresRunStore,
  runId: string,
  options: Omit<SubmitOptions, "runId">,
): Promise<void> {
  if (!await releaseHeld(store, runId)) {
    const submitted = await submissionOf(store, runId);
    if (!submitted) {
      throw new StepflowError(
        "RUN_NOT_FOUND",
        `Run ${runId} is not a run submitted to the workers in ${store.displayUrl}. Resume it in this process instead: leave out --submit.`,
        { details: { runId } },
      );
    }
    if (submitted.worker !== undefined) {
      throw new StepflowError(
        "RUN_LOCKED",
        `Run ${runId} is driven by worker ${submitted.worker} right now; nothing to hand back. Its history shows where it is.`,
        { details: { runId, worker: submitted.worker, next: { action: "show", runId } } },
      );
    }
    throw new StepflowError(
      "RUN_NOT_RESUMABLE",
      `Run ${runId} is ${submitted.status}: only an open run that nobody drives (interrupted, or held by the workers) goes back to them with --rerun-unfinished-call.`,
      { details: { runId, status: submitted.status } },
    );
  }
  await sendToQueue(runId, options);
}

/** What {@linkcode followRun} reports as the run moves. */
export interface FollowHandlers {
  /** Every newly committed log entry, in order. */
  onEntry?: (entry: RunLogEntry) => void;
  /** The worker holding the run changed (undefined: nobody holds it right now). */
  onWorker?: (worker: string | undefined) => void;
}

/**
 * Polls a run every `intervalMs` until its checkpoint is terminal; returns that checkpoint.
 *
 * @throws {StepflowError} `RUN_NOT_FOUND` when the run disappears (pruned or never submitted)
 * @throws {StepflowError} `RUN_GIVEN_UP` when the queue gave the run up (no worker takes it again)
 * @throws {StepflowError} `TOOL_CALL_UNFINISHED` when the workers hold the run: its resume stopped
 *   at a tool call its dead worker was running (continue it with {@linkcode resubmitWithRerun})
 */
export async function followRun(
  store: PostgresRunStore,
  runId: string,
  handlers: FollowHandlers = {},
  { intervalMs = 250, signal }: { intervalMs?: number; signal?: AbortSignal } = {},
): Promise<RunCheckpoint> {
  let seen = 0;
  let worker: string | undefined;
  for (;;) {
    signal?.throwIfAborted();
    const log = await store.readLog(runId);
    for (; seen < log.length; seen++) handlers.onEntry?.(log[seen]);
    const summary = await submissionOf(store, runId);
    if (!summary) {
      throw new StepflowError(
        "RUN_NOT_FOUND",
        `Run ${runId} is no longer in ${store.displayUrl} (pruned, or never submitted).`,
        { details: { runId } },
      );
    }
    if (summary.worker !== worker) handlers.onWorker?.(worker = summary.worker);
    if (summary.held !== undefined) {
      // A worker's resume stopped at a call that needs a person; no worker takes it until then.
      throw new StepflowError("TOOL_CALL_UNFINISHED", summary.held, { details: { runId } });
    }
    if (summary.givenUp !== undefined) {
      throw new StepflowError("RUN_GIVEN_UP", `Run ${runId} failed: ${summary.givenUp}`, {
        details: { runId },
      });
    }
    if (summary.status !== "queued" && !isOpenStatus(summary.status)) {
      const checkpoint = await store.loadCheckpoint(runId);
      const rest = await store.readLog(runId);
      for (; seen < rest.length; seen++) handlers.onEntry?.(rest[seen]);
      if (checkpoint) return checkpoint;
    }
    await sleep(intervalMs);
  }
}
