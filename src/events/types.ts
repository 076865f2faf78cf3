/**
 * The one event vocabulary shared by every executor in stepflow (the step-flow runner, tool plans,
 * PlanSpec runs and QPlan scripts). It is described in docs/runner.md ("Events") and docs/qplan.md
 * ("Events").
 *
 * @module
 */

import type { RunState } from "../run_statuses.ts";

// The one list of run states is in ../run_statuses.ts.
export type { RunState };

/**
 * What every step event says about the step it concerns. Executors may add fields of their own
 * (QPlan adds `type`, `depth`, `parentStepId`, `errorPolicy`), so consumers must tolerate extras.
 */
export interface StepInfo {
  /** The run this step belongs to. */
  runId: string;
  /** The step's id. */
  stepId: string;
  /** Human-readable description (the step's `name`, or its id when it has none). */
  desc: string;
  /**
   * 1-based order of the step. Flat executors (the step-flow runner, tool plans, PlanSpec) count
   * executions, so a repeated step gets a new order; QPlan gives each step its
   * fixed position in the script (pre-order), so a retried step keeps its order.
   */
  order: number;
  /** Hierarchical path of the step, root first (flat executors use `[desc]`). */
  path: string[];
  /** 1-based iteration number within the run, where the executor counts iterations. */
  iteration?: number;
  /** Parent step id, for hierarchical executors. */
  parentStepId?: string;
  /** Any executor-specific extras. */
  [extra: string]: unknown;
}

/** Context passed to plan-level events. */
export interface RunContext {
  /** The run id. */
  runId: string;
  /** Anything else the executor wants to share (agent name, args, …). */
  [extra: string]: unknown;
}

/**
 * The handlers an executor calls. Every handler is optional and may be async; a throwing or
 * rejecting handler never breaks the run (see {@linkcode createEventEmitter}).
 */
export interface ExecutorEvents {
  /** A run starts. `plan` is the executor's plan object (definition, plan, script). */
  onPlanStart?(plan: unknown, ctx: RunContext): void | Promise<void>;
  /** A run ends, whatever the outcome. `ctx.status` tells how. */
  onPlanEnd?(plan: unknown, ctx: RunContext): void | Promise<void>;
  /** A step (or step iteration) begins. */
  onStepStart?(info: StepInfo): void | Promise<void>;
  /** A step (or step iteration) ended; `result` is executor-specific. */
  onStepEnd?(info: StepInfo, result?: unknown): void | Promise<void>;
  /** A step failed; the error policy decides what happens next. */
  onStepError?(info: StepInfo, error: unknown): void | Promise<void>;
  /** A step is about to be retried; `attempt` is the 1-based retry number. */
  onStepRetry?(info: StepInfo, attempt: number, error: unknown): void | Promise<void>;
  /** Control moves from this step to `targetStepId` by a jump. */
  onStepJump?(info: StepInfo, targetStepId: string): void | Promise<void>;
  /**
   * A step reports something while it runs: an approval asked or given, a retry's delay, a
   * recovery's decision, a tool's log line or progress. `level` says how much it matters.
   */
  onStepLog?(info: StepInfo, message: string, level: StepLogLevel): void | Promise<void>;
  /**
   * A tool call of a step moves on: the model asked for it (`requested`), its permission was
   * decided (`decided`: allowed, refused or invalid, and by whom), it ended (`finished`, with a
   * bounded excerpt of its result and its duration). Every call reports the three in that order.
   */
  onToolCall?(info: StepInfo, call: ToolCallEvent): void | Promise<void>;
  /** The model's text of a step as it is written (a piece at a time, on backends that stream). */
  onStepText?(info: StepInfo, text: string): void | Promise<void>;
  /**
   * A fan-out step's children move on (the step-flow runner's agent steps with `forEach`): a child
   * started, ended or waits, or a running one reached another step. `report` counts the items and
   * lists the running ones with the step each is at; `report.change` says what just happened.
   */
  onFanOut?(info: StepInfo, report: FanOutReport): void | Promise<void>;
  /**
   * A model call of a step fell through to the next entry of its model chain: the entry it left
   * failed in a way a fallback is for (rate limit or overload after the retry policy, 5xx after
   * retries, a context-length refusal).
   */
  onModelFallback?(info: StepInfo, fallback: ModelFallbackEvent): void | Promise<void>;
  /**
   * A model call of a step waits until the time the server named (its `Retry-After` or rate-limit
   * reset) before its next attempt — or, on a worker, gives its slot back until then (`yielded`).
   */
  onRateLimitWait?(info: StepInfo, wait: RateLimitWaitEvent): void | Promise<void>;
  /** The run was aborted (by `abort()`, a signal, or an abort intent). */
  onAbort?(ctx: RunContext): void | Promise<void>;
  /** The run was paused. */
  onPause?(ctx: RunContext): void | Promise<void>;
  /** The run was resumed after a pause. */
  onResume?(ctx: RunContext): void | Promise<void>;
  /** The run exceeded its time limit. */
  onTimeout?(ctx: RunContext): void | Promise<void>;
  /** The run state changed. */
  onStateChange?(newState: RunState, oldState: RunState, ctx: RunContext): void | Promise<void>;
}

