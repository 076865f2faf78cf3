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
import { recordSubmission, submissionOf } from "./submissions.ts";
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
 * import { loadAgentDefinition, PostgresRunStore } from "jsr:@stepflow/core";
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
  if (options.queue) {
    await options.queue.send(runId);
    return runId;
  }
  const queue = await openRunQueue(options.url, {
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
  });
  try {
    await queue.send(runId);
  } finally {
    await queue.stop({ graceful: false });
  }
  return runId;
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
