/**
 * The types of executable tool plans (docs/tool-plans.md). They mirror the zod schemas in
 * `schema.ts`, which validate them at every boundary; a compile-time check there keeps the two
 * identical.
 *
 * @module
 */
import type { OnErrorPolicy } from "../on_error.ts";
import type { ArgIssue, ToolContext } from "../tools/types.ts";

export type { OnErrorPolicy } from "../on_error.ts";
export type { ArgIssue } from "../tools/types.ts";

/**
 * Where a step is in its life.
 *
 * - `pending`: not started (the state of a fresh or resumed plan);
 * - `blocked`: waiting for dependencies — and, at the end of a run, a dependency failed;
 * - `ready`: dependencies satisfied, waiting for a free slot;
 * - `running`; `completed`; `failed`;
 * - `skipped`: the user skipped it, approval was denied, recovery skipped it, or a dependency was skipped.
 */
export type StepStatus = typeof STEP_STATUSES[number];

/** Every step status, in lifecycle order (the one list: {@linkcode StepStatus} and the schema follow). */
export const STEP_STATUSES = [
  "pending",
  "blocked",
  "ready",
  "running",
  "completed",
  "failed",
  "skipped",
] as const;

/** The outcome of a step. */
export interface StepResult {
  /** True when the tool succeeded. */
  ok: boolean;
  /** The tool's return value (JSON-serialisable), when it succeeded. */
  value?: unknown;
  /** What went wrong, when it did not. */
  error?: string;
  /** Wall time in milliseconds, all attempts included, without the wait for an approval. */
  duration: number;
  /** Milliseconds the step waited for its approval (a person deciding), apart from `duration`. */
  approvalWaitMs?: number;
  /** ISO time the step settled. */
  timestamp: string;
  /** How many times the tool was called (retries and recoveries included). */
  attempts?: number;
}

/** `{ retry: N }`: re-run a failing step up to N more times with exponential backoff. */
export interface RetrySetting {
  /** Extra attempts after the first. */
  retry: number;
  /** Base delay before the first retry in ms (doubles each time); defaults to the executor's. */
  backoffMs?: number;
}

/** `{ recover: N }`: ask the LLM for a recovery up to N times for this step. */
export interface RecoverSetting {
  /** Maximum recovery rounds for this step. */
  recover: number;
}

/**
 * What to do when a step fails: `"fail"` (default: the run stops), `"continue"` (dependents are
 * blocked, independent steps go on), `"retry=N"` or `{ retry: N, backoffMs? }`, and `"recover"` or
 * `{ recover: N }` (ask the LLM backend: retry with new args, skip, insert steps, or abort).
 */
export type OnErrorSetting = string | RetrySetting | RecoverSetting;

/** One step of a plan (with its `onError` and `requiresApproval`). */
export interface Step {
  /** Unique id: a letter or `_`, then letters, digits, `_` or `-` (e.g. `step_1`). */
  id: string;
  /** 1-based position in the plan's display order. */
  order: number;
  /** What the step does, for people. */
  description: string;
  /** Name of a registered tool. */
  tool: string;
  /** Tool arguments. Strings `"$step_1"` / `"$step_1.a.b[0]"` and `"${step_1.x}"` inside text are references. */
  args: Record<string, unknown>;
  /** Ids of steps that must complete first. */
  dependsOn: string[];
  /** Current status. */
  status: StepStatus;
  /** The outcome, once the step settled. */
  result?: StepResult;
  /** Failure strategy (default `"fail"`). */
  onError?: OnErrorSetting;
  /** Ask for approval before running, whatever the tool says. */
  requiresApproval?: boolean;
}

/** An executable plan (with the optional task text and update time). */
export interface Plan {
  /** Plan id. */
  id: string;
  /** The task this plan serves. */
  taskId: string;
  /** The user's request, when known (shown in reviews and recovery prompts). */
  task?: string;
  /** Increments on every change to the plan (edits, recoveries). */
  version: number;
  /** The steps, in display order. */
  steps: Step[];
  /** Estimated duration in seconds. */
  estimatedDuration?: number;
  /** ISO creation time. */
  createdAt: string;
  /** ISO time of the last change. */
  updatedAt?: string;
}

/**
 * A failure strategy, parsed: `fail`, `continue`, `retry` (`count`, `backoffMs?`) or `recover`
 * (`maxAttempts?`) — the plans' part of the one `onError` grammar.
 */
export type ErrorStrategy = Exclude<OnErrorPolicy, { kind: "jump" }>;

/** Kinds of plan problems reported by {@linkcode validatePlan}. */
export type PlanProblemCode =
  | "PLAN_SCHEMA"
  | "DUPLICATE_STEP_ID"
  | "UNKNOWN_DEPENDENCY"
  | "CYCLE"
  | "UNKNOWN_TOOL"
  | "INVALID_ARGS"
  | "UNKNOWN_REF"
  | "REF_NOT_ANCESTOR";

/** One problem found in a plan. */
export interface PlanProblem {
  /** The kind of problem. */
  code: PlanProblemCode;
  /** What is wrong, where, and how to fix it. */
  message: string;
  /** The step concerned, when there is one. */
  stepId?: string;
  /** Path of the offending value inside the plan, e.g. `["steps", 1, "args", "content"]`. */
  path?: (string | number)[];
  /** For `CYCLE`: the step ids along the cycle, first id repeated at the end. */
  cycle?: string[];
}

/** The outcome of {@linkcode validatePlan}. */
export interface PlanValidation {
  /** True when there are no problems. */
  ok: boolean;
  /** Every problem found. */
  problems: PlanProblem[];
}

