/**
 * The queue's bookkeeping on the PostgreSQL run store's rows: a submitted run's request, whether a
 * worker took its job, whether the queue gave it up, and which runs nobody drives any more. The run
 * store keeps runs, logs, checkpoints and leases; these columns of the same `runs` row are the
 * queue's, written only by `submitRun` and the workers (docs/scaling.md).
 *
 * Every function takes the store whose pool it uses, so a worker and a submitter need no second
 * connection.
 *
 * @module
 */
import { isOpenStatus, OPEN_RUN_STATUSES } from "../run_statuses.ts";
import { assertRunId } from "../store/run_id.ts";
import { NOT_ENDED_SQL } from "../store/pg_connection.ts";
import { pgConnectionOf, type PostgresRunStore } from "../store/postgres.ts";

/** The longest give-up message kept (a last error can be huge). */
const MAX_GIVEN_UP = 4_000;

/** A run as submitted to the queue. */
export interface SubmittedRun {
  /** The run. */
  runId: string;
  /** Agent name. */
  agent: string;
  /** Content hash of the agent's definition at submission. */
  agentHash: string;
  /** What to run: arguments, input text, options (plain JSON). */
  request: Record<string, unknown>;
  /** Status: `queued` until the first checkpoint, then the checkpoint's. */
  status: string;
  /** True once the run has a checkpoint. */
  started: boolean;
  /** Who holds the run's live lease right now, if anyone. */
  worker?: string;
  /** Why the queue gave the run up ({@linkcode markGivenUp}); status `failed`. */
  givenUp?: string;
  /**
   * Why the workers hold the run ({@linkcode markHeld}): it stays open (shown `interrupted`) and no
   * worker takes it until someone continues it.
   */
  held?: string;
}

/**
 * Records a run submitted to the queue (status `queued`, no checkpoint yet).
 *
 * @example
 * ```ts ignore
 * import { PostgresRunStore } from "jsr:@stepflow/core/store";
 * import { recordSubmission } from "jsr:@stepflow/core/worker";
 * const store = new PostgresRunStore("postgres://stepflow@db.internal/stepflow");
 * await recordSubmission(store, { runId: "r1", agent: "demo", agentHash: "…", request: {} });
 * ```
 */
export async function recordSubmission(
  store: PostgresRunStore,
  run: Omit<SubmittedRun, "status" | "started">,
): Promise<void> {
  assertRunId(run.runId);
  const c = await pgConnectionOf(store);
  await c.query(
    `INSERT INTO ${c.schema}.runs (run_id, agent, agent_hash, status, started_at, request)
       VALUES ($1, $2, $3, 'queued', $4, $5::json)`,
    [run.runId, run.agent, run.agentHash, new Date().toISOString(), JSON.stringify(run.request)],
  );
}

/** The submission of a run, or undefined when the run was not submitted to the queue. */
export async function submissionOf(
  store: PostgresRunStore,
  runId: string,
): Promise<SubmittedRun | undefined> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  const row = (await c.query<{
    agent: string;
    agent_hash: string | null;
    request: string | null;
    status: string | null;
    started: boolean;
    worker: string | null;
    given_up: string | null;
  }>(
    `SELECT agent, agent_hash, request::text AS request, status, checkpoint IS NOT NULL AS started,
         given_up,
         CASE WHEN lease_expires_at > clock_timestamp() THEN lease_owner END AS worker
       FROM ${c.schema}.runs WHERE run_id = $1`,
    [runId],
  )).rows[0];
  if (!row?.request) return undefined;
  const submitted: SubmittedRun = {
    runId,
    agent: row.agent,
    agentHash: row.agent_hash ?? "",
    request: JSON.parse(row.request),
    status: row.status ?? "queued",
    started: row.started,
  };
  if (row.worker !== null) submitted.worker = row.worker;
  if (row.given_up !== null) {
    // A run given up is `failed`; a held one keeps its open status.
    if (isOpenStatus(submitted.status)) submitted.held = row.given_up;
    else submitted.givenUp = row.given_up;
  }
  return submitted;
}

