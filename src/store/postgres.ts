/**
 * `PostgresRunStore`: runs, their logs and checkpoints in PostgreSQL, so that runs started, listed,
 * resumed and executed on several machines share one durable record.
 *
 * - One transaction per iteration: `append` buffers the iteration's log entries in memory and the
 *   following `saveCheckpoint` writes them together with the checkpoint in a single statement (one
 *   round trip, one commit). A crash before that commit loses the in-flight iteration as a whole;
 *   a committed one is complete. This is the contract of every store: an entry is durable once the
 *   next checkpoint is saved (the file store flushes its log at the same moment).
 * - The run lock is a lease on the run's row: an owner, a fencing token and an expiry on the
 *   server's clock, renewed by a heartbeat (every third of the lease) and by every commit. A lease
 *   whose holder died expires and can be taken over; a live one never is. Every commit checks the
 *   token, so a holder that lost its lease (paused longer than the lease) cannot write again.
 *
 * Long because: the lease, the per-iteration commit and the listing
 * share one class's private state (held leases, the pool); the worker queue's bookkeeping on the
 * same rows lives in src/worker/submissions.ts.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import { parseCheckpoint } from "./checkpoint_format.ts";
import { assertRunId } from "./run_id.ts";
import { isValidRunGroup } from "./run_group.ts";
import { OPEN_RUN_STATUSES } from "../run_statuses.ts";
import { hostName, pidAlive } from "./file_lock.ts";
import {
  openPgConnection,
  type PgConnection,
  type PgConnectionOptions,
  redactUrl,
} from "./pg_connection.ts";
import { sortNewestFirst, summarizeCheckpoint } from "./summary.ts";
import type { RunCheckpoint, RunLock, RunLogEntry, RunStore, RunSummary } from "./types.ts";
import { ENDED_RUN_STATUSES, isOpenStatus } from "../run_statuses.ts";

/** Options of {@linkcode PostgresRunStore}. */
export interface PostgresRunStoreOptions extends PgConnectionOptions {
  /** Only this agent's runs are listed and pruned (the CLI scopes a store to the agent it runs). */
  agent?: string;
  /** Keep at most this many runs of `agent` (agent.json `logging.maxFiles`); needs `agent`. */
  maxRuns?: number;
  /** How long a lease lives without a heartbeat (default 30 000 ms). */
  leaseMs?: number;
  /** How often held leases are renewed (default a third of `leaseMs`). */
  heartbeatMs?: number;
  /** Who holds the leases this store takes, shown by `--runs` (default `host:pid`). */
  owner?: string;
}

/** The default lease: 30 s without a heartbeat and the run can be taken over. */
export const DEFAULT_LEASE_MS = 30_000;

const TERMINAL: ReadonlySet<string> = new Set(ENDED_RUN_STATUSES);

/** Reads a store's private pool; set by the class, read by {@linkcode pgConnectionOf}. */
let connectionOf: (store: PostgresRunStore) => Promise<PgConnection>;

/**
 * The pool of `store` (opened and migrated on first use), for the worker queue's bookkeeping on the
 * same `runs` rows (src/worker/submissions.ts). Not part of the package's API.
 */
export function pgConnectionOf(store: PostgresRunStore): Promise<PgConnection> {
  return connectionOf(store);
}

/** A lease this store holds. */
interface HeldLease {
  token: string;
  /** The `seq` of the run's last log entry. */
  seq: number;
  /** Entries appended since the last checkpoint. */
  pending: RunLogEntry[];
  lost: boolean;
}

/**
 * A {@linkcode RunStore} in PostgreSQL (`postgres://…`). Tables are created in `schema` (default
 * `stepflow`) by versioned migrations on first use. The `pg` package is loaded on first use.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 * import { PostgresRunStore } from "jsr:@stepflow/core/store";
 * const definition = await loadAgentDefinition("code-improver");
 * const store = new PostgresRunStore("postgres://stepflow@db.internal/stepflow", {
 *   agent: definition.name,
 * });
 * const result = await new StepFlowRunner(definition, { store }).run({ args: { topic: "x" } });
 * await store.close();
 * ```
 */
