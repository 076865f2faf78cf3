/**
 * Answers a run that the workers drive: the answer is recorded (exactly once, as every answer) by
 * the answering process, and the run goes back on the queue, where an idle worker takes it at once
 * (the queue's notification) and continues it — the answering process drives nothing.
 *
 * @module
 */
import type { AgentDefinition } from "../definition/types.ts";
import type { AnswerOptions, RecordedAnswer } from "../flow/input_request.ts";
import { StepFlowRunner } from "../flow/runner.ts";
import type { PostgresRunStore } from "../store/postgres.ts";
import { openRunQueue, type RunQueue } from "./queue.ts";
import { FanOutJobs } from "./fan_out_jobs.ts";

/** Options of {@linkcode answerSubmittedRun}. */
export interface AnswerSubmittedOptions extends AnswerOptions {
  /** The store's URL (the queue lives in the same database). */
  url: string;
  /** The store's schema (default `stepflow`). */
  schema?: string;
  /** An open queue to use; default: one opened and closed for this answer. */
  queue?: RunQueue;
}

/**
 * Records the answer to a submitted run that waits at an input step and puts the run back on the
 * queue. A process that dies between the two leaves a `running` run that nobody holds: the
 * workers' orphan check re-queues it, so the answer is never stranded.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition } from "jsr:@stepflow/core";
 * import { PostgresRunStore } from "jsr:@stepflow/core/store";
 * import { answerSubmittedRun } from "jsr:@stepflow/core/worker";
 * const url = "postgres://stepflow@db.internal/stepflow";
 * const definition = await loadAgentDefinition("release");
 * const store = new PostgresRunStore(url, { agent: definition.name });
 * await answerSubmittedRun(store, definition, runId, { decision: "next" }, { url, answeredBy: "ops" });
 * ```
 *
 * @throws {StepflowError} what `StepFlowRunner.recordAnswer` throws (`INPUT_NOT_WAITING`,
 *   `INPUT_ANSWER_INVALID`, `INPUT_WAIT_EXPIRED`); nothing is recorded then
 */
export async function answerSubmittedRun(
  store: PostgresRunStore,
  definition: AgentDefinition,
  runId: string,
  value: unknown,
  options: AnswerSubmittedOptions,
): Promise<RecordedAnswer> {
  const { url, schema, queue: given, ...answer } = options;
  const recorded = await new StepFlowRunner(definition, { store }).recordAnswer(
    runId,
    value,
    answer,
  );
  const queue = given ?? await openRunQueue(url, schema !== undefined ? { schema } : {});
  try {
    // An answered fan-out child waits for a place among its step's `concurrency`; the parent
    // (answered through it) goes back to the queue as any answered run.
    const child = recorded.child?.runId ?? runId;
    const placed = await new FanOutJobs(store, queue, () => {}).childAnswered(child);
    if (!placed || child !== runId) await queue.send(runId);
  } finally {
    if (!given) await queue.stop({ graceful: false });
  }
  return recorded;
}
