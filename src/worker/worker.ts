/**
 * A worker: takes runs from the queue and drives them with the step-flow runner against the
 * PostgreSQL store, on any machine that reaches the database.
 *
 * - The run's lease (see `PostgresRunStore`) makes one worker drive a run at a time; a job for a run
 *   that another worker holds, or that ended, is completed without doing anything.
 * - A worker that dies (SIGKILL, power loss) stops renewing its leases; once they expire, any
 *   worker re-queues the run ({@linkcode claimOrphans}) and the next one resumes it
 *   from its last committed iteration. Only the iteration in flight is executed again.
 * - `stop()` (SIGTERM) lets each run finish its iteration in flight, commits it, releases the lease
 *   and puts the run back on the queue.
 * - Agents come from the worker's own agent root; a run whose recorded content hash differs from
 *   the worker's copy of the agent is refused (`AGENT_DEFINITION_MISMATCH`) and left queued.
 * - A run whose job failed its last retry is marked `failed` with the reason
 *   ({@linkcode markGivenUp}): no worker would take it again.
 * - A run whose resume stops at a tool call that was running when its worker died and may not run
 *   twice (`TOOL_CALL_UNFINISHED`) is not retried: retrying cannot help. It is held
 *   ({@linkcode markHeld}): open, shown `interrupted` with the error's message, until someone
 *   resumes it by hand or submits the resume (`--resume RUN_ID --rerun-unfinished-call --submit`).
 *   That permission is read by the worker that resumes the run only once it holds the run's lock,
 *   and stays until the calls it covers ran again ({@linkcode RerunPermission}).
 *
 * @module
 */
import { plainCommandLine } from "../invocation.ts";
import type { PermissionMode } from "../definition/permission_rule.ts";
import type { ModelPricing, RunBudget } from "../definition/schema.ts";
import { loadAgentDefinition } from "../definition/load.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { StepFlowRunner } from "../flow/runner.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import {
  type BackendChoice,
  mergeBackendChoice,
  recordableChoice,
  recordedBackendChoice,
} from "../llm/backend_choice.ts";
import { createBackend } from "../llm/factory.ts";
import type { LlmBackend } from "../llm/types.ts";
import { isOpenStatus, NOT_ENDED_STATUSES } from "../run_statuses.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { agentContentHash } from "./agent_hash.ts";
import { openRunQueue, type RunJobInfo, type RunQueue } from "./queue.ts";
import { RateLimitYield } from "../llm/retry.ts";
import { defaultModelOf } from "../llm/model_chain.ts";
import { clockTime } from "../events/model_notice_text.ts";
import {
  claimOrphans,
  clearRerunPermission,
  deferredUntil,
  markDeferred,
  markGivenUp,
  markHeld,
  markTaken,
  type RerunPermission,
  rerunPermissionOf,
  submissionOf,
} from "./submissions.ts";

/** Options of {@linkcode startWorker}. */
export interface WorkerOptions {
  /** The PostgreSQL URL of the store and queue. */
  store: string;
  /** Where the agent folders are (each `<agentRoot>/<name>/agent.json`). */
  agentRoot: string;
  /** Runs driven at once (default 1). */
  concurrency?: number;
  /** The working directory given to backends (default the process's). */
  cwd?: string;
  /** Schema of the store (default `stepflow`; the queue uses `<schema>_queue`). */
  schema?: string;
  /** Lease of a run without heartbeat (default 30 000 ms). */
  leaseMs?: number;
  /** Heartbeat of held leases (default a third of the lease). */
  heartbeatMs?: number;
  /**
   * How often an idle worker looks for a job in the queue (default 2000 ms, at least 100), besides
   * being woken at once when a run is queued (the queue's notification).
   */
  pollMs?: number;
  /**
   * Retries of a failed job before the queue gives it up (default 20, with backoff up to 60 s);
   * applies when this worker creates the queue.
   */
  jobRetryLimit?: number;
  /** The lease owner shown by `--runs` (default `host:pid`). */
  owner?: string;
  /**
   * The backend flags of this worker (`--backend`, `--script` as an absolute path, `--model`,
   * `--base-url`). A run continues on the backend it recorded (see `BackendChoice`); a new run
   * starts on the agent's `behavior.backend` (`claude-code` when unset) with the submitted model.
   * These override either, field by field.
   */
  backend?: Partial<BackendChoice>;
  /** Where backends read their credentials (default: the process environment). */
  env?: Record<string, string | undefined>;
  /**
   * A wait the model's server asks for (a `Retry-After`, a rate-limit reset) at least this long, in
   * ms, is not slept in a slot: the run stops where a taken-over run would, its slot takes the next
   * job, and the run is queued again for the reset time (default 5000; shorter waits are slept).
   * A run gives its slot back at most {@linkcode MAX_RATE_LIMIT_YIELDS} times in a row; after that
   * it waits in its slot, as the retry policy bounds (`maxAttempts`, `maxRateLimitWaitMs`).
   */
  rateLimitYieldMs?: number;
  /**
   * The backend of a run, built by the caller instead (tests); `backend` and the recorded choice
   * are then only recorded.
   */
  backendFor?: (definition: AgentDefinition, request: SubmittedRequest) => Promise<LlmBackend>;
  /** One line per run started, suspended or ended, and per problem. */
  log?: (line: string) => void;
}