/**
 * Marks a run as taken from the queue by a worker that has not leased it yet, so that the orphan
 * check ({@linkcode claimOrphans}) gives that worker a lease period from now to take the lease:
 * - a queued run gets an expiry without an owner;
 * - a started run that nobody holds a live lease of (its worker died, or it was handed back) gets
 *   the take recorded as its latest claim, so a job that waited long in the queue is not claimed
 *   again the moment a worker takes it.
 *
 * A worker that dies before it takes the lease (while it loads the agent) leaves that time to run
 * out, and the run is re-queued like any orphan.
 */
export async function markTaken(store: PostgresRunStore, runId: string): Promise<void> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  await c.query(
    `UPDATE ${c.schema}.runs SET
         lease_expires_at = CASE WHEN status = 'queued'
           THEN clock_timestamp() + $2 * interval '1 millisecond' ELSE lease_expires_at END,
         requeued_at = CASE WHEN status = 'queued' THEN requeued_at ELSE clock_timestamp() END
       WHERE run_id = $1 AND (
         (lease_owner IS NULL AND status = 'queued')
         OR (request IS NOT NULL AND status = ANY($3::text[])
           AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())
           AND (requeued_at IS NULL OR requeued_at < clock_timestamp())))`,
    [runId, store.leaseMs, OPEN_RUN_STATUSES],
  );
}

/**
 * Records that the queue gave the run up (its job failed its last attempt, so no worker takes it
 * again): the run becomes `failed` with `message` (what happened and the fix), shown by the store's
 * `list`, `summary` and `listPage`, and {@linkcode claimOrphans} never re-queues it. One statement,
 * and only while the run has not ended (queued or open) and nobody holds a live lease of it: a run
 * another worker drives, or one that ended, is left alone (returns false). A later checkpoint of
 * the run (a resume by hand) clears the mark.
 *
 * @param store the run store
 * @param runId the run
 * @param message why, for `--runs` and the dashboard (cut to 4 000 characters)
 * @returns true when the run was marked
 */
export async function markGivenUp(
  store: PostgresRunStore,
  runId: string,
  message: string,
): Promise<boolean> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  const text = message.length > MAX_GIVEN_UP ? `${message.slice(0, MAX_GIVEN_UP - 1)}…` : message;
  return (await c.query(
    `UPDATE ${c.schema}.runs SET status = 'failed', given_up = $2, given_up_at = clock_timestamp()
       WHERE run_id = $1 AND request IS NOT NULL AND status IN (${NOT_ENDED_SQL})
         AND (lease_owner IS NULL OR lease_expires_at IS NULL
           OR lease_expires_at < clock_timestamp())
       RETURNING run_id`,
    [runId, text],
  )).rows.length > 0;
}

/**
 * The permission `--resume RUN_ID --rerun-unfinished-call --submit` records on a submitted run
 * ({@linkcode releaseHeld}), as its request keeps it: the tool calls started before run-log line
 * `beforeLine` (0-based; the lines the run had when the permission was given) may run again.
 *
 * It is not taken by whoever reads it first: the worker that resumes the run asks for it only
 * once it holds the run's lock (`RunOptions.rerunUnfinishedCall` as a function), so a duplicate
 * job that loses the lock cannot use it up. It stays on the run until the run ends or is held
 * again, and covers only calls whose latest start is before `beforeLine`: a worker that dies
 * before the call ran again leaves it for the next worker, while a call that started running again
 * (a new start line, at or after `beforeLine`) and was cut off again is not covered — the run is
 * held again rather than run the call a third time unasked.
 */
export interface RerunPermission {
  /** The calls whose latest `tool_call_start` line is before this one (0-based) may run again. */
  beforeLine: number;
}

