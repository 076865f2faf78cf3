/**
 * What a worker does with one job of the run queue ({@linkcode RunDriver.drive}): the checks that
 * make a duplicate or stale job harmless, the run's backend and runner, its drive, and what the
 * drive's end means for the queue — a fan-out child gives its place to the next one and may wake
 * its parent, a parent waiting for its children gives its slot back, a rate-limit wait goes back
 * on the queue for its time, a run a person must continue is held. The worker (`worker.ts`)
 * creates one driver and hands it every job; the orphan reaper is {@linkcode reapOrphans}.
 *
 * @module
 */
import { plainCommandLine } from "../invocation.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { loadAgentDefinition } from "../definition/load.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { FanOutSuspended } from "../flow/child_queue.ts";
import { StepFlowRunner } from "../flow/runner.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import {
  mergeBackendChoice,
  recordableChoice,
  recordedBackendChoice,
} from "../llm/backend_choice.ts";
import { createBackend } from "../llm/factory.ts";
import { defaultModelOf } from "../llm/model_chain.ts";
import { RateLimitYield } from "../llm/retry.ts";
import { clockTime } from "../events/model_notice_text.ts";
import { isOpenStatus, NOT_ENDED_STATUSES } from "../run_statuses.ts";
import type { RunCheckpoint } from "../store/types.ts";
import type { PostgresRunStore } from "../store/postgres.ts";
import { agentContentHash } from "./agent_hash.ts";
import { FanOutJobs } from "./fan_out_jobs.ts";
import type { RunJobInfo, RunQueue } from "./queue.ts";
import {
  claimOrphans,
  clearRerunPermission,
  deferredUntil,
  markDeferred,
  markHeld,
  markTaken,
  type RerunPermission,
  rerunPermissionOf,
  submissionOf,
  type SubmittedRun,
} from "./submissions.ts";
import {
  DEFAULT_RATE_LIMIT_YIELD_MS,
  MAX_RATE_LIMIT_YIELDS,
  type SubmittedRequest,
  type WorkerOptions,
} from "./worker_options.ts";

const OPEN: ReadonlySet<string> = new Set(NOT_ENDED_STATUSES);

/** A job's run, checked: submitted, open, not held, on this worker's copy of its agent. */
interface OpenedJob {
  submitted: SubmittedRun;
  definition: AgentDefinition;
  checkpoint: RunCheckpoint | undefined;
}

/** The worker's driver of its jobs (see the module documentation). */
export class RunDriver {
  /** Set by the worker's stop: a job taken from now on goes back on the queue. */
  stopping = false;
  /** The drives in flight (the worker's stop waits for them). */
  readonly inFlight: Set<Promise<void>> = new Set();
  readonly #options: WorkerOptions;
  readonly #store: PostgresRunStore;
  readonly #queue: RunQueue;
  readonly #log: (line: string) => void;
  readonly #cwd: string;
  /** Fan-out steps queue their children here: any worker takes them (fan_out_jobs.ts). */
  readonly #childJobs: FanOutJobs;
  /**
   * Loaded agents: loading a definition (files, schemas compiled, prompts scanned) costs tens of
   * milliseconds of CPU, more than a short run's own work, so a loaded one is reused for as long
   * as its folder's content hash, taken afresh for every run, is unchanged.
   */
  readonly #agents = new Map<string, { definition: AgentDefinition; hash: string }>();

  /**
   * @param options the worker's options
   * @param store the worker's store
   * @param queue the run queue
   * @param log the worker's log
   */
  constructor(
    options: WorkerOptions,
    store: PostgresRunStore,
    queue: RunQueue,
    log: (line: string) => void,
  ) {
    this.#options = options;
    this.#store = store;
    this.#queue = queue;
    this.#log = log;
    this.#cwd = options.cwd ?? Deno.cwd();
    this.#childJobs = new FanOutJobs(store, queue, (m) => log(`warning: ${m}`));
  }

  /**
   * The runs this worker drives right now, counted (two duplicate jobs of one run may be in
   * flight): never the orphan reaper's, even between taking a job and its lease (a slow agent load
   * on a busy machine) or between releasing the lease and recording a hold.
   */
  readonly driving: Map<string, number> = new Map();

  /** Drives the job's run, tracked in {@linkcode RunDriver.inFlight} until it settles. */
  track(runId: string, job?: RunJobInfo): Promise<void> {
    this.driving.set(runId, (this.driving.get(runId) ?? 0) + 1);
    const work = this.drive(runId, job);
    const settled = work.catch(() => {}).finally(() => {
      this.inFlight.delete(settled);
      const left = (this.driving.get(runId) ?? 1) - 1;
      if (left > 0) this.driving.set(runId, left);
      else this.driving.delete(runId);
    });
    this.inFlight.add(settled);
    return work;
  }