/**
 * One moment of a tool call, as {@linkcode ExecutorEvents.onToolCall} reports it.
 *
 * @example
 * ```ts
 * import type { ToolCallEvent } from "./types.ts";
 * const finished: ToolCallEvent = {
 *   phase: "finished", callId: "c1", tool: "Edit", args: { file_path: "src/app.ts" },
 *   decision: "allow", decidedBy: "acceptEdits mode", result: "Edited.", isError: false,
 *   durationMs: 4,
 * };
 * ```
 */
export interface ToolCallEvent {
  /** `requested` (the model asked), `decided` (permission settled), `finished` (it ended). */
  phase: "requested" | "decided" | "finished";
  /** The call's id (unique within its model turn; the backend's, or one stepflow gave it). */
  callId: string;
  /** The tool, as the model named it (bounded). */
  tool: string;
  /** The arguments, when they parsed as an object. */
  args?: Record<string, unknown>;
  /** From `decided` on: `allow` (it runs), `deny` (refused) or `invalid` (unknown, bad arguments). */
  decision?: "allow" | "deny" | "invalid";
  /** From `decided` on: who decided — a rule, the mode, whoever answered an ask. */
  decidedBy?: string;
  /** From `decided` on (except for an invalid call): when the decision was made (ISO time). */
  decidedAt?: string;
  /** For a refused call: the `allowedTools` rule that would allow it without asking. */
  suggestion?: string;
  /** On `finished`: the result or error text the model is sent (bounded). */
  result?: string;
  /** On `finished`: true when the model got an error. */
  isError?: boolean;
  /** On `finished`: milliseconds the tool ran (0 when it did not run). */
  durationMs?: number;
}

/**
 * Where a fan-out step stands, as {@linkcode ExecutorEvents.onFanOut} reports it.
 *
 * @example
 * ```ts
 * import type { FanOutReport } from "./types.ts";
 * const report: FanOutReport = {
 *   agent: "file-reviewer", total: 40, completed: 12, failed: 1, running: 4, waiting: 0,
 *   active: [{ index: 13, item: "src/cli.ts", runId: "20261126T210000Z-a1b2c3", stepId: "review.file" }],
 *   change: { kind: "ended", index: 12, item: "src/app.ts", status: "completed", durationMs: 1840 },
 * };
 * ```
 */
export interface FanOutReport {
  /** The child agent. */
  agent: string;
  /** Items. */
  total: number;
  /** Items whose child completed. */
  completed: number;
  /** Items that failed for good. */
  failed: number;
  /** Children running in this process. */
  running: number;
  /** Children that wait for an answer. */
  waiting: number;
  /** The running children: their item (index from 0, as one short line), run and current step. */
  active: { index: number; item: string; runId: string; stepId?: string }[];
  /** What just happened, when a child started, ended or began to wait. */
  change?: {
    /** `ended` (see `status`), `waiting` (it waits for an answer). */
    kind: "ended" | "waiting";
    /** The item's index (from 0). */
    index: number;
    /** The item as one short line. */
    item: string;
    /** The child run (absent when no child could start). */
    runId?: string;
    /** How it ended, as `--runs` spells it. */
    status?: string;
    /** From the child's start to its end. */
    durationMs?: number;
    /** What the child used in total. */
    usage?: {
      inputTokens: number;
      outputTokens: number;
      costUsd?: number;
      calls?: number;
      callsWithoutUsage?: number;
    };
    /** Why it failed. */
    error?: string;
  };
}

