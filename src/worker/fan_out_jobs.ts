/**
 * Fan-out children on the workers, the queue's side (docs/scaling.md, "Fan-out steps on the
 * workers"). A fan-out step driven by a worker gives its children to {@linkcode FanOutJobs} (the
 * runner's `childQueue`): each child gets a row in `fanout_children` — `pending` until the step's
 * `concurrency` leaves room, then `sent`: its run is recorded as a submitted run of its agent and a
 * job goes out, so any worker takes it. The parent's drive then stops and its slot is free.
 *
 * When a worker's drive of a child ends (or the child waits for a person), the same worker sends
 * the step's next pending child — one out for one in, under an advisory lock per step, so the
 * step never has more than `concurrency` children out over all workers — and, when the step has
 * none left out or the child failed, wakes the parent: its deferral is cleared and a job queued
 * (every send notifies the idle workers, `queue.ts`). A parent that stopped just as its last child
 * ended looks once more after its drive let go of it ({@linkcode FanOutJobs.afterSuspend}); a wake
 * lost with a killed worker is made good by the parent's deferral running out (the orphan reaper).
 *
 * @module
 */
import type {
  ChildQueue,
  FanOutSuspended,
  QueuedChild,
  QueuedFanOut,
} from "../flow/child_queue.ts";
import type { CompletionReason } from "../flow/types.ts";
import { errorMessage } from "../errors.ts";
import { pgConnectionOf, type PostgresRunStore } from "../store/postgres.ts";
import { assertRunId } from "../store/run_id.ts";
import { agentContentHash } from "./agent_hash.ts";
import type { RunQueue } from "./queue.ts";
import { markDeferred } from "./submissions.ts";

/**
 * How long a parent waiting for its children on the workers stays out of the orphan reaper's
 * reach when no wake comes (default of `WorkerOptions.fanOutRecheckMs`): a wake lost with a killed
 * worker costs at most this (plus the lease) before the parent looks at its children again.
 */
export const DEFAULT_FANOUT_RECHECK_MS = 60_000;

/** What a child's end does: the children sent in its place, and whether the parent is woken. */
export interface ChildEnd {
  /** The parent run. */
  parentRunId: string;
  /** Children sent to the workers now. */
  sent: string[];
  /** The parent was queued again (its last child ended, or this one failed). */
  woke: boolean;
}

/** The workers' {@linkcode ChildQueue}, on the run store's database and the run queue. */
export class FanOutJobs implements ChildQueue {
  readonly #store: PostgresRunStore;
  readonly #queue: RunQueue;
  readonly #warn: (message: string) => void;

  /**
   * @param store the workers' run store
   * @param queue the run queue the children's jobs go to
   * @param warn receives problems that do not stop the caller
   */
  constructor(store: PostgresRunStore, queue: RunQueue, warn: (message: string) => void) {
    this.#store = store;
    this.#queue = queue;
    this.#warn = warn;
  }

