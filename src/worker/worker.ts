/**
 * A worker: takes runs from the queue and drives them with the step-flow runner against the
 * PostgreSQL store, on any machine that reaches the database.
 *
 * - The run's lease (see `PostgresRunStore`) makes one worker drive a run at a time; a job for a run
 *   that another worker holds, or that ended, is completed without doing anything.
 * - A worker that dies (SIGKILL, power loss) stops renewing its leases; once they expire, any
 *   worker re-queues the run (`claimOrphans`, `reapOrphans`) and the next one resumes it
 *   from its last committed iteration. Only the iteration in flight is executed again.
 * - `stop()` (SIGTERM) lets each run finish its iteration in flight, commits it, releases the lease
 *   and puts the run back on the queue.
 * - Agents come from the worker's own agent root; a run whose recorded content hash differs from
 *   the worker's copy of the agent is refused (`AGENT_DEFINITION_MISMATCH`) and left queued.
 * - A run whose job failed its last retry is marked `failed` with the reason
 *   ({@linkcode markGivenUp}): no worker would take it again.
 * - A run whose resume stops at a tool call that was running when its worker died and may not run
 *   twice (`TOOL_CALL_UNFINISHED`) is not retried: retrying cannot help. It is held
 *   (`markHeld`): open, shown `interrupted` with the error's message, until someone
 *   resumes it by hand or submits the resume (`--resume RUN_ID --rerun-unfinished-call --submit`).
 *   That permission is read by the worker that resumes the run only once it holds the run's lock,
 *   and stays until the calls it covers ran again (`RerunPermission`).
 * - A fan-out step's children are queued as runs of their own and the parent gives its slot back
 *   while they run (`fan_out_jobs.ts`).
 *
 * The worker's parts live in files of their own: what one job does (`run_driver.ts`: its checks,
 * its drive, what the drive's end means for the queue), the fan-out children's queue
 * (`fan_out_jobs.ts`), the options (`worker_options.ts`); this file starts and stops them.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { openRunQueue, type RunQueue } from "./queue.ts";
import { markGivenUp } from "./submissions.ts";
import { reapOrphans, RunDriver } from "./run_driver.ts";
import type { WorkerOptions } from "./worker_options.ts";

export {
  DEFAULT_RATE_LIMIT_YIELD_MS,
  MAX_RATE_LIMIT_YIELDS,
  type SubmittedRequest,
  type WorkerOptions,
} from "./worker_options.ts";

/** A running worker. */
export interface RunWorker {
  /** The lease owner name of this worker. */
  readonly owner: string;
  /**
   * Graceful shutdown: takes no more runs, lets each run in flight commit its current iteration,
   * releases its lease and re-queues it; resolves once every run is handed back.
   */
  stop(): Promise<void>;
}

/**
 * Why `agentRoot` cannot be a worker's folder of agents, or undefined when it can: it must be a
 * directory holding at least one agent folder (`<name>/agent.json`). A worker started on anything
 * else (a file, `/dev/null`, a typo) would take every run from the queue and fail each one.
 *
 * @example
 * ```ts
 * import { agentRootProblem } from "./worker.ts";
 * console.log(await agentRootProblem("/dev/null")); // "/dev/null is not a folder …"
 * ```
 */
export async function agentRootProblem(agentRoot: string): Promise<string | undefined> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(agentRoot);
  } catch (error) {
    return error instanceof Deno.errors.NotFound
      ? `${agentRoot} does not exist`
      : `${agentRoot} cannot be read (${errorMessage(error)})`;
  }
  if (!info.isDirectory) return `${agentRoot} is not a folder`;
  try {
    for await (const entry of Deno.readDir(agentRoot)) {
      if (!entry.isDirectory && !entry.isSymlink) continue;
      const agent = await Deno.stat(`${agentRoot}/${entry.name}/agent.json`).catch(() => undefined);
      if (agent?.isFile) return undefined;
    }
  } catch (error) {
    return `${agentRoot} cannot be read (${errorMessage(error)})`;
  }
  return `${agentRoot} holds no agent folder (no <name>/agent.json)`;
}

/**
 * Starts a worker: connects the store and the queue, re-queues orphaned runs periodically, and
 * drives runs from the queue, `concurrency` at a time.
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
 */
export async function startWorker(options: WorkerOptions): Promise<RunWorker> {
  const concurrency = options.concurrency ?? 1;
  if (!(Number.isInteger(concurrency) && concurrency > 0 && concurrency <= 1000)) {
    throw new StepflowError(
      "WORKER_OPTION_INVALID",
      `Worker concurrency must be an integer from 1 to 1000, got ${concurrency}.`,
    );
  }
  const agentsProblem = await agentRootProblem(options.agentRoot);
  if (agentsProblem) {
    throw new StepflowError(
      "WORKER_OPTION_INVALID",
      `The worker's agentRoot: ${agentsProblem}. Point it at the folder of the agent folders the runs were submitted with (each <name>/agent.json).`,
      { details: { agentRoot: options.agentRoot } },
    );
  }
  const log = options.log ?? ((line: string) => console.error(line));
  const store = new PostgresRunStore(options.store, {
    ...(options.schema !== undefined ? { schema: options.schema } : {}),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
    ...(options.owner !== undefined ? { owner: options.owner } : {}),
    maxConnections: concurrency + 4,
    onWarning: (m) => log(`warning: ${m}`),
  });
  // Connect (and migrate) before taking jobs: a bad URL fails here, not in every job.
  await store.list().catch(async (error) => {
    await store.close();
    throw error;
  });
  let queue: RunQueue;
  try {
    queue = await openRunQueue(options.store, {
      ...(options.schema !== undefined ? { schema: options.schema } : {}),
      ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
      ...(options.jobRetryLimit !== undefined ? { retryLimit: options.jobRetryLimit } : {}),
      onGiveUp: async (runId, attempts, lastError) => {
        const message =
          `the queue gave it up after ${attempts} failed attempts (last: ${lastError}). No worker will take it again; fix the cause, then submit the run again (stepflow submit).`;
        let marked: boolean;
        try {
          marked = await markGivenUp(store, runId, message);
        } catch (error) {
          log(`error: run ${runId}: ${message} Recording it failed (${errorMessage(error)}).`);
          return;
        }
        log(
          `error: run ${runId}: ${message} ${
            marked
              ? "The runs list shows it failed."
              : "Not marked failed: another worker holds it, or it ended."
          }`,
        );
      },
      onWarning: (m) => log(`warning: ${m}`),
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  const driver = new RunDriver(options, store, queue, log);
  const reapEveryMs = Math.max(250, Math.floor(store.leaseMs / 2));
  const reap = () => reapOrphans(store, queue, log, [...driver.driving.keys()]);
  const reaper = setInterval(() => void reap(), reapEveryMs);
  await reap();
  await queue.work(concurrency, (runId, job) => driver.track(runId, job));
  log(
    `worker ${store.owner}: taking runs (concurrency ${concurrency}, agents in ${options.agentRoot})`,
  );

  let stopped: Promise<void> | undefined;
  return {
    owner: store.owner,
    stop() {
      stopped ??= (async () => {
        driver.stopping = true;
        clearInterval(reaper);
        store.suspendAll();
        const handing = [...driver.inFlight];
        if (handing.length > 0) {
          log(
            `worker ${store.owner}: stopping; committing ${handing.length} iteration(s) in flight`,
          );
        }
        await Promise.all(handing);
        await queue.stop({ graceful: true, timeoutMs: 5_000 });
        await store.close();
        log(`worker ${store.owner}: stopped`);
      })();
      return stopped;
    },
  };
}