/** One log line attached to a progress event. */
export interface LogEntry {
  /** Severity. */
  level: "info" | "warn" | "error";
  /** The text. */
  message: string;
  /** ISO time. */
  timestamp: string;
}

/** A status change or progress report of one step. */
export interface ProgressEvent {
  /** The plan's task id. */
  taskId: string;
  /** The plan id. */
  planId: string;
  /** The step. */
  stepId: string;
  /** Its status after this event. */
  status: StepStatus;
  /** 0–100, for long-running steps that report it. */
  progress?: number;
  /** The step's result, on settling. */
  result?: StepResult;
  /** Log lines (approvals, retries, recoveries, tool logs). */
  logs?: LogEntry[];
}

/** How a run ended. */
export type ExecutionStatus = "completed" | "failed" | "aborted" | "cancelled";

/** What a run did (returned by {@linkcode executePlan}). */
export interface ExecutionSummary {
  /** The run id. */
  runId: string;
  /** The plan id. */
  planId: string;
  /** The task id. */
  taskId: string;
  /**
   * `completed` when every step completed or was skipped; `failed` when a step failed or could not
   * run; `aborted` when a recovery chose to abort; `cancelled` when the run was cancelled.
   */
  status: ExecutionStatus;
  /** True when `status` is `completed`. */
  ok: boolean;
  /** Step ids per final status. */
  steps: Record<StepStatus, string[]>;
  /** Wall time of the run in milliseconds. */
  durationMs: number;
  /** ISO start time. */
  startedAt: string;
  /** ISO end time. */
  finishedAt: string;
  /** The largest number of steps that ran at the same time. */
  maxParallel: number;
  /** Why the run did not complete, when it did not. */
  error?: string;
  /** The plan with final statuses, results and any recovery changes. */
  plan: Plan;
}

/** What an approver is asked. */
export interface ApprovalRequest {
  /** The plan id. */
  planId: string;
  /** The step. */
  stepId: string;
  /** The step's description. */
  description: string;
  /** The tool to run. */
  tool: string;
  /** The arguments, with references resolved. */
  args: Record<string, unknown>;
  /** Why approval is needed (the tool always needs it, the step asks, or the call is destructive). */
  reason: string;
}

/** An approver's answer: a boolean, or an object with a reason (shown when denied). */
export type ApprovalDecision = boolean | { approved: boolean; reason?: string };

/**
 * Decides whether a step may run. Calls may overlap: every step that needs approval asks as soon as
 * it is ready, and holds no concurrency slot while it waits. An approver that talks to one person
 * (a terminal prompt) queues its own questions.
 */
export type Approver = (
  request: ApprovalRequest,
  signal: AbortSignal,
) => ApprovalDecision | Promise<ApprovalDecision>;

/** The context a tool receives when a plan step calls it (the tool contract's `ToolContext`). */
export type PlanToolContext = ToolContext;

/** A tool's prompt-ready description. */
export interface PlanToolDescriptor {
  /** Tool name. */
  name: string;
  /** Tool description. */
  description: string;
  /** JSON Schema of the arguments. */
  inputSchema: Record<string, unknown>;
  /** Whether the tool always needs approval. */
  requiresApproval: boolean;
  /** Whether the tool is safe to run again after a crash (absent: not declared, so not safe). */
  idempotent?: boolean;
}

/**
 * The part of the tool registry (`ToolRegistry` from `src/tools`) that plans use. Any
 * `ToolRegistry` fits; tests may pass their own.
 */
export interface PlanToolRegistry {
  /** True when a tool called `name` exists. */
  has(name: string): boolean;
  /** Prompt-ready descriptions of every tool. */
  describe(): PlanToolDescriptor[];
  /** The description of one tool. */
  descriptor(name: string): PlanToolDescriptor | undefined;
  /** Validates arguments with the tool's schema. */
  validateArgs(
    name: string,
    args: unknown,
  ): { ok: true; args: unknown } | { ok: false; issues: readonly ArgIssue[] };
  /** Why this call needs an approval, or `undefined` when it does not. */
  approvalReason(name: string, args: unknown, ctx: PlanToolContext): Promise<string | undefined>;
  /** Validates and runs a tool. */
  invoke(name: string, args: unknown, ctx: PlanToolContext): Promise<unknown>;
  /** The MCP servers configured for the registry, for messages about `mcp__…` names. */
  mcpServerNames?(): string[];
}

/** The decision of an LLM asked to recover from a failed step. */
export interface RecoveryDecision {
  /** `retry` the step (optionally with new args), `skip` it, `insert` steps before it, or `abort`. */
  action: "retry" | "skip" | "insert" | "abort";
  /** New arguments for the failed step (`retry`, `insert`). */
  args?: Record<string, unknown>;
  /** Steps to run before the failed step is tried again (`insert`). */
  steps?: PlannedStep[];
  /** Why. */
  reason: string;
}

/** A {@linkcode NewStep} whose id is decided (what planning and recovery answers contain). */
export interface PlannedStep extends NewStep {
  /** Step id. */
  id: string;
}

/** A step as written by a planner or added by an edit: order and status are assigned. */
export interface NewStep {
  /** Id; assigned (`step_N`) when omitted by an edit. */
  id?: string;
  /** What the step does. */
  description: string;
  /** Tool name. */
  tool: string;
  /** Tool arguments. */
  args?: Record<string, unknown>;
  /** Dependencies. */
  dependsOn?: string[];
  /** Failure strategy. */
  onError?: OnErrorSetting;
  /** Ask for approval before running. */
  requiresApproval?: boolean;
}