/** What `--submit` records for a run (plain JSON). */
export interface SubmittedRequest {
  /** The agent's parameters (`{uv-*}`). */
  args?: Record<string, unknown>;
  /** `{input_text}`. */
  inputText?: string;
  /** `--max-iterations`. */
  maxIterations?: number;
  /** `--model`. */
  model?: string;
  /** `--fallback-model` names: models tried after each call's own, in order. */
  fallbackModels?: string[];
  /** `--group`: the group the run starts in (`RunOptions.group`). */
  group?: string;
  /** `--permission-mode`: the permission mode of every step (`RunOptions.permissionMode`). */
  permissionMode?: PermissionMode;
  /** `--budget-usd`, `--budget-tokens`: the run's budget (the runner's `budget`). */
  budget?: RunBudget;
  /**
   * `--pricing FILE`, `STEPFLOW_PRICING` of the submitting process: the prices read there (the
   * runner's `pricing`), since the workers may not see those files.
   */
  pricing?: Record<string, ModelPricing>;
  /**
   * `--resume RUN_ID --rerun-unfinished-call --submit`: a resume may run again the tool calls
   * started before that log line (`RunOptions.rerunUnfinishedCall`), read by the worker that holds
   * the run's lock ({@linkcode RerunPermission}).
   */
  rerunUnfinishedCall?: RerunPermission;
}

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

const OPEN: ReadonlySet<string> = new Set(NOT_ENDED_STATUSES);

/** The default {@linkcode WorkerOptions.rateLimitYieldMs}. */
export const DEFAULT_RATE_LIMIT_YIELD_MS = 5_000;

/**
 * How many times in a row a run gives its slot back for a rate-limit wait; the next wait is slept
 * in the slot, so a server that keeps refusing ends in the retry policy's error (or a fallback).
 */