  /** The agent `name` from the worker's agent root (reused while its content is unchanged). */
  async #agentFor(name: string): Promise<{ definition: AgentDefinition; hash: string }> {
    const known = this.#agents.get(name);
    if (known && await agentContentHash(known.definition.dir) === known.hash) return known;
    const definition = await loadAgentDefinition(name, {
      agentRoot: this.#options.agentRoot,
      cwd: this.#cwd,
    });
    const loaded = { definition, hash: await agentContentHash(definition.dir) };
    this.#agents.set(name, loaded);
    return loaded;
  }

  /**
   * The job's run when this worker is to drive it; undefined (the job is done) when the worker
   * stops, the run waits out a rate limit, ended, is held, or is no submitted run.
   */
  async #open(runId: string, job: RunJobInfo): Promise<OpenedJob | undefined> {
    if (this.stopping) {
      await this.#queue.send(runId, job);
      return;
    }
    // A job that came early for a run waiting out a rate limit (a duplicate) waits for its time.
    const deferred = await deferredUntil(this.#store, runId);
    if (deferred) {
      await this.#queue.send(runId, { ...job, startAfter: deferred });
      return;
    }
    await markTaken(this.#store, runId);
    const submitted = await submissionOf(this.#store, runId);
    if (!submitted) {
      this.#log(`run ${runId}: not a submitted run in this store; job dropped.`);
      return;
    }
    if (!OPEN.has(submitted.status)) return; // ended meanwhile: a duplicate job
    if (submitted.held !== undefined) {
      const show = plainCommandLine({ action: "show", runId });
      this.#log(
        `run ${runId}: held until someone continues it (\`${show}\` says how); job dropped.`,
      );
      return;
    }
    const { definition, hash } = await this.#agentFor(submitted.agent);
    if (hash !== submitted.agentHash) {
      const error = new StepflowError(
        "AGENT_DEFINITION_MISMATCH",
        `Run ${runId} was submitted with agent "${submitted.agent}" at ${submitted.agentHash}, but this worker's copy (${definition.dir}) is ${hash}. Deploy the same agent folder to every worker (or submit the run again against the deployed one); the run stays queued for a worker whose copy matches.`,
        { details: { runId, agent: submitted.agent, expected: submitted.agentHash, found: hash } },
      );
      this.#log(`error: ${error.message}`);
      throw error;
    }
    const checkpoint = await this.#store.loadCheckpoint(runId);
    if (checkpoint && !isOpenStatus(checkpoint.status)) return;
    return { submitted, definition, checkpoint };
  }

  /** Drives one job's run (see the module documentation). */
  async drive(runId: string, job: RunJobInfo = {}): Promise<void> {
    const opened = await this.#open(runId, job);
    if (!opened) return;
    const { submitted, definition, checkpoint } = opened;
    const request = submitted.request as SubmittedRequest;
    // The backend the run recorded (a worker that died drove it), else the agent's with the
    // submitted model; this worker's backend flags override either, field by field.
    const behavior = definition.agent.behavior;
    const recorded = checkpoint ? recordedBackendChoice(checkpoint.state) : request.backendChoice;
    const choice = mergeBackendChoice(
      recorded ?? {
        backend: behavior.backend ?? DEFAULT_BACKEND,
        ...(request.model !== undefined ? { model: request.model } : {}),
        ...(request.fallbackModels?.length ? { fallbackModels: request.fallbackModels } : {}),
      },
      this.#options.backend ?? {},
    );
    const model = choice.model ?? defaultModelOf(behavior.model);
    const warn = (m: string) => this.#log(`warning: run ${runId}: ${m}`);
    const backend = this.#options.backendFor
      ? await this.#options.backendFor(definition, request)
      : await createBackend({
        name: choice.backend,
        ...(model !== undefined ? { model } : {}),
        ...(choice.baseUrl !== undefined ? { baseUrl: choice.baseUrl } : {}),
        ...(choice.script !== undefined ? { script: choice.script } : {}),
        ...(this.#options.env ? { env: this.#options.env } : {}),
        // Able to walk model chains with this worker's this.#options.
        fallbackModels: [...(choice.fallbackModels ?? [])],
        onWarning: warn,
      });
    const yields = job.rateLimitYields ?? 0;
    const runner = new StepFlowRunner(definition, {
      backend,
      store: this.#store,
      onWarning: warn,
      ...(request.maxIterations !== undefined ? { maxTotalIterations: request.maxIterations } : {}),
      ...(choice.model !== undefined ? { model: choice.model } : {}),
      // Long rate-limit waits give the slot back, a few times in a row at most.
      ...(yields < MAX_RATE_LIMIT_YIELDS
        ? { rateLimitYieldMs: this.#options.rateLimitYieldMs ?? DEFAULT_RATE_LIMIT_YIELD_MS }
        : {}),
      ...(request.budget !== undefined ? { budget: request.budget } : {}),
      ...(request.pricing !== undefined ? { pricing: request.pricing } : {}),
      childQueue: this.#childJobs,
    });
    this.#log(`run ${runId} (${definition.name}): ${checkpoint ? "resuming" : "starting"}`);
    // The user's permission to run unfinished calls again is read only by the drive that holds
    // the run's lock (the runner asks once it does): a duplicate job losing the race never sees
    // it. It is not taken: it covers the calls started before its log line, so it survives this
    // worker dying before they ran again, and does not cover them once they started again.
    let seen: RerunPermission | undefined;
    const mayRerun = async (calls: readonly { startLine: number }[]) => {
      seen = await rerunPermissionOf(this.#store, runId);
      return seen !== undefined && calls.every((call) => call.startLine < seen!.beforeLine);
    };
    try {
      const backendChoice = recordableChoice(choice);
      const result = await runner.run(
        checkpoint
          ? { resume: runId, cwd: this.#cwd, backendChoice, rerunUnfinishedCall: mayRerun }
          : {
            runId,
            cwd: this.#cwd,
            backendChoice,
            args: request.args ?? {},
            ...(request.inputText !== undefined ? { inputText: request.inputText } : {}),
            ...(request.group !== undefined ? { group: request.group } : {}),
            ...(request.permissionMode !== undefined
              ? { permissionMode: request.permissionMode }
              : {}),
            ...(request.parent !== undefined ? { parent: request.parent } : {}),
          },
      );
      this.#log(
        `run ${runId}: ${result.completionReason} after ${result.iterations} iteration${
          result.iterations === 1 ? "" : "s"
        }`,
      );
      // A fan-out child gives its place to the step's next child, and may wake its parent.
      await this.#childJobs.childEnded(runId, result.completionReason);
      // Ended or waiting: the calls a permission covered are behind the run.
      if (seen || request.rerunUnfinishedCall !== undefined) {
        await clearRerunPermission(this.#store, runId).catch((error) =>
          warn(`removing its used rerun permission failed: ${errorMessage(error)}`)
        );
      }
    } catch (error) {
      const code = error instanceof StepflowError ? error.code : "";
      if (error instanceof FanOutSuspended) {
        return await this.#childJobs.parentSuspended(
          runId,
          error,
          this.#options.fanOutRecheckMs,
          this.#log,
        );
      }
      if (code === "RUN_SUSPENDED") {
        await this.#queue.send(runId);
        this.#log(`run ${runId}: iteration committed, lease released, back on the queue`);
        return;
      }
      if (error instanceof RateLimitYield) {
        const until = new Date(error.until);
        await markDeferred(this.#store, runId, until);
        await this.#queue.send(runId, { startAfter: until, rateLimitYields: yields + 1 });
        this.#log(
          `run ${runId}: waiting for the rate limit until ${
            clockTime(until)
          } (${error.retry.reason}); slot given back, queued again for then`,
        );
        return;
      }
      if (code === "RUN_LOCKED" || code === "RUN_CHANGED" || code === "RUN_LOCK_LOST") {
        this.#log(`run ${runId}: ${errorMessage(error)}`);
        return; // another worker drives it
      }
      if (code === "TOOL_CALL_UNFINISHED") {
        await this.#hold(runId, definition.name, errorMessage(error), seen);
        return; // the job is done: retrying cannot help
      }
      this.#log(`error: run ${runId}: ${errorMessage(error)}`);
      throw error;
    }
    const keep = definition.agent.logging?.maxFiles;
    if (keep !== undefined) {
      await this.#store.prune(keep, runId, definition.name).catch((error) =>
        this.#log(`warning: pruning runs of ${definition.name} failed: ${errorMessage(error)}`)
      );
    }
  }

  // A resume that needs a person: held with the error's message and both ways to continue.
  async #hold(
    runId: string,
    agent: string,
    reason: string,
    seen: RerunPermission | undefined,
  ): Promise<void> {
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
    const held = await markHeld(this.#store, runId, message, seen).catch((error) => {
      this.#log(`warning: run ${runId}: recording why it is held failed (${errorMessage(error)})`);
      return false;
    });
    this.#log(
      `error: run ${runId} (TOOL_CALL_UNFINISHED), held${
        held ? "" : " (not recorded: another worker holds it now, it ended, or it was handed back)"
      }: ${message}`,
    );
  }
}

/** Re-queues the runs whose worker is gone (their lease expired): one pass of the orphan reaper. */
export async function reapOrphans(
  store: PostgresRunStore,
  queue: RunQueue,
  log: (line: string) => void,
  driving: readonly string[] = [],
): Promise<void> {
  try {
    // The runs the caller drives are not its orphans.
    for (const runId of await claimOrphans(store, 100, driving)) {
      // A job of it still waits (a queued run behind others, a re-queued one no worker took yet):
      // that one is taken; a second would only be dropped.
      if (await queue.hasWaitingJob(runId)) continue;
      log(`run ${runId}: its worker is gone (lease expired); re-queued`);
      await queue.send(runId);
    }
  } catch (error) {
    log(`warning: looking for orphaned runs failed: ${errorMessage(error)}`);
  }
}