export class PostgresRunStore implements RunStore {
  static {
    connectionOf = (store) => store.#db();
  }
  /** The URL without its password. */
  readonly displayUrl: string;
  /** Who holds the leases this store takes. */
  readonly owner: string;
  /** The lease duration in milliseconds. */
  readonly leaseMs: number;
  readonly #url: string;
  readonly #options: PostgresRunStoreOptions;
  readonly #heartbeatMs: number;
  readonly #warn: (message: string) => void;
  readonly #held = new Map<string, HeldLease>();
  /** What `loadCheckpoint` saw, to detect a run that moved on before we leased it. */
  readonly #loaded = new Map<string, string>();
  #connection?: Promise<PgConnection>;
  #heartbeat?: ReturnType<typeof setInterval>;
  #suspending = false;

  /**
   * Creates a store; nothing connects until the first call.
   *
   * @param url `postgres://user:password@host:port/database`
   * @param options schema, agent scope, retention, lease timing, owner name
   */
  constructor(url: string, options: PostgresRunStoreOptions = {}) {
    this.#url = url;
    this.#options = options;
    this.displayUrl = redactUrl(url);
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#heartbeatMs = options.heartbeatMs ?? Math.max(1, Math.floor(this.leaseMs / 3));
    if (!(this.leaseMs >= 100 && this.#heartbeatMs > 0 && this.#heartbeatMs < this.leaseMs)) {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        `PostgresRunStore leaseMs must be at least 100 and heartbeatMs below it (got leaseMs ${this.leaseMs}, heartbeatMs ${this.#heartbeatMs}).`,
      );
    }
    if (
      options.maxRuns !== undefined && !(Number.isInteger(options.maxRuns) && options.maxRuns > 0)
    ) {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        `PostgresRunStore maxRuns (logging.maxFiles) must be a positive integer, got ${options.maxRuns}.`,
      );
    }
    this.owner = options.owner ?? `${hostName()}:${Deno.pid}`;
    this.#warn = options.onWarning ?? ((m) => console.warn(`[stepflow] ${m}`));
  }

  /** Buffers one entry until the run's next checkpoint, which commits both together. */
  append(runId: string, entry: RunLogEntry): Promise<void> {
    try {
      this.#lease(runId, "append to").pending.push(structuredClone(entry));
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Commits the buffered entries and the checkpoint in one statement, fenced by the lease token and
   * renewing the lease. Throws `RUN_LOCK_LOST` (nothing written) when another holder took the run.
   */
  async saveCheckpoint(checkpoint: RunCheckpoint): Promise<void> {
    const runId = checkpoint.runId;
    const held = this.#lease(runId, "checkpoint");
    const c = await this.#db();
    const s = c.schema;
    const entries = held.pending;
    const result = await c.query<{ updated: number }>(
      `WITH r AS (
         UPDATE ${s}.runs SET agent = $3, status = $4, started_at = $5, updated_at = $6,
           log_entries = $7, checkpoint = $8::json, given_up = NULL, given_up_at = NULL,
           lease_expires_at = clock_timestamp() + $9 * interval '1 millisecond'
         WHERE run_id = $1 AND lease_token = $2::bigint RETURNING run_id
       ), l AS (
         INSERT INTO ${s}.run_log (run_id, seq, entry)
         SELECT r.run_id, $10::integer + o.n, o.e
         FROM r, json_array_elements($11::json) WITH ORDINALITY AS o(e, n)
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM r)::integer AS updated`,
      [
        runId,
        held.token,
        checkpoint.agent,
        checkpoint.status,
        checkpoint.startedAt,
        checkpoint.updatedAt,
        checkpoint.logEntries,
        JSON.stringify(checkpoint),
        this.leaseMs,
        held.seq,
        JSON.stringify(entries),
      ],
    );
    if (result.rows[0]?.updated !== 1) {
      held.lost = true;
      throw this.#lostError(runId);
    }
    held.seq += entries.length;
    held.pending = [];
    if (this.#suspending && !TERMINAL.has(checkpoint.status)) {
      throw new StepflowError(
        "RUN_SUSPENDED",
        `Run ${runId} was suspended after its iteration was committed (the worker is shutting down); another worker resumes it from this checkpoint.`,
        { details: { runId } },
      );
    }
  }

  /** The run's checkpoint, or undefined when it has none (unknown, or queued and not started). */
  async loadCheckpoint(runId: string): Promise<RunCheckpoint | undefined> {
    assertRunId(runId);
    const c = await this.#db();
    const row = (await c.query<{ checkpoint: string | null }>(
      `SELECT checkpoint::text AS checkpoint FROM ${c.schema}.runs WHERE run_id = $1`,
      [runId],
    )).rows[0];
    if (!row?.checkpoint) {
      this.#loaded.set(runId, "none");
      return undefined;
    }
    const checkpoint = parseCheckpoint(row.checkpoint, this.#where(runId), runId);
    this.#loaded.set(runId, fingerprint(checkpoint));
    return checkpoint;
  }

  /** The run's committed log entries in order (empty when the run is unknown). */
  readLog(runId: string): Promise<RunLogEntry[]> {
    return this.readLogFrom(runId, 0);
  }

  /**
   * The run's committed log entries from index `from` on (0-based): what a reader following a live
   * run (the dashboard) has not seen yet, read in one indexed query.
   */
  async readLogFrom(runId: string, from: number): Promise<RunLogEntry[]> {
    assertRunId(runId);
    const c = await this.#db();
    const rows = (await c.query<{ seq: number; entry: string }>(
      `SELECT seq, entry::text AS entry FROM ${c.schema}.run_log WHERE run_id = $1
       ORDER BY seq OFFSET $2`,
      [runId, Math.max(0, Math.floor(from))],
    )).rows;
    const entries: RunLogEntry[] = [];
    for (const row of rows) {
      let entry: unknown;
      try {
        entry = JSON.parse(row.entry);
      } catch (error) {
        entry = errorMessage(error);
      }
      const record = entry as Record<string, unknown> | null;
      if (
        typeof record !== "object" || record === null || Array.isArray(record) ||
        typeof record.type !== "string" || record.runId !== runId
      ) {
        throw new StepflowError(
          "RUN_LOG_CORRUPT",
          `Run log of ${runId} in ${
            this.#where(runId)
          } is corrupt at entry ${row.seq}: not a log entry of this run. ${
            entries.length > 0
              ? `The last good entry is #${from + entries.length} (${
                entries[entries.length - 1].type
              }).`
              : "No entry before it is readable."
          } The table was changed outside stepflow; restore it from a backup.`,
          { details: { runId, entry: row.seq } },
        );
      }
      entries.push(record as RunLogEntry);
    }
    return entries;
  }

  /**
   * Records a request to cancel the run (the dashboard's Cancel) on its row; the process driving
   * the run takes it with {@linkcode takeCancelRequest} and ends the run `cancelled`. Throws
   * `RUN_NOT_FOUND` when the store has no such run.
   */
  async requestCancel(runId: string): Promise<void> {
    assertRunId(runId);
    const c = await this.#db();
    const updated = (await c.query(
      `UPDATE ${c.schema}.runs SET cancel_requested_at = clock_timestamp() WHERE run_id = $1
       RETURNING run_id`,
      [runId],
    )).rows.length;
    if (updated === 0) {
      throw new StepflowError(
        "RUN_NOT_FOUND",
        `Cannot cancel run ${runId}: ${this.displayUrl} has no such run.`,
        { details: { runId } },
      );
    }
  }

  /**
   * Whether a cancel request is pending for the run, clearing it (one statement, so a request is
   * honoured once even when several processes look).
   */
  async takeCancelRequest(runId: string): Promise<boolean> {
    assertRunId(runId);
    const c = await this.#db();
    return (await c.query(
      `UPDATE ${c.schema}.runs SET cancel_requested_at = NULL
       WHERE run_id = $1 AND cancel_requested_at IS NOT NULL RETURNING run_id`,
      [runId],
    )).rows.length > 0;
  }

  /**
   * Takes the run's lease. Throws `RUN_LOCKED` naming the holder while its lease is live; takes an
   * expired lease over with a warning; throws `RUN_CHANGED` when the run moved on since this store
   * loaded its checkpoint. With `maxRuns` and `agent`, prunes the agent's oldest runs.
   */
  async lock(runId: string): Promise<RunLock> {
    assertRunId(runId);
    const mine = this.#held.get(runId);
    if (mine && !mine.lost) {
      throw new StepflowError(
        "RUN_LOCKED",
        `Run ${runId} is already being driven by this process (${this.owner}).`,
        { details: { runId, owner: this.owner } },
      );
    }
    const c = await this.#db();
    const s = c.schema;
    const outcome = await c.transaction(async (q) => {
      await q.query(`INSERT INTO ${s}.runs (run_id) VALUES ($1) ON CONFLICT (run_id) DO NOTHING`, [
        runId,
      ]);
      const row = (await q.query<LeaseRow>(
        `SELECT lease_owner, lease_expires_at, lease_expires_at > clock_timestamp() AS live,
           checkpoint IS NOT NULL AS has_checkpoint, status, log_entries, updated_at, agent,
           (SELECT coalesce(max(seq), 0) FROM ${s}.run_log WHERE run_id = $1)::integer AS seq
         FROM ${s}.runs WHERE run_id = $1 FOR UPDATE`,
        [runId],
      )).rows[0];
      if (row.lease_owner !== null && row.live && !deadLocalHolder(row.lease_owner)) {
        return { row, token: undefined };
      }
      const token = (await q.query<{ token: string }>(
        `UPDATE ${s}.runs SET lease_owner = $2, lease_token = nextval('${s}.lease_tokens'),
           lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond'
         WHERE run_id = $1 RETURNING lease_token::text AS token`,
        [runId, this.owner, this.leaseMs],
      )).rows[0].token;
      return { row, token };
    });
    const { row, token } = outcome;
    if (token === undefined) {
      throw new StepflowError(
        "RUN_LOCKED",
        `Run ${runId} is being driven by ${row.lease_owner} (its lease in ${this.displayUrl} runs until ${
          isoOf(row.lease_expires_at)
        } and is renewed while it works). Wait for it to finish; if that process is gone, its lease expires within ${this.leaseMs} ms and the run can be resumed.`,
        { details: { runId, owner: row.lease_owner } },
      );
    }
    if (row.lease_owner !== null) {
      this.#warn(
        row.live
          ? `run ${runId}: took over the lease of ${row.lease_owner}: that process is gone from this host.`
          : `run ${runId}: took over the lease of ${row.lease_owner}, which expired at ${
            isoOf(row.lease_expires_at)
          } without a heartbeat (that process is gone or stalled).`,
      );
    }
    const held: HeldLease = { token, seq: row.seq, pending: [], lost: false };
    this.#held.set(runId, held);
    this.#startHeartbeat();
    const release = () => this.#release(runId, held);
    const seen = this.#loaded.get(runId);
    this.#loaded.delete(runId);
    const now = row.has_checkpoint ? `${row.status}|${row.log_entries}|${row.updated_at}` : "none";
    if (seen !== undefined && seen !== now) {
      await release();
      throw new StepflowError(
        "RUN_CHANGED",
        `Run ${runId} changed while this process was preparing to continue it: another process drove it in the meantime (${this.displayUrl}). Run the command again to continue from its latest state.`,
        { details: { runId } },
      );
    }
    const agent = this.#options.agent;
    if (this.#options.maxRuns !== undefined && agent !== undefined) {
      try {
        await this.prune(this.#options.maxRuns, runId);
      } catch (error) {
        this.#warn(`pruning old runs of ${agent} failed: ${errorMessage(error)}`);
      }
    }
    return { release };
  }

  /**
   * Lists runs newest first (only `agent`'s when the store is scoped to one), with the worker that
   * holds each live run (`worker`) and runs submitted but not started yet (`queued`).
   */
  async list(): Promise<RunSummary[]> {
    const c = await this.#db();
    const agent = this.#options.agent;
    const rows = (await c.query<ListRow>(
      `SELECT ${LIST_COLUMNS} FROM ${c.schema}.runs ${
        agent !== undefined ? "WHERE agent = $1" : "WHERE agent <> ''"
      }`,
      agent !== undefined ? [agent] : [],
    )).rows;
    return sortNewestFirst(rows.map((row) => this.#summaryOf(row)));
  }

  /** The listing line of one run, or undefined when the store has no such run. */
  async summary(runId: string): Promise<RunSummary | undefined> {
    assertRunId(runId);
    const c = await this.#db();
    const agent = this.#options.agent;
    const row = (await c.query<ListRow>(
      `SELECT ${LIST_COLUMNS} FROM ${c.schema}.runs WHERE run_id = $1 AND ${
        agent !== undefined ? "agent = $2" : "agent <> ''"
      }`,
      agent !== undefined ? [runId, agent] : [runId],
    )).rows[0];
    return row ? this.#summaryOf(row) : undefined;
  }

  /**
   * One page of the listing, filtered, counted and paged by the server (the dashboard's runs list
   * over many thousand runs): `limit` runs after the first `offset` matching ones, newest first
   * (the order of {@linkcode list}), with the number of matching runs, of all runs, and the agent
   * names seen.
   */
  async listPage(query: RunPageQuery): Promise<RunPageResult> {
    const c = await this.#db();
    const s = c.schema;
    const scope = this.#options.agent;
    const params: unknown[] = [];
    const where = [scope !== undefined ? `agent = $${params.push(scope)}` : "agent <> ''"];
    const all = `SELECT count(*)::integer FROM ${s}.runs WHERE ${where.join(" AND ")}`;
    const agents = `SELECT coalesce(json_agg(a ORDER BY a COLLATE "C"), '[]'::json)::text FROM
      (SELECT DISTINCT agent AS a FROM ${s}.runs WHERE ${where.join(" AND ")}) d`;
    if (query.agent !== undefined) where.push(`agent = $${params.push(query.agent)}`);
    if (query.group !== undefined) {
      // A queued run has no checkpoint yet: its group is the one it was submitted with.
      where.push(
        `coalesce(checkpoint->'state'->>'group', request->>'group') = $${params.push(query.group)}`,
      );
    }
    if (query.status !== undefined) {
      where.push(`${await this.#shownStatusSql(c, params)} = $${params.push(query.status)}`);
    }
    const limit = `$${params.push(Math.max(0, Math.floor(query.limit)))}`;
    const offset = `$${params.push(Math.max(0, Math.floor(query.offset ?? 0)))}`;
    // Only the page's rows carry their checkpoints: the filter, count and order read narrow
    // columns, and the page's ids are joined back to their rows.
    const key = `coalesce(started_at, to_char(created_at AT TIME ZONE 'UTC',
      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) COLLATE "C"`;
    const result = await c.query<ListRow & { total: number; all_runs: number; agents: string }>(
      `WITH page AS (
         SELECT run_id AS id, ${key} AS sort_key FROM ${s}.runs WHERE ${where.join(" AND ")}
         ORDER BY sort_key DESC, run_id COLLATE "C" DESC LIMIT ${limit} OFFSET ${offset}
       )
       SELECT p.*, (SELECT count(*)::integer FROM ${s}.runs WHERE ${where.join(" AND ")}) AS total,
         (${all}) AS all_runs, (${agents}) AS agents
       FROM (SELECT 1) one LEFT JOIN LATERAL (
         SELECT ${LIST_COLUMNS}, page.sort_key FROM page JOIN ${s}.runs ON run_id = page.id
       ) p ON true
       ORDER BY p.sort_key DESC, p.run_id COLLATE "C" DESC`,
      params,
    );
    const first = result.rows[0];
    return {
      runs: result.rows.filter((r) => r.run_id !== null).map((row) => this.#summaryOf(row)),
      total: first?.total ?? 0,
      all: first?.all_runs ?? 0,
      agents: first ? JSON.parse(first.agents) : [],
    };
  }

  /**
   * Deletes the oldest ended runs of the store's agent so that at most `keep` remain; returns their
   * ids. Runs that can still be resumed, are leased, or are `except` are never deleted.
   *
   * @param keep how many runs to keep (the newest)
   * @param except a run never to delete (the one starting now); it counts as one of the kept
   * @param agent whose runs (default the store's `agent` option)
   */
  async prune(
    keep: number,
    except?: string,
    agent: string | undefined = this.#options.agent,
  ): Promise<string[]> {
    if (agent === undefined) {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        "PostgresRunStore.prune needs an agent (the store's agent option): retention is per agent.",
      );
    }
    const c = await this.#db();
    const s = c.schema;
    const rows = (await c.query<{ run_id: string }>(
      `DELETE FROM ${s}.runs WHERE run_id IN (
         SELECT run_id FROM (
           SELECT run_id, status, lease_expires_at,
             row_number() OVER (ORDER BY started_at DESC NULLS LAST, run_id DESC) AS rank
           FROM ${s}.runs WHERE agent = $1 AND run_id <> $2 AND checkpoint IS NOT NULL
         ) ranked
         WHERE rank > $3 AND status = ANY($4::text[])
           AND (lease_expires_at IS NULL OR lease_expires_at < clock_timestamp())
       ) RETURNING run_id`,
      [agent, except ?? "", except !== undefined ? keep - 1 : keep, [...TERMINAL]],
    )).rows;
    return rows.map((r) => r.run_id);
  }

  /**
   * Asks every drive in this process to stop after its next committed iteration: that checkpoint is
   * written, then `RUN_SUSPENDED` is thrown and the lease released (graceful worker shutdown). A
   * final checkpoint (the run ended) is not interrupted.
   */
  suspendAll(): void {
    this.#suspending = true;
  }

  /** Releases every lease this store holds and closes its connection. */
  async close(): Promise<void> {
    for (const [runId, held] of [...this.#held]) await this.#release(runId, held).catch(() => {});
    this.#stopHeartbeat();
    const pending = this.#connection;
    this.#connection = undefined;
    if (pending) await (await pending.catch(() => undefined))?.close();
  }

  /** The shared pool, migrated (opened on first use). */
  #db(): Promise<PgConnection> {
    if (!this.#connection) {
      const pending = openPgConnection(this.#url, this.#options);
      this.#connection = pending;
      pending.catch(() => {
        if (this.#connection === pending) this.#connection = undefined;
      });
    }
    return this.#connection;
  }

  #lease(runId: string, what: string): HeldLease {
    const held = this.#held.get(runId);
    if (!held) {
      throw new StepflowError(
        "RUN_NOT_LOCKED",
        `Cannot ${what} run ${runId}: the PostgreSQL store writes a run only under its lease. Call lock(${
          JSON.stringify(runId)
        }) first (the runner does).`,
        { details: { runId } },
      );
    }
    if (held.lost) throw this.#lostError(runId);
    return held;
  }

  #lostError(runId: string): StepflowError {
    return new StepflowError(
      "RUN_LOCK_LOST",
      `Run ${runId}: another worker took over its lease in ${this.displayUrl} after this process (${this.owner}) stopped renewing it for ${this.leaseMs} ms; this iteration was not recorded, and this process stops driving the run so the two cannot interleave.`,
      { details: { runId, owner: this.owner } },
    );
  }

  async #release(runId: string, held: HeldLease): Promise<void> {
    if (this.#held.get(runId) !== held) return;
    this.#held.delete(runId);
    if (this.#held.size === 0) this.#stopHeartbeat();
    if (held.lost) return;
    const c = await this.#db();
    const s = c.schema;
    // Entries of an iteration that never reached its checkpoint (the drive failed) are kept: they
    // say what happened. The same fencing applies.
    await c.query(
      `WITH r AS (
         UPDATE ${s}.runs SET lease_owner = NULL, lease_token = NULL,
           lease_expires_at = clock_timestamp()
         WHERE run_id = $1 AND lease_token = $2::bigint RETURNING run_id
       )
       INSERT INTO ${s}.run_log (run_id, seq, entry)
       SELECT r.run_id, $3::integer + o.n, o.e
       FROM r, json_array_elements($4::json) WITH ORDINALITY AS o(e, n)`,
      [runId, held.token, held.seq, JSON.stringify(held.pending)],
    );
    // A lease taken on a run that never got anywhere (an unknown id to resume) leaves no row.
    await c.query(
      `DELETE FROM ${s}.runs WHERE run_id = $1 AND checkpoint IS NULL AND request IS NULL
         AND lease_owner IS NULL AND NOT EXISTS (SELECT 1 FROM ${s}.run_log WHERE run_id = $1)`,
      [runId],
    );
  }

  #startHeartbeat(): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => void this.#renew(), this.#heartbeatMs);
    Deno.unrefTimer(this.#heartbeat);
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat === undefined) return;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  async #renew(): Promise<void> {
    const held = [...this.#held].filter(([, h]) => !h.lost);
    if (held.length === 0) return;
    try {
      const c = await this.#db();
      const renewed = new Set(
        (await c.query<{ token: string }>(
          `UPDATE ${c.schema}.runs SET lease_expires_at = clock_timestamp() + $2 * interval '1 millisecond'
           WHERE lease_token = ANY($1::bigint[]) RETURNING lease_token::text AS token`,
          [held.map(([, h]) => h.token), this.leaseMs],
        )).rows.map((r) => r.token),
      );
      for (const [runId, h] of held) {
        if (renewed.has(h.token) || this.#held.get(runId) !== h) continue;
        h.lost = true;
        this.#warn(`run ${runId}: its lease was taken over by another worker; stopping it here.`);
      }
    } catch (error) {
      this.#warn(`renewing run leases in ${this.displayUrl} failed: ${errorMessage(error)}`);
    }
  }

  #where(runId: string): string {
    return `${this.displayUrl} (schema ${
      this.#options.schema ?? "stepflow"
    }, table runs, run ${runId})`;
  }

  /**
   * The SQL of a row's status as {@linkcode shownStatus} shows it, for the status filter: a driven
   * status is `interrupted` unless a live lease holds the run. A lease of a `host:pid` owner on
   * this host whose process is gone is not live ({@linkcode deadLocalHolder}); those owners are
   * found first (a process check SQL cannot make) and passed as a parameter.
   */
  async #shownStatusSql(c: PgConnection, params: unknown[]): Promise<string> {
    const driven = `$${params.push(OPEN_RUN_STATUSES)}::text[]`;
    const owners = (await c.query<{ owner: string }>(
      `SELECT DISTINCT lease_owner AS owner FROM ${c.schema}.runs
       WHERE starts_with(lease_owner, $1) AND status = ANY($2::text[])
         AND lease_expires_at > clock_timestamp()`,
      [`${hostName()}:`, OPEN_RUN_STATUSES],
    )).rows.map((r) => r.owner).filter(deadLocalHolder);
    const dead = `$${params.push(owners)}::text[]`;
    const live = `coalesce(lease_owner IS NOT NULL AND lease_expires_at > clock_timestamp()
      AND NOT lease_owner = ANY(${dead}), false)`;
    return `(CASE WHEN status = ANY(${driven}) AND NOT ${live} THEN 'interrupted' ELSE status END)`;
  }

  #summaryOf(row: ListRow): RunSummary {
    let summary: RunSummary;
    if (row.checkpoint) {
      try {
        summary = summarizeCheckpoint(
          parseCheckpoint(row.checkpoint, this.#where(row.run_id), row.run_id),
        );
      } catch (error) {
        summary = this.#bareSummary(row, errorMessage(error));
      }
    } else if (row.submitted) {
      summary = { ...this.#bareSummary(row), status: "queued" };
      if (isValidRunGroup(row.request_group)) summary.group = row.request_group;
    } else {
      summary = this.#bareSummary(
        row,
        "no checkpoint: the process stopped before its first checkpoint",
      );
    }
    if (row.given_up !== null && isOpenStatus(row.status ?? undefined)) {
      // Held by the workers (a resume that needs a person): open, shown interrupted, with why.
      summary.error = row.given_up;
    } else if (row.given_up !== null) {
      // The queue gave the run up: whatever its checkpoint says, no worker will drive it again.
      summary.status = "failed";
      summary.error = row.given_up;
      if (row.given_up_at !== null) summary.updatedAt = row.given_up_at;
      delete summary.live;
      return summary;
    }
    const live = row.live === true && !deadLocalHolder(row.lease_owner ?? "");
    const open = isOpenStatus(summary.status);
    if (open) summary.live = live;
    if (live && row.lease_owner) summary.worker = row.lease_owner;
    return summary;
  }

  #bareSummary(row: ListRow, problem?: string): RunSummary {
    const summary: RunSummary = {
      runId: row.run_id,
      agent: row.agent,
      status: "running",
      startedAt: row.started_at ?? row.created_at,
      updatedAt: row.started_at ?? row.created_at,
    };
    if (problem !== undefined) summary.problem = problem;
    return summary;
  }
}

interface LeaseRow {
  lease_owner: string | null;
  lease_expires_at: Date | null;
  live: boolean | null;
  has_checkpoint: boolean;
  status: string | null;
  log_entries: number;
  updated_at: string | null;
  agent: string;
  seq: number;
}

/** What {@linkcode PostgresRunStore.listPage} selects. */
export interface RunPageQuery {
  /** Only runs of this agent. */
  agent?: string;
  /** Only runs started in this group (`RunOptions.group`). */
  group?: string;
  /**
   * Only runs shown with this status (`queued` for submitted runs not started yet, `interrupted`
   * for a running or paused run no live lease holds: the status the listing shows).
   */
  status?: string;
  /** Matching runs to skip (newest first). */
  offset?: number;
  /** At most this many runs. */
  limit: number;
}

/** A page of the listing. */
export interface RunPageResult {
  /** The runs of the page, newest first. */
  runs: RunSummary[];
  /** Runs matching the filter. */
  total: number;
  /** Runs in the store (in the store's agent scope). */
  all: number;
  /** Agent names of all runs, sorted. */
  agents: string[];
}

const LIST_COLUMNS =
  `run_id, agent, status, checkpoint::text AS checkpoint, request IS NOT NULL AS submitted,
   lease_owner, lease_owner IS NOT NULL AND lease_expires_at > clock_timestamp() AS live,
   started_at, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
   request->>'group' AS request_group,
   given_up, to_char(given_up_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS given_up_at`;

interface ListRow {
  run_id: string;
  agent: string;
  status: string | null;
  checkpoint: string | null;
  submitted: boolean;
  lease_owner: string | null;
  live: boolean | null;
  started_at: string | null;
  created_at: string;
  given_up: string | null;
  given_up_at: string | null;
  request_group: string | null;
}

/**
 * True when a lease's owner is a default `host:pid` owner on this host whose process is gone: its
 * lease need not run out (the file lock judges a local holder the same way).
 */
function deadLocalHolder(owner: string): boolean {
  const host = hostName();
  if (!owner.startsWith(`${host}:`)) return false;
  const pid = Number(owner.slice(host.length + 1));
  return Number.isInteger(pid) && pid !== Deno.pid && !pidAlive(pid);
}

function fingerprint(checkpoint: RunCheckpoint): string {
  return `${checkpoint.status}|${checkpoint.logEntries}|${checkpoint.updatedAt}`;
}

function isoOf(value: Date | string | null): string {
  if (value instanceof Date) return value.toISOString();
  return value ?? "?";
}