/**
 * Holds an open run that a worker cannot continue without a person (a resume stopped by
 * `TOOL_CALL_UNFINISHED`): the run keeps its open status (shown `interrupted`), `message` (what
 * happened, what to check, how to continue) is shown by `--runs`, `--show` and the dashboard as a
 * given-up run's reason is, and {@linkcode claimOrphans} never re-queues it. One statement, only
 * while nobody holds a live lease of the run and only when its rerun permission is still the one
 * the stopped drive saw (`seen`; none when omitted): a permission given since (the user asked
 * while this worker was stopping) leaves the run to the job that came with it. The permission the
 * drive saw, which did not cover the calls, is removed (so is a value that is no permission). A later checkpoint (a resume by hand) or
 * {@linkcode releaseHeld} clears the hold.
 *
 * @param store the run store
 * @param runId the run
 * @param message why, and how to continue (cut to 4 000 characters)
 * @param seen the rerun permission the stopped drive read, if any
 * @returns true when the run was held
 */
export async function markHeld(
  store: PostgresRunStore,
  runId: string,
  message: string,
  seen?: RerunPermission,
): Promise<boolean> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  const text = message.length > MAX_GIVEN_UP ? `${message.slice(0, MAX_GIVEN_UP - 1)}…` : message;
  return (await c.query(
    `UPDATE ${c.schema}.runs SET given_up = $2, given_up_at = clock_timestamp(),
         request = (request::jsonb - 'rerunUnfinishedCall')::json
       WHERE run_id = $1 AND request IS NOT NULL AND status = ANY($3::text[])
         AND (lease_owner IS NULL OR lease_expires_at IS NULL
           OR lease_expires_at < clock_timestamp())
         AND (jsonb_typeof(request::jsonb -> 'rerunUnfinishedCall' -> 'beforeLine') IS NULL
           OR (request::jsonb -> 'rerunUnfinishedCall') = $4::jsonb)
       RETURNING run_id`,
    [runId, text, OPEN_RUN_STATUSES, seen ? JSON.stringify(seen) : null],
  )).rows.length > 0;
}

/**
 * Hands an open submitted run that nobody drives (held, or interrupted) back to the workers with
 * the user's permission to run its unfinished tool calls again: the hold is cleared and the
 * request records a {@linkcode RerunPermission} for the calls started before the run's current
 * last log line, which the worker that resumes the run reads under the run's lock
 * ({@linkcode rerunPermissionOf}). Returns false when the run is not such a run (not submitted,
 * ended, waiting, or a live lease holds it); the caller queues the run.
 */
export async function releaseHeld(store: PostgresRunStore, runId: string): Promise<boolean> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  return (await c.query(
    `UPDATE ${c.schema}.runs SET given_up = NULL, given_up_at = NULL,
         request = (request::jsonb || jsonb_build_object('rerunUnfinishedCall',
           jsonb_build_object('beforeLine',
             (SELECT count(*) FROM ${c.schema}.run_log WHERE run_log.run_id = $1))))::json
       WHERE run_id = $1 AND request IS NOT NULL AND status = ANY($2::text[])
         AND (lease_owner IS NULL OR lease_expires_at IS NULL
           OR lease_expires_at < clock_timestamp())
       RETURNING run_id`,
    [runId, OPEN_RUN_STATUSES],
  )).rows.length > 0;
}

/**
 * The {@linkcode RerunPermission} the run's request holds (undefined when none, or when it is not
 * one). Read, not taken: see {@linkcode RerunPermission} for why it stays.
 */
export async function rerunPermissionOf(
  store: PostgresRunStore,
  runId: string,
): Promise<RerunPermission | undefined> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  const row = (await c.query<{ permission: string | null }>(
    `SELECT (request::jsonb -> 'rerunUnfinishedCall')::text AS permission
       FROM ${c.schema}.runs WHERE run_id = $1`,
    [runId],
  )).rows[0];
  if (!row?.permission) return undefined;
  const parsed = JSON.parse(row.permission) as { beforeLine?: unknown } | null;
  const beforeLine = parsed?.beforeLine;
  return typeof beforeLine === "number" && Number.isInteger(beforeLine) && beforeLine >= 0
    ? { beforeLine }
    : undefined;
}

