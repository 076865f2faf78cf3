/**
 * The options of a worker and the request a submitted run carries, apart from the worker itself so
 * that its parts (`run_driver.ts`, `fan_out_jobs.ts`) read them without importing the worker.
 *
 * @module
 */
import type { PermissionMode } from "../definition/permission_rule.ts";
import type { ModelPricing, RunBudget } from "../definition/schema.ts";
import type { AgentDefinition } from "../definition/types.ts";
import type { ParentRunLink } from "../flow/types.ts";
import type { BackendChoice } from "../llm/backend_choice.ts";
import type { LlmBackend } from "../llm/types.ts";
import type { RerunPermission } from "./submissions.ts";

/** Options of `startWorker` (worker.ts). */
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
  /**
   * A run whose fan-out step waits for its children on the workers gives its slot back and is
   * queued again when they end; without that wake (a worker killed at that moment) it is looked at
   * again after this long (default 60 000 ms, `DEFAULT_FANOUT_RECHECK_MS`, plus the lease).
   */
  fanOutRecheckMs?: number;
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
  /** A fan-out step's child: the parent it belongs to (`RunOptions.parent`). */
  parent?: ParentRunLink;
  /** A fan-out step's child: the parent's backend choice, which the child starts on. */
  backendChoice?: BackendChoice;
}

/** The default {@linkcode WorkerOptions.rateLimitYieldMs}. */
export const DEFAULT_RATE_LIMIT_YIELD_MS = 5_000;

/**
 * How many times in a row a run gives its slot back for a rate-limit wait; the next wait is slept
 * in the slot, so a server that keeps refusing ends in the retry policy's error (or a fallback).
 */
export const MAX_RATE_LIMIT_YIELDS = 3;