/** A model of a model chain: the backend that serves it and the model's name. */
export interface ModelRef {
  /** The backend (`anthropic`, `openai`, `claude-code`, …). */
  backend: string;
  /** The model, when known. */
  model?: string;
  /** The server, when the entry names one (without user or password). */
  baseUrl?: string;
}

/**
 * Why a call fell through to the next model of its chain (docs/backends.md, "Model fallback
 * chains"): `rate_limit` (HTTP 429 after the retry policy, or a reset beyond `maxRateLimitWaitMs`),
 * `overload` (529, 503 or an `overloaded_error`, after the retry policy), `server_error` (another
 * 5xx after the retries) or `context_length` (the prompt does not fit the model's context).
 */
export type FallbackReason = "rate_limit" | "overload" | "server_error" | "context_length";

/**
 * One fall-through of a model chain, as {@linkcode ExecutorEvents.onModelFallback} reports it.
 *
 * @example
 * ```ts
 * import type { ModelFallbackEvent } from "./types.ts";
 * const fallback: ModelFallbackEvent = {
 *   from: { backend: "anthropic", model: "claude-sonnet-5-5" },
 *   to: { backend: "openai", model: "gpt-5.4" },
 *   reason: "rate_limit",
 *   detail: "anthropic backend: HTTP 429 rate_limit_error: … (after 3 attempts)",
 * };
 * ```
 */
export interface ModelFallbackEvent {
  /** The entry that failed. */
  from: ModelRef;
  /** The entry the call goes on with. */
  to: ModelRef;
  /** Which documented failure class moved it on. */
  reason: FallbackReason;
  /** The failure, in words (the first line of its message). */
  detail: string;
}

/**
 * A wait the server asked for, as {@linkcode ExecutorEvents.onRateLimitWait} reports it.
 *
 * @example
 * ```ts
 * import type { RateLimitWaitEvent } from "./types.ts";
 * const wait: RateLimitWaitEvent = {
 *   backend: "openai", until: "2026-03-01T12:03:10.000Z", delayMs: 30_000, status: 429,
 *   reason: "HTTP 429 rate_limit_exceeded", attempt: 1, maxAttempts: 3, yielded: false,
 * };
 * ```
 */
export interface RateLimitWaitEvent {
  /** The backend that was told to wait. */
  backend: string;
  /** When the next attempt may be made (ISO time). */
  until: string;
  /** How long that is from when the answer came, in ms. */
  delayMs: number;
  /** The HTTP status of the answer that said so (429, 503, 529, …). */
  status?: number;
  /** The answer, in words. */
  reason: string;
  /** The attempt that was refused (1-based). */
  attempt: number;
  /** Attempts the retry policy allows. */
  maxAttempts: number;
  /**
   * True when the run does not wait in place: it stops here and its driver continues it at
   * `until` (a worker gives its slot back and queues the run for then).
   */
  yielded: boolean;
}

/** How much a {@linkcode ExecutorEvents.onStepLog} message matters. */
export type StepLogLevel = "info" | "warn" | "error";

/** The names of the events in {@linkcode ExecutorEvents}. */
export type EventName = keyof ExecutorEvents;

/** Every event name: QPlan's (docs/qplan.md) in their order, then the ones the other engines add. */
export const EVENT_NAMES: readonly EventName[] = [
  "onPlanStart",
  "onPlanEnd",
  "onStepStart",
  "onStepEnd",
  "onStepError",
  "onStepRetry",
  "onStepJump",
  "onAbort",
  "onPause",
  "onResume",
  "onTimeout",
  "onStateChange",
  "onStepLog",
  "onToolCall",
  "onStepText",
  "onFanOut",
  "onModelFallback",
  "onRateLimitWait",
];