/**
 * Removes the run's rerun permission once the run ended or waits (it covered calls that ran
 * since). True when there was one.
 */
export async function clearRerunPermission(
  store: PostgresRunStore,
  runId: string,
): Promise<boolean> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  return (await c.query(
    `UPDATE ${c.schema}.runs SET request = (request::jsonb - 'rerunUnfinishedCall')::json
       WHERE run_id = $1 AND request IS NOT NULL AND request::jsonb ? 'rerunUnfinishedCall'
       RETURNING run_id`,
    [runId],
  )).rows.length > 0;
}

/**
 * Records that a run gave its slot back to wait out a rate limit until `until` (its job is queued
 * for then): {@linkcode claimOrphans} leaves it alone until a lease period after that time, and a
 * worker that gets an earlier job for it queues the job again for then ({@linkcode deferredUntil}).
 * The mark is the claim time of the queue's bookkeeping (`requeued_at`) set in the future.
 */
export async function markDeferred(
  store: PostgresRunStore,
  runId: string,
  until: Date,
): Promise<void> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  await c.query(
    `UPDATE ${c.schema}.runs SET requeued_at = $2 WHERE run_id = $1 AND request IS NOT NULL`,
    [runId, until.toISOString()],
  );
}

/**
 * The time a run waits for (see {@linkcode markDeferred}) when it is still ahead by the database's
 * clock; undefined for a run that waits for nothing.
 */
export async function deferredUntil(
  store: PostgresRunStore,
  runId: string,
): Promise<Date | undefined> {
  assertRunId(runId);
  const c = await pgConnectionOf(store);
  const row = (await c.query<{ until: string | Date | null }>(
    `SELECT requeued_at AS until FROM ${c.schema}.runs
       WHERE run_id = $1 AND requeued_at > clock_timestamp()`,
    [runId],
  )).rows[0];
  return row?.until ? new Date(row.until) : undefined;
}

/**
 * Claims submitted runs that nobody drives any more (started, not ended, lease expired) so that
 * one caller re-queues each: every claim is recorded, and a run is claimed again after a newer
 * lease of it expired, or when it is still orphaned a lease period after it was claimed or taken
 * ({@linkcode markTaken}: the worker that took the re-queued job may have died before it took the
 * lease).
 *
 * A run still queued and never marked taken a lease period after it was submitted is claimed
 * too: the worker that fetched its job may have died between the fetch and {@linkcode markTaken},
 * leaving the job active in the queue and the run with no expiry to run out. A run that is only
 * waiting behind others is claimed that way too (once per lease period): the caller queues a job
 * only for a claimed run that has none waiting in the queue (`RunQueue.hasWaitingJob`).
 *
 * @param store the run store
 * @param limit the most runs claimed at once
 * @param driving runs the caller drives right now, never its orphans (its own drive may not have
 *   taken the lease yet, or just released it to record why the run stops)
 */
export async function claimOrphans(
  store: PostgresRunStore,
  limit = 100,
  driving: readonly string[] = [],
): Promise<string[]> {
  const c = await pgConnectionOf(store);
  const s = c.schema;
  const rows = (await c.query<{ run_id: string }>(
    `UPDATE ${s}.runs SET requeued_at = clock_timestamp()
       WHERE run_id IN (
         SELECT run_id FROM ${s}.runs
         WHERE request IS NOT NULL AND status IN (${NOT_ENDED_SQL})
           AND given_up IS NULL AND NOT (run_id = ANY($3::text[]))
           AND (lease_expires_at < clock_timestamp()
             OR (status = 'queued' AND lease_expires_at IS NULL
               AND created_at < clock_timestamp() - $2 * interval '1 millisecond'))
           AND (requeued_at IS NULL OR requeued_at < lease_expires_at
             OR requeued_at < clock_timestamp() - $2 * interval '1 millisecond')
         ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
       ) RETURNING run_id`,
    [limit, store.leaseMs, driving],
  )).rows;
  return rows.map((r) => r.run_id);
}