export const MAX_RATE_LIMIT_YIELDS = 3;

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
// Long because: the worker's parts — the agent cache, `drive`, the orphan reaper, the queue and its
// stop — share one closure's state (runs in flight, the stopping flag, the store's pool); each is a
// named inner function read in order.
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
  const cwd = options.cwd ?? Deno.cwd();
  const inFlight = new Set<Promise<void>>();
  let stopping = false;

  // Loading a definition (files, schemas compiled, prompts scanned) costs tens of milliseconds of
  // CPU, more than a short run's own work: a loaded one is reused for as long as its folder's
  // content hash, taken afresh for every run, is unchanged.
  const agents = new Map<string, { definition: AgentDefinition; hash: string }>();
  const agentFor = async (name: string) => {
    const known = agents.get(name);
    if (known && await agentContentHash(known.definition.dir) === known.hash) return known;
    const definition = await loadAgentDefinition(name, { agentRoot: options.agentRoot, cwd });
    const loaded = { definition, hash: await agentContentHash(definition.dir) };
    agents.set(name, loaded);
    return loaded;
  };

  const drive = async (runId: string, job: RunJobInfo = {}): Promise<void> => {
    if (stopping) {
      await queue.send(runId, job);
      return;
    }
    // A job that came early for a run waiting out a rate limit (a duplicate) waits for its time.
    const deferred = await deferredUntil(store, runId);
    if (deferred) {
      await queue.send(runId, { ...job, startAfter: deferred });
      return;
    }
    await markTaken(store, runId);
    const submitted = await submissionOf(store, runId);
    if (!submitted) {
      log(`run ${runId}: not a submitted run in this store; job dropped.`);
      return;
    }
    if (!OPEN.has(submitted.status)) return; // ended meanwhile: a duplicate job
    if (submitted.held !== undefined) {
      const show = plainCommandLine({ action: "show", runId });
      log(`run ${runId}: held until someone continues it (\`${show}\` says how); job dropped.`);
      return;
    }
    const { definition, hash } = await agentFor(submitted.agent);
    if (hash !== submitted.agentHash) {
      const error = new StepflowError(
        "AGENT_DEFINITION_MISMATCH",
        `Run ${runId} was submitted with agent "${submitted.agent}" at ${submitted.agentHash}, but this worker's copy (${definition.dir}) is ${hash}. Deploy the same agent folder to every worker (or submit the run again against the deployed one); the run stays queued for a worker whose copy matches.`,
        { details: { runId, agent: submitted.agent, expected: submitted.agentHash, found: hash } },
      );
      log(`error: ${error.message}`);
      throw error;
    }
    const checkpoint = await store.loadCheckpoint(runId);
    if (checkpoint && !isOpenStatus(checkpoint.status)) return;
    const request = submitted.request as SubmittedRequest;
    // The backend the run recorded (a worker that died drove it), else the agent's with the
    // submitted model; this worker's backend flags override either, field by field.
    const behavior = definition.agent.behavior;
    const recorded = checkpoint ? recordedBackendChoice(checkpoint.state) : undefined;
    const choice = mergeBackendChoice(
      recorded ?? {
        backend: behavior.backend ?? DEFAULT_BACKEND,
        ...(request.model !== undefined ? { model: request.model } : {}),
        ...(request.fallbackModels?.length ? { fallbackModels: request.fallbackModels } : {}),
      },
      options.backend ?? {},
    );
    const model = choice.model ?? defaultModelOf(behavior.model);
    const warn = (m: string) => log(`warning: run ${runId}: ${m}`);
    const backend = options.backendFor
      ? await options.backendFor(definition, request)
      : await createBackend({
        name: choice.backend,
        ...(model !== undefined ? { model } : {}),
        ...(choice.baseUrl !== undefined ? { baseUrl: choice.baseUrl } : {}),
        ...(choice.script !== undefined ? { script: choice.script } : {}),
        ...(options.env ? { env: options.env } : {}),
        // Able to walk model chains with this worker's options.
        fallbackModels: [...(choice.fallbackModels ?? [])],
        onWarning: warn,
      });
    const yields = job.rateLimitYields ?? 0;
    const runner = new StepFlowRunner(definition, {
      backend,
      store,
      onWarning: warn,
      ...(request.maxIterations !== undefined ? { maxTotalIterations: request.maxIterations } : {}),
      ...(choice.model !== undefined ? { model: choice.model } : {}),
      // Long rate-limit waits give the slot back, a few times in a row at most.
      ...(yields < MAX_RATE_LIMIT_YIELDS
        ? { rateLimitYieldMs: options.rateLimitYieldMs ?? DEFAULT_RATE_LIMIT_YIELD_MS }
        : {}),
      ...(request.budget !== undefined ? { budget: request.budget } : {}),
      ...(request.pricing !== undefined ? { pricing: request.pricing } : {}),
    });
    log(`run ${runId} (${definition.name}): ${checkpoint ? "resuming" : "starting"}`);
    // The user's permission to run unfinished calls again is read only by the drive that holds
    // the run's lock (the runner asks once it does): a duplicate job losing the race never sees
    // it. It is not taken: it covers the calls started before its log line, so it survives this
    // worker dying before they ran again, and does not cover them once they started again.
    let seen: RerunPermission | undefined;
    const mayRerun = async (calls: readonly { startLine: number }[]) => {
      seen = await rerunPermissionOf(store, runId);
      return seen !== undefined && calls.every((call) => call.startLine < seen!.beforeLine);
    };
    try {
      const backendChoice = recordableChoice(choice);
      const result = await runner.run(
        checkpoint ? { resume: runId, cwd, backendChoice, rerunUnfinishedCall: mayRerun } : {
          runId,
          cwd,
          backendChoice,
          args: request.args ?? {},
          ...(request.inputText !== undefined ? { inputText: request.inputText } : {}),
          ...(request.group !== undefined ? { group: request.group } : {}),
          ...(request.permissionMode !== undefined
            ? { permissionMode: request.permissionMode }
            : {}),
        },
      );
      log(
        `run ${runId}: ${result.completionReason} after ${result.iterations} iteration${
          result.iterations === 1 ? "" : "s"
        }`,
      );
      // Ended or waiting: the calls a permission covered are behind the run.
      if (seen || request.rerunUnfinishedCall !== undefined) {
        await clearRerunPermission(store, runId).catch((error) =>
          warn(`removing its used rerun permission failed: ${errorMessage(error)}`)
        );
      }
    } catch (error) {
      const code = error instanceof StepflowError ? error.code : "";
      if (code === "RUN_SUSPENDED") {
        await queue.send(runId);
        log(`run ${runId}: iteration committed, lease released, back on the queue`);
        return;
      }
      if (error instanceof RateLimitYield) {
        const until = new Date(error.until);
        await markDeferred(store, runId, until);
        await queue.send(runId, { startAfter: until, rateLimitYields: yields + 1 });
        log(
          `run ${runId}: waiting for the rate limit until ${
            clockTime(until)
          } (${error.retry.reason}); slot given back, queued again for then`,
        );
        return;
      }
      if (code === "RUN_LOCKED" || code === "RUN_CHANGED" || code === "RUN_LOCK_LOST") {
        log(`run ${runId}: ${errorMessage(error)}`);
        return; // another worker drives it
      }
      if (code === "TOOL_CALL_UNFINISHED") {
        await hold(runId, definition.name, errorMessage(error), seen);
        return; // the job is done: retrying cannot help
      }
      log(`error: run ${runId}: ${errorMessage(error)}`);
      throw error;
    }
    const keep = definition.agent.logging?.maxFiles;
    if (keep !== undefined) {
      await store.prune(keep, runId, definition.name).catch((error) =>
        log(`warning: pruning runs of ${definition.name} failed: ${errorMessage(error)}`)
      );
    }
  };

  // A resume that needs a person: held with the error's message and both ways to continue.
  const hold = async (
    runId: string,
    agent: string,
    reason: string,
    seen: RerunPermission | undefined,
  ): Promise<void> => {
    const message =
      `${reason} The workers do not retry it (retrying cannot help): it stays interrupted until someone continues it, here with \`${
        plainCommandLine({ action: "resume", runId, args: ["--rerun-unfinished-call"] })
      }\` (add --store with this database's URL, or set STEPFLOW_STORE), or on the workers with \`${
        plainCommandLine({
          action: "resume",
          runId,
          args: ["--rerun-unfinished-call", "--submit"],
        })
      }\` (agent ${agent}).`;
    const held = await markHeld(store, runId, message, seen).catch((error) => {
      log(`warning: run ${runId}: recording why it is held failed (${errorMessage(error)})`);
      return false;
    });
    log(
      `error: run ${runId} (TOOL_CALL_UNFINISHED), held${
        held ? "" : " (not recorded: another worker holds it now, it ended, or it was handed back)"
      }: ${message}`,
    );
  };

  // The runs this worker drives right now (a count: two duplicate jobs of one run may be in flight).
  const driving = new Map<string, number>();
  const track = (runId: string, job?: RunJobInfo): Promise<void> => {
    driving.set(runId, (driving.get(runId) ?? 0) + 1);
    const work = drive(runId, job);
    const settled = work.catch(() => {}).finally(() => {
      inFlight.delete(settled);
      const left = (driving.get(runId) ?? 1) - 1;
      if (left > 0) driving.set(runId, left);
      else driving.delete(runId);
    });
    inFlight.add(settled);
    return work;
  };

  const reapEveryMs = Math.max(250, Math.floor(store.leaseMs / 2));
  const reap = async () => {
    try {
      // A run this worker drives is not its orphan, even between taking its job and its lease (a
      // slow agent load on a busy machine) or between releasing the lease and recording a hold.
      for (const runId of await claimOrphans(store, 100, [...driving.keys()])) {
        // A job of it still waits (a queued run behind others, a re-queued one no worker took
        // yet): that one is taken; a second would only be dropped.
        if (await queue.hasWaitingJob(runId)) continue;
        log(`run ${runId}: its worker is gone (lease expired); re-queued`);
        await queue.send(runId);
      }
    } catch (error) {
      log(`warning: looking for orphaned runs failed: ${errorMessage(error)}`);
    }
  };
  const reaper = setInterval(() => void reap(), reapEveryMs);
  await reap();
  await queue.work(concurrency, track);
  log(
    `worker ${store.owner}: taking runs (concurrency ${concurrency}, agents in ${options.agentRoot})`,
  );

  let stopped: Promise<void> | undefined;
  return {
    owner: store.owner,
    stop() {
      stopped ??= (async () => {
        stopping = true;
        clearInterval(reaper);
        store.suspendAll();
        const handing = [...inFlight];
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
