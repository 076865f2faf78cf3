/**
 * The run queue: a thin layer over pg-boss (a job queue on PostgreSQL using `SKIP LOCKED`), loaded
 * on first use. A job only says "drive run X"; the run itself (request, checkpoint, lease) lives in
 * the run store, so a duplicate or stale job is harmless: the worker that takes it finds the run
 * leased by another worker, or ended, and completes the job without doing anything. Every send
 * notifies the workers, whose idle slots wake at once (`queue_listener.ts`); their poll is only
 * the fallback.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import {
  pgPoolConfig,
  pgTimeoutError,
  pgTimeouts,
  redactUrl,
  trackPgWait,
} from "../store/pg_connection.ts";
import { loadPgPackage } from "../store/pg_loader.ts";
import { listenForRuns, runQueueChannel, type RunQueueListener } from "./queue_listener.ts";

/** The pg-boss queue that carries runs. */
export const RUN_QUEUE = "stepflow-runs";

/** What a job says besides its run. */
export interface RunJobInfo {
  /**
   * How many times in a row the run gave its slot back to wait out a rate limit (the worker bounds
   * it; absent: none).
   */
  rateLimitYields?: number;
}

/** How a run is queued: now, or from a time on. */
export interface SendOptions extends RunJobInfo {
  /** No worker takes the job before this time (a rate-limit reset). */
  startAfter?: Date;
}

/** What a worker does with a job's run. */
export type RunJobHandler = (runId: string, job: RunJobInfo) => Promise<void>;

/** Options of {@linkcode openRunQueue}. */
export interface RunQueueOptions {
  /** The run store's schema; the queue's tables live in `<schema>_queue` (default `stepflow`). */
  schema?: string;
  /**
   * How often an idle worker slot looks for a job (default 2000 ms, at least 100). With `listen`,
   * only the fallback for a notification that was lost.
   */
  pollMs?: number;
  /**
   * Whether `work` holds a `LISTEN` connection that wakes an idle slot the moment a run is queued
   * (default true; every `send` notifies). Without it, idle slots only poll (`pollMs`).
   */
  listen?: boolean;
  /**
   * How often a failed job is retried before pg-boss gives it up (default
   * {@linkcode JOB_RETRY_LIMIT}). Applies when this call creates the queue; an existing queue keeps
   * its own.
   */
  retryLimit?: number;
  /** Receives pg-boss errors and warnings. */
  onWarning?: (message: string) => void;
  /**
   * Told when a job failed its last attempt: pg-boss will not hand the run out again (default: a
   * warning through `onWarning`). Awaited before the slot takes its next job.
   */
  onGiveUp?: (runId: string, attempts: number, lastError: string) => void | Promise<void>;
}

/** A connection to the run queue. */
export interface RunQueue {
  /**
   * Queues a run to be driven by a worker — from `options.startAfter` on, when given (this
   * queue's idle slots then wake at that time; other workers find it at their next poll).
   */
  send(runId: string, options?: SendOptions): Promise<void>;
  /**
   * Starts taking jobs, at most `concurrency` at a time, each given to `handler`: a job is
   * completed when it resolves and failed (retried by pg-boss) when it rejects.
   */
  work(concurrency: number, handler: RunJobHandler): Promise<void>;
  /** Stops taking jobs; with `graceful`, waits up to `timeoutMs` for handlers in flight. */
  stop(options?: { graceful?: boolean; timeoutMs?: number }): Promise<void>;
}

interface PgBossInstance {
  on(event: "error" | "warning", listener: (value: unknown) => void): void;
  start(): Promise<unknown>;
  stop(options?: { graceful?: boolean; timeout?: number; close?: boolean }): Promise<void>;
  createQueue(name: string, options?: Record<string, unknown>): Promise<void>;
  send(name: string, data: object, options?: Record<string, unknown>): Promise<string | null>;
  fetch(
    name: string,
    options: Record<string, unknown>,
  ): Promise<RunJob[] | null>;
  complete(name: string, id: string): Promise<unknown>;
  getDb(): { executeSql(text: string, values?: unknown[]): Promise<unknown> };
  fail(name: string, id: string, data: object): Promise<unknown>;
}

/** A fetched job with pg-boss's metadata (`includeMetadata`). */
interface RunJob {
  id: string;
  data: { runId?: unknown; rateLimitYields?: unknown };
  retryCount?: number;
  retryLimit?: number;
}

