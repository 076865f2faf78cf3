/**
 * The run queue: a thin layer over pg-boss (a job queue on PostgreSQL using `SKIP LOCKED`), loaded
 * on first use. A job only says "drive run X"; the run itself (request, checkpoint, lease) lives in
 * the run store, so a duplicate or stale job is harmless: the worker that takes it finds the run
 * leased by another worker, or ended, and completes the job without doing anything.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import { redactUrl } from "../store/pg_connection.ts";
import { loadPgPackage } from "../store/pg_loader.ts";

/** The pg-boss queue that carries runs. */
export const RUN_QUEUE = "stepflow-runs";

/** What a worker does with a job's run. */
export type RunJobHandler = (runId: string) => Promise<void>;

/** Options of {@linkcode openRunQueue}. */
export interface RunQueueOptions {
  /** The run store's schema; the queue's tables live in `<schema>_queue` (default `stepflow`). */
  schema?: string;
  /** How often idle workers poll for jobs when no notification arrives (default 2000 ms). */
  pollMs?: number;
  /** Receives pg-boss errors and warnings. */
  onWarning?: (message: string) => void;
}

/** A connection to the run queue. */
export interface RunQueue {
  /** Queues a run to be driven by a worker. */
  send(runId: string): Promise<void>;
  /** Starts taking jobs, at most `concurrency` at a time, each given to `handler`. */
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
  work(
    name: string,
    options: Record<string, unknown>,
    handler: (jobs: { id: string; data: { runId?: unknown } }[]) => Promise<unknown>,
  ): Promise<string>;
}

interface PgBossModule {
  PgBoss?: new (options: Record<string, unknown>) => PgBossInstance;
  default?: new (options: Record<string, unknown>) => PgBossInstance;
}

/** A job is retried this often (a store outage, a worker without the agent) before pg-boss gives up. */
const JOB_RETRY_LIMIT = 20;

/**
 * Connects to the run queue in the database at `url` (creating pg-boss's schema and the queue on
 * first use).
 *
 * @throws {StepflowError} `RUN_QUEUE_UNAVAILABLE` when pg-boss cannot start on that database
 */
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
  const boss = new PgBoss({
    connectionString: url,
    schema: `${options.schema ?? "stepflow"}_queue`,
    application_name: "stepflow-queue",
    useListenNotify: true,
    schedule: false,
    max: 4,
  });
  boss.on("error", (error) => warn(`run queue: ${errorMessage(error)}`));
  boss.on("warning", (w) => {
    const message = (w as { message?: unknown })?.message;
    // LISTEN/NOTIFY missing only means polling: not worth a line per worker.
    if (typeof message === "string" && !/listen/i.test(message)) warn(`run queue: ${message}`);
  });
  try {
    await boss.start();
    await boss.createQueue(RUN_QUEUE, {
      retryLimit: JOB_RETRY_LIMIT,
      retryDelay: 1,
      retryBackoff: true,
      retryDelayMax: 60,
      // A job is only a pointer to a run: the run's own lease guards it. A long run's job expiring
      // is harmless (the retry finds the run leased or ended).
      expireInSeconds: 86_400,
      notify: true,
    });
  } catch (error) {
    await boss.stop({ graceful: false, close: true }).catch(() => {});
    throw new StepflowError(
      "RUN_QUEUE_UNAVAILABLE",
      `Cannot open the run queue (pg-boss) at ${redactUrl(url)}: ${
        errorMessage(error)
      }. Check the store URL and that this user may create schemas in the database.`,
      { cause: error },
    );
  }
  const pollingIntervalSeconds = Math.max(0.5, (options.pollMs ?? 2000) / 1000);
  return {
    async send(runId) {
      await boss.send(RUN_QUEUE, { runId });
    },
    async work(concurrency, handler) {
      await boss.work(
        RUN_QUEUE,
        { batchSize: 1, localConcurrency: concurrency, pollingIntervalSeconds },
        async (jobs) => {
          for (const job of jobs) {
            const runId = job.data?.runId;
            if (typeof runId !== "string") {
              warn(`run queue: job ${job.id} names no run; dropped.`);
              continue;
            }
            await handler(runId);
          }
        },
      );
    },
    async stop({ graceful = true, timeoutMs = 30_000 } = {}) {
      await boss.stop({ graceful, timeout: timeoutMs, close: true });
    },
  };
}