  /** Records the children (pending), then sends as many as the step's concurrency leaves room for. */
  async enqueue(fanOut: QueuedFanOut, children: readonly QueuedChild[]): Promise<void> {
    const c = await pgConnectionOf(this.#store);
    const hashes = new Map<string, string>();
    for (const child of children) {
      assertRunId(child.runId);
      if (!hashes.has(child.agent.dir)) {
        hashes.set(child.agent.dir, await agentContentHash(child.agent.dir));
      }
    }
    await c.transaction(async (tx) => {
      for (const child of children) {
        // A submitted run's request (worker.ts `SubmittedRequest`): the worker starts it so.
        const request = {
          args: child.args,
          parent: child.parent,
          ...(child.backendChoice ? { backendChoice: child.backendChoice } : {}),
          ...(child.permissionMode ? { permissionMode: child.permissionMode } : {}),
        };
        await tx.query(
          `INSERT INTO ${c.schema}.fanout_children (child_run_id, parent_run_id, step_id, position,
             concurrency, agent, agent_hash, request)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json)
           ON CONFLICT (child_run_id) DO UPDATE SET state = 'pending', noticed = false
             WHERE ${c.schema}.fanout_children.state = 'cancelled'`,
          [
            child.runId,
            fanOut.parentRunId,
            fanOut.stepId,
            child.position,
            fanOut.concurrency,
            child.agent.name,
            hashes.get(child.agent.dir),
            JSON.stringify(request),
          ],
        );
      }
    });
    await this.#dispatch(fanOut.parentRunId, fanOut.stepId);
  }

  /**
   * Marks children whose ends (or waits) the parent took up; one whose worker did not count its
   * end (killed just after it) is counted here, and its place given to the step's next child.
   */
  async noticed(
    fanOut: QueuedFanOut,
    seen: { ended: readonly string[]; waiting: readonly string[] },
  ): Promise<void> {
    const c = await pgConnectionOf(this.#store);
    const counted = (await c.query(
      `UPDATE ${c.schema}.fanout_children SET noticed = true,
           state = CASE
             WHEN state <> 'sent' THEN state
             WHEN child_run_id = ANY($3::text[]) THEN 'waiting'
             ELSE 'ended' END,
           ended_at = COALESCE(ended_at, clock_timestamp())
         WHERE parent_run_id = $1 AND child_run_id = ANY($2::text[])
         RETURNING child_run_id`,
      [fanOut.parentRunId, [...seen.ended, ...seen.waiting], [...seen.waiting]],
    )).rows;
    if (counted.length > 0) await this.#dispatch(fanOut.parentRunId, fanOut.stepId);
  }

  /** The step's pending children never start; the ones out are asked to cancel. */
  async cancel(fanOut: QueuedFanOut): Promise<string[]> {
    const c = await pgConnectionOf(this.#store);
    const out = await c.transaction(async (tx) => {
      await lockStep(tx, fanOut.parentRunId, fanOut.stepId);
      await tx.query(
        `UPDATE ${c.schema}.fanout_children SET state = 'cancelled', noticed = true
           WHERE parent_run_id = $1 AND step_id = $2 AND state = 'pending'`,
        [fanOut.parentRunId, fanOut.stepId],
      );
      return (await tx.query<{ child_run_id: string }>(
        `SELECT child_run_id FROM ${c.schema}.fanout_children
           WHERE parent_run_id = $1 AND step_id = $2 AND state = 'sent'`,
        [fanOut.parentRunId, fanOut.stepId],
      )).rows.map((r) => r.child_run_id);
    });
    for (const runId of out) {
      await this.#store.requestCancel(runId).catch((error) =>
        this.#warn(`cancelling fan-out child ${runId}: ${errorMessage(error)}`)
      );
    }
    return out;
  }

  /**
   * A worker's drive of run `runId` ended as `reason`: when it is a fan-out child, its place is
   * given to the step's next pending child, and the parent is woken when none is left out or this
   * one failed. Undefined for a run that is no fan-out child (or whose end was counted already).
   */
  async childEnded(runId: string, reason: CompletionReason): Promise<ChildEnd | undefined> {
    const c = await pgConnectionOf(this.#store);
    const failed = reason !== "completed" && reason !== "waiting";
    const row = (await c.query<{ parent_run_id: string; step_id: string }>(
      `UPDATE ${c.schema}.fanout_children
         SET state = $2, failed = $3, noticed = false, ended_at = clock_timestamp()
         WHERE child_run_id = $1 AND state IN ('sent', 'waiting')
         RETURNING parent_run_id, step_id`,
      [runId, reason === "waiting" ? "waiting" : "ended", failed],
    )).rows[0];
    if (!row) return undefined;
    const sent = await this.#dispatch(row.parent_run_id, row.step_id);
    const open = (await c.query<{ open: number }>(
      `SELECT count(*)::int AS open FROM ${c.schema}.fanout_children
         WHERE parent_run_id = $1 AND step_id = $2 AND state IN ('pending', 'sent')`,
      [row.parent_run_id, row.step_id],
    )).rows[0].open;
    const woke = failed || open === 0;
    if (woke) await this.wake(row.parent_run_id);
    return { parentRunId: row.parent_run_id, sent, woke };
  }

  /**
   * A waiting fan-out child `runId` was answered: it goes back to `pending` and is sent when the
   * step's `concurrency` leaves room — an answered child counts against the step's places like
   * one never started, so answers never put more children of one step out than `concurrency`.
   * False when `runId` is no fan-out child waiting on the workers (the caller queues it itself).
   */
  async childAnswered(runId: string): Promise<boolean> {
    const c = await pgConnectionOf(this.#store);
    const row = (await c.query<{ parent_run_id: string; step_id: string }>(
      `UPDATE ${c.schema}.fanout_children SET state = 'pending', noticed = true
         WHERE child_run_id = $1 AND state = 'waiting'
         RETURNING parent_run_id, step_id`,
      [runId],
    )).rows[0];
    if (!row) return false;
    await this.#dispatch(row.parent_run_id, row.step_id);
    return true;
  }

  /**
   * After a parent's drive stopped for its children ({@linkcode FanOutSuspended}) and let go of the
   * run: it stays out of the orphan reaper's reach for `recheckMs`, and is queued again at once
   * when its children already ended meanwhile (their wake may have come while it still held the
   * run). True when it was.
   */
  async afterSuspend(parentRunId: string, recheckMs: number): Promise<boolean> {
    await markDeferred(this.#store, parentRunId, new Date(Date.now() + recheckMs));
    const c = await pgConnectionOf(this.#store);
    const row = (await c.query<{ failed: boolean | null; open: number; fresh: number }>(
      `SELECT bool_or(failed AND state = 'ended' AND NOT noticed) AS failed,
           count(*) FILTER (WHERE state IN ('pending', 'sent'))::int AS open,
           count(*) FILTER (WHERE state IN ('ended', 'waiting') AND NOT noticed)::int AS fresh
         FROM ${c.schema}.fanout_children WHERE parent_run_id = $1`,
      [parentRunId],
    )).rows[0];
    if (!(row.failed === true || (row.open === 0 && row.fresh > 0))) return false;
    await this.wake(parentRunId);
    return true;
  }

  /**
   * A worker's drive of `parentRunId` stopped for its children ({@linkcode FanOutSuspended}): the
   * slot is free; the run is queued again at once when they ended meanwhile
   * ({@linkcode FanOutJobs.afterSuspend}). Logs what happened.
   */
  async parentSuspended(
    parentRunId: string,
    suspended: FanOutSuspended,
    recheckMs: number | undefined,
    log: (line: string) => void,
  ): Promise<void> {
    const again = await this.afterSuspend(parentRunId, recheckMs ?? DEFAULT_FANOUT_RECHECK_MS);
    log(
      `run ${parentRunId}: ${suspended.message}${
        again ? " (they ended meanwhile: queued again)" : ""
      }`,
    );
  }

  /** Queues the parent again now (its deferral cleared, so the job is not put off). */
  async wake(parentRunId: string): Promise<void> {
    const c = await pgConnectionOf(this.#store);
    await c.query(
      `UPDATE ${c.schema}.runs SET requeued_at = NULL WHERE run_id = $1 AND requeued_at IS NOT NULL`,
      [parentRunId],
    );
    await this.#queue.send(parentRunId);
  }

  /**
   * Sends the step's pending children, in item order, as far as its concurrency leaves room: each
   * is recorded as a submitted run (its request, agent and hash) and its job queued. One step at a
   * time (an advisory lock), so two workers ending children together cannot both fill one place.
   */
  async #dispatch(parentRunId: string, stepId: string): Promise<string[]> {
    const c = await pgConnectionOf(this.#store);
    const s = c.schema;
    const sent = await c.transaction(async (tx) => {
      await lockStep(tx, parentRunId, stepId);
      const rows = (await tx.query<{ child_run_id: string }>(
        `UPDATE ${s}.fanout_children SET state = 'sent', sent_at = clock_timestamp()
           WHERE child_run_id IN (
             SELECT child_run_id FROM ${s}.fanout_children
               WHERE parent_run_id = $1 AND step_id = $2 AND state = 'pending'
               ORDER BY position
               LIMIT GREATEST(0,
                 (SELECT max(concurrency) FROM ${s}.fanout_children
                   WHERE parent_run_id = $1 AND step_id = $2)
                 - (SELECT count(*) FROM ${s}.fanout_children
                   WHERE parent_run_id = $1 AND step_id = $2 AND state = 'sent')))
           RETURNING child_run_id`,
        [parentRunId, stepId],
      )).rows.map((r) => r.child_run_id);
      if (rows.length > 0) {
        // The child's run row, as --submit makes one: queued until a worker's first checkpoint.
        await tx.query(
          `INSERT INTO ${s}.runs (run_id, agent, agent_hash, status, started_at, request)
             SELECT child_run_id, agent, agent_hash, 'queued', $2, request
               FROM ${s}.fanout_children WHERE child_run_id = ANY($1::text[])
             ON CONFLICT (run_id) DO NOTHING`,
          [rows, new Date().toISOString()],
        );
      }
      return rows;
    });
    // A send lost with this process is made good by the orphan reaper (a queued run left alone).
    for (const runId of sent) await this.#queue.send(runId);
    return sent;
  }
}

/** One fan-out step at a time: a transaction-scoped advisory lock on the step of the parent. */
async function lockStep(
  tx: { query(text: string, values?: unknown[]): Promise<unknown> },
  parentRunId: string,
  stepId: string,
): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
    `stepflow.fanout:${parentRunId}:${stepId}`,
  ]);
}