interface PgBossModule {
  PgBoss?: new (options: Record<string, unknown>) => PgBossInstance;
  default?: new (options: Record<string, unknown>) => PgBossInstance;
}

/**
 * A job is retried this often (a store outage, a worker without the agent) before pg-boss gives
 * up, with backoff from 1 s to at most 60 s between attempts (about 15 minutes in all).
 */
export const JOB_RETRY_LIMIT = 20;

/**
 * Connects to the run queue in the database at `url` (creating pg-boss's schema and the queue on
 * first use).
 *
 * @throws {StepflowError} `RUN_QUEUE_UNAVAILABLE` when pg-boss cannot start on that database
 */
// Long because: the queue's slots, its sleepers woken by notifications, the listener and the stop
// share one closure's state (what is idle, what was heard while busy, whether it stops); each part
// is a named inner function or method read in order.
export async function openRunQueue(url: string, options: RunQueueOptions = {}): Promise<RunQueue> {
  const module = await loadPgPackage<PgBossModule>("pg-boss", "The run queue (workers, --submit)");
  const PgBoss = module.PgBoss ?? module.default;
  if (!PgBoss) {
    throw new StepflowError(
      "RUN_STORE_NOT_INSTALLED",
      "The npm package pg-boss exports no PgBoss.",
    );
  }
  const warn = options.onWarning ?? ((m: string) => console.warn(`[stepflow] ${m}`));
  // The store's connect and statement timeouts bound the queue's waits too.
  const timeouts = pgTimeouts(url);
  const displayUrl = redactUrl(url);
  const boss = new PgBoss({
    ...pgPoolConfig(url, timeouts),
    schema: `${options.schema ?? "stepflow"}_queue`,
    application_name: "stepflow-queue",
    schedule: false,
    max: 4,
  });
  boss.on("error", (error) => warn(`run queue: ${errorMessage(error)}`));
  boss.on("warning", (w) => {
    const message = (w as { message?: unknown })?.message;
    if (typeof message === "string") warn(`run queue: ${message}`);
  });
  try {
    await trackPgWait(displayUrl, async () => {
      await boss.start();
      await boss.createQueue(RUN_QUEUE, {
        retryLimit: options.retryLimit ?? JOB_RETRY_LIMIT,
        retryDelay: 1,
        retryBackoff: true,
        retryDelayMax: 60,
        // A job is only a pointer to a run: the run's own lease guards it. A long run's job expiring
        // is harmless (the retry finds the run leased or ended).
        expireInSeconds: 86_400,
      });
    });
  } catch (error) {
    await boss.stop({ graceful: false, close: true }).catch(() => {});
    throw pgTimeoutError(error, url, timeouts) ?? new StepflowError(
      "RUN_QUEUE_UNAVAILABLE",
      `Cannot open the run queue (pg-boss) at ${displayUrl}: ${
        errorMessage(error)
      }. Check the store URL and that this user may create schemas in the database.`,
      { cause: error },
    );
  }
  const giveUp = options.onGiveUp ??
    ((runId: string, attempts: number, lastError: string) =>
      warn(`run queue: gave up run ${runId} after ${attempts} attempts: ${lastError}`));
  const pollMs = Math.max(100, options.pollMs ?? 2000);
  const channel = runQueueChannel(`${options.schema ?? "stepflow"}_queue`);
  const slots: Promise<void>[] = [];
  const sleepers = new Set<() => void>();
  let listener: RunQueueListener | undefined;
  let stopping = false;
  // Notifications that came while no slot slept (a slot's fetch in flight may have missed the
  // job they announce): the next pauses are skipped, so no announced job waits for a poll.
  let unheard = 0;
  let slotCount = 0;
  const wakeOne = () => {
    const wake = sleepers.values().next().value;
    if (wake) wake();
    else unheard = Math.min(unheard + 1, slotCount);
  };
  const pause = () =>
    new Promise<void>((resolve) => {
      if (unheard > 0) {
        unheard--;
        resolve();
        return;
      }
      const wake = () => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, pollMs);
      sleepers.add(wake);
    });
  const slotLoop = async (handler: RunJobHandler): Promise<void> => {
    while (!stopping) {
      let jobs: RunJob[];
      try {
        jobs = await trackPgWait(
          displayUrl,
          () => boss.fetch(RUN_QUEUE, { batchSize: 1, includeMetadata: true }),
        ) ?? [];
      } catch (error) {
        warn(`run queue: fetching a job failed: ${errorMessage(error)}`);
        await pause();
        continue;
      }
      if (jobs.length === 0) {
        await pause();
        continue;
      }
      for (const job of jobs) {
        const runId = job.data?.runId;
        try {
          if (typeof runId !== "string") {
            warn(`run queue: job ${job.id} names no run; dropped.`);
          } else {
            const yields = job.data?.rateLimitYields;
            await handler(
              runId,
              typeof yields === "number" && Number.isInteger(yields) && yields > 0
                ? { rateLimitYields: yields }
                : {},
            );
          }
          await boss.complete(RUN_QUEUE, job.id);
        } catch (error) {
          // pg-boss retries the job (with backoff) up to its retry limit, then gives it up.
          const message = errorMessage(error);
          await boss.fail(RUN_QUEUE, job.id, { message }).catch((e) =>
            warn(`run queue: recording the failure of job ${job.id} failed: ${errorMessage(e)}`)
          );
          const attempts = (job.retryCount ?? 0) + 1;
          if (
            typeof runId === "string" && job.retryLimit !== undefined && attempts > job.retryLimit
          ) {
            try {
              await giveUp(runId, attempts, message);
            } catch (e) {
              warn(
                `run queue: reporting that run ${runId} was given up failed: ${errorMessage(e)}`,
              );
            }
          }
        }
      }
    }
  };
  /** Wakes for jobs queued for later: one idle slot at each job's start (cleared on stop). */
  const later = new Set<ReturnType<typeof setTimeout>>();
  return {
    async send(runId, sendOptions = {}) {
      const { startAfter, rateLimitYields } = sendOptions;
      const data = { runId, ...(rateLimitYields ? { rateLimitYields } : {}) };
      try {
        await trackPgWait(
          displayUrl,
          () => boss.send(RUN_QUEUE, data, startAfter ? { startAfter } : {}),
        );
      } catch (error) {
        throw pgTimeoutError(error, url, timeouts) ?? error;
      }
      if (startAfter) {
        // Nobody is told now (the job cannot be taken yet): an idle slot of this queue wakes at
        // its time, a little after so that the database clock has passed it too.
        const timer = setTimeout(() => {
          later.delete(timer);
          if (!stopping) wakeOne();
        }, Math.max(0, startAfter.getTime() - Date.now()) + 50);
        later.add(timer);
        return;
      }
      // After the job's insert committed, so the woken worker finds it. Only a hint: a failure
      // leaves the run to the workers' poll.
      await trackPgWait(
        displayUrl,
        () => boss.getDb().executeSql("SELECT pg_notify($1, $2)", [channel, runId]),
      ).catch((error) =>
        warn(
          `run queue: waking the workers for run ${runId} failed (${
            errorMessage(error)
          }); an idle worker takes it at its next poll.`,
        )
      );
    },
    async work(concurrency, handler) {
      // One fetch loop per slot (pg-boss `fetch` takes one job with SKIP LOCKED): a slot that
      // finishes a run takes the next job at once; an idle slot sleeps until a run is queued (a
      // notification wakes one idle slot) or its poll comes (`pollMs`).
      if ((options.listen ?? true) && !listener) {
        listener = await listenForRuns(url, timeouts, channel, {
          onRun: wakeOne,
          onReconnect: () => {
            for (const wake of [...sleepers]) wake();
          },
          warn,
        });
      }
      slotCount += concurrency;
      for (let i = 0; i < concurrency; i++) slots.push(slotLoop(handler));
    },
    async stop({ graceful = true, timeoutMs = 30_000 } = {}) {
      stopping = true;
      for (const timer of later) clearTimeout(timer);
      later.clear();
      for (const wake of [...sleepers]) wake();
      await listener?.close();
      if (graceful && slots.length > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          Promise.all(slots),
          new Promise((r) => timer = setTimeout(r, timeoutMs)),
        ]);
        clearTimeout(timer);
      }
      await trackPgWait(displayUrl, () => boss.stop({ graceful: false, close: true }));
    },
  };
}
