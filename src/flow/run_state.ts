/**
 * The run state: everything a run needs to continue after a crash (checkpointed after every
 * iteration), how it starts, how an iteration's outcome moves it on, and how it ends and becomes
 * the {@linkcode StepFlowResult}.
 *
 * @module
 */
import type { InStepMarker } from "./tool_call_resume.ts";
import { resolve } from "node:path";
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import type { BackendChoice } from "../llm/backend_choice.ts";
import type { StepInfo } from "../events/types.ts";
import type { RunStatus } from "../store/types.ts";
import type { MovingOutcome, StepError } from "./decisions.ts";
import type { PendingInput, RecordedAnswer } from "./input_request.ts";
import { ownValue, setOwn } from "../own_record.ts";
import type { PermissionMode } from "../definition/permission_rule.ts";
import type { RunBudget } from "../definition/schema.ts";
import type { StepSpend } from "./spend_ledger.ts";
import type {
  CompletionReason,
  DeclinedAnswer,
  HistoryEntry,
  ParentRunLink,
  PermissionGrant,
  RunOptions,
  RunUsage,
  StepFlowResult,
} from "./types.ts";

/** Everything a run needs to continue after a crash; checkpointed after every iteration. */
export interface RunnerState {
  /** The run id. */
  runId: string;
  /** Agent name. */
  agent: string;
  /** The group the run was started in (`RunOptions.group`); kept by resume and redrive. */
  group?: string;
  /** `{uv-*}` values. */
  args: Record<string, unknown>;
  /** `{input_text}`. */
  inputText?: string;
  /** Working directory given to the backend. */
  cwd: string;
  /** ISO start time. */
  startedAt: string;
  /** The step the next iteration runs. */
  currentStepId: string;
  /** Iterations executed so far. */
  iteration: number;
  /** Events' `order` counter. */
  order: number;
  /** Consecutive attempts of `currentStepId` (history `attempt`). */
  attempt: number;
  /** Runs of the current step in its current check attempt (iterations.min/max). */
  checkRuns: number;
  /** `onFail.retry` retries used in the current visit of the step. */
  checkRetries: number;
  /** NG check verdicts in the current visit of the step (absent in older checkpoints). */
  checkFailures?: number;
  /** `onError: retry=N` retries used for the current step. */
  errorRetries: number;
  /** Consecutive schema-resolution failures per step. */
  schemaStrikes: Record<string, number>;
  /** Handoff by step id, then key. */
  handoff: Record<string, Record<string, unknown>>;
  /** Latest handoff value of each key (for `{handoff.<key>}`). */
  latestHandoff: Record<string, unknown>;
  /** Number of history entries (the entries themselves are in the run log). */
  historyLength: number;
  /** Backend session to continue. */
  sessionId?: string;
  /** Failed validations retried in the current visit of the step (`validation.maxRetries`). */
  validationRetries?: number;
  /** The failed validation the next iteration's retry prompt reports. */
  validationRetry?: { stepId: string; command: string; output: string; pattern?: string };
  /** Summed usage: every model call and tool call of the run and of its child runs. */
  usage: RunUsage;
  /**
   * The budget given for the run (the runner's `budget` option: `--budget-usd`, `--budget-tokens`),
   * over agent.json `limits.budget`. Kept by resume, redrive and workers; given again, it is raised
   * (or lowered) dimension by dimension.
   */
  budget?: RunBudget;
  /** What each step spent (its calls, its child runs): a budget stop names the top steps. */
  spendByStep?: Record<string, StepSpend>;
  /** The run log's `model_call` lines counted in `usage` (a resume adds the ones after them). */
  loggedModelCalls?: number;
  /**
   * How the run's backend was chosen (`RunOptions.backendChoice`), for resume, redrive and workers
   * to continue on the same backend. Absent when the caller did not say.
   */
  backendChoice?: BackendChoice;
  /**
   * The permission mode of every step of the run (`RunOptions.permissionMode`,
   * `run-agent --permission-mode`), over agent.json's and the steps'. Absent when not given.
   */
  permissionMode?: PermissionMode;
  /** The "always for this run" answers given so far (each also a `permission_grant` log line). */
  permissionGrants?: PermissionGrant[];
  /** Set while the run waits for an answer at an input step (status `waiting`). */
  waiting?: PendingInput;
  /**
   * Every request the run waits on, when it waits on more than one (a fan-out step whose children
   * wait); `waiting` is the first of them. A fan-out's waits outlive an answer to one of them: the
   * others stay listed (also while the run is `running`) until the step settles them.
   */
  waits?: PendingInput[];
  /** An answer recorded for the current input step; its next iteration routes on it. */
  answer?: RecordedAnswer;
  /** A child run: the parent it belongs to (an agent step of another run started it). */
  parent?: ParentRunLink;
  /**
   * The child run the current agent step started, recorded (and checkpointed) before the child
   * starts, so a resume continues that child instead of starting another.
   */
  child?: ChildRunLink;
  /**
   * The fan-out step in progress (an agent step with `forEach`): its items' children are recorded
   * as log lines from `startLine` on (`fan_out_log.ts`), so a resume continues them.
   */
  fanOut?: FanOutMark;
  /**
   * Only in a checkpoint saved in the middle of a step with tools (the state the step started
   * from, saved again so that a tool call's start is durable before it acts): where the step's
   * lines begin, so a resume continues inside the step (`tool_call_resume.ts`).
   */
  inStep?: InStepMarker;
  /** Set once the run ended. */
  end?: {
    reason: CompletionReason;
    stepId: string;
    output?: unknown;
    error?: { code: string; message: string; stepId?: string; details?: Record<string, unknown> };
    /** A person's decision that ended the run (reason `declined`). */
    declined?: DeclinedAnswer;
  };
}

/** The child run of an agent step, as the parent's state keeps it while the child is unfinished. */
export interface ChildRunLink {
  /** The agent step. */
  stepId: string;
  /** The child run (same store). */
  runId: string;
  /** The child's agent. */
  agent: string;
  /** The child's usage already added to the parent's (the next drive adds only what is new). */
  usage: RunUsage;
  /**
   * `agent`: the child is recorded as a run of its own agent, in the store the parent's store
   * gives for it (`RunStore.forAgent`: the file store's folder of the child agent). Absent: in the
   * parent's store — every child whose agent shares the parent's store, and every child started
   * before children were recorded with their own agent (such a run is continued where it is).
   */
  store?: "agent";
}

/**
 * A fan-out step in progress, as the run state keeps it (small: the items are in the run log).
 */
export interface FanOutMark {
  /** The fan-out step. */
  stepId: string;
  /** The position (among `readLog`'s entries) of its `fanout_start` line. */
  startLine: number;
  /** How many items it runs over. */
  total: number;
  /**
   * What the run counted in its `usage` of each child that has not ended, by child run id: a
   * child's spend reaches the run's usage (and budget) as it happens, and this is the record of how
   * much did, kept in the same checkpoint, so a resume adds only what is new.
   */
  counted: Record<string, RunUsage>;
  /** The step failed (an item failed under `onItemError: "fail"`): its next run redrives failures. */
  failed?: true;
}

/** The store status a run that ended for each reason is recorded with (`waiting`: not ended). */
export const TERMINAL_STATUS: Readonly<Record<CompletionReason, RunStatus>> = Object.freeze({
  completed: "completed",
  aborted: "aborted",
  declined: "declined",
  cancelled: "cancelled",
  timeout: "timeout",
  waiting: "waiting",
  max_iterations: "failed",
  retries_exhausted: "failed",
  schema_resolution_failed: "failed",
  step_routing_failed: "failed",
  step_failed: "failed",
  budget_exceeded: "budget_exceeded",
});

/** The state of a new run of `definition`, at its entry step. */
export function newRunnerState(
  definition: AgentDefinition,
  options: RunOptions,
  runId: string,
): RunnerState {
  const args = { ...(options.args ?? {}) };
  const state: RunnerState = {
    runId,
    agent: definition.name,
    args,
    cwd: resolve(options.cwd ?? Deno.cwd()),
    startedAt: new Date().toISOString(),
    currentStepId: definition.entryStepId,
    iteration: 0,
    order: 0,
    attempt: 1,
    checkRuns: 0,
    checkRetries: 0,
    checkFailures: 0,
    errorRetries: 0,
    schemaStrikes: {},
    handoff: {},
    latestHandoff: {},
    historyLength: 0,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0, callsWithoutUsage: 0 },
  };
  const inputText = options.inputText ??
    (typeof args.input_text === "string" ? args.input_text : undefined);
  if (inputText !== undefined) state.inputText = inputText;
  if (options.backendChoice !== undefined) state.backendChoice = options.backendChoice;
  if (options.group !== undefined) state.group = options.group;
  if (options.permissionMode !== undefined) state.permissionMode = options.permissionMode;
  if (options.parent !== undefined) state.parent = { ...options.parent };
  return state;
}

/**
 * Makes `stepId` the current step at its first attempt: the counters of a visit (check runs,
 * retries and failures, `onError` retries, validation retries) start again.
 */
export function enterStep(state: RunnerState, stepId: string): void {
  // A fan-out left behind (its step failed and the run went on elsewhere) is over: a later visit
  // of its step is a new fan-out.
  if (state.fanOut && state.fanOut.stepId !== stepId) delete state.fanOut;
  state.currentStepId = stepId;
  state.attempt = 1;
  state.checkRuns = 0;
  state.checkRetries = 0;
  state.checkFailures = 0;
  state.errorRetries = 0;
  state.validationRetries = 0;
  delete state.validationRetry;
}

/**
 * Moves the run on by an iteration's outcome and completes its history entry: to the same step (one
 * attempt more), to another step ({@linkcode enterStep}), or to the end of the run.
 */
export function advance(
  state: RunnerState,
  entry: HistoryEntry,
  outcome: MovingOutcome,
  runTimeoutMs: number | undefined,
): void {
  entry.transition = outcome.transition;
  if (outcome.kind === "goto") {
    entry.nextStepId = outcome.stepId;
    if (outcome.stepId === state.currentStepId) state.attempt++;
    else enterStep(state, outcome.stepId);
  } else {
    endRun(state, outcome.reason, entry.stepId, runTimeoutMs, outcome.error, outcome.output);
    if (outcome.declined) state.end!.declined = outcome.declined;
  }
}

/**
 * Ends the run at `stepId`. A stop (aborted, cancelled, timeout) without an error of its own gets
 * one that says so (`runTimeoutMs` is named in the timeout's message).
 */
export function endRun(
  state: RunnerState,
  reason: CompletionReason,
  stepId: string,
  runTimeoutMs: number | undefined,
  error?: StepError,
  output?: unknown,
): void {
  state.end = { reason, stepId };
  if (output !== undefined) state.end.output = output;
  if (error) state.end.error = error;
  else if (reason === "aborted" || reason === "cancelled" || reason === "timeout") {
    state.end.error = {
      code: reason.toUpperCase(),
      message: reason === "timeout"
        ? `The run exceeded its time limit (${runTimeoutMs} ms) at step "${stepId}".`
        : `The run was ${reason} at step "${stepId}".`,
      stepId,
    };
  }
}

/**
 * Stores a gate's handoff under `stepId` (merged with what the step handed off before) and as the
 * latest value of each key (`{handoff.<key>}`). Keys are data: `__proto__` is a key like any other.
 */
export function storeHandoff(
  state: RunnerState,
  stepId: string,
  handoff: Record<string, unknown>,
): void {
  const keys = Object.keys(handoff);
  if (keys.length === 0) return;
  // Spreads and setOwn keep every key as data ("__proto__" included); Object.assign would not.
  setOwn(state.handoff, stepId, { ...ownValue(state.handoff, stepId), ...handoff });
  for (const key of keys) setOwn(state.latestHandoff, key, handoff[key]);
}

/** The result of an ended run. */
export function runResult(state: RunnerState, history: HistoryEntry[]): StepFlowResult {
  const end = state.end!;
  const result: StepFlowResult = {
    success: end.reason === "completed",
    runId: state.runId,
    finalStepId: end.stepId,
    completionReason: end.reason,
    iterations: state.iteration,
    state: { history, handoff: state.handoff },
    usage: state.usage,
  };
  if (end.output !== undefined) result.output = end.output;
  if (end.error && end.reason !== "completed") result.error = end.error;
  if (end.declined) result.declined = end.declined;
  return result;
}

/** The result of a drive that stopped at an input step: the run waits for `state.waiting`. */
export function waitingResult(state: RunnerState, history: HistoryEntry[]): StepFlowResult {
  return {
    success: false,
    runId: state.runId,
    finalStepId: state.currentStepId,
    completionReason: "waiting",
    iterations: state.iteration,
    state: { history, handoff: state.handoff },
    usage: state.usage,
    waiting: state.waiting,
    ...(state.waits ? { waits: state.waits } : {}),
  };
}

/** Every request the run waits on (`waits`, else `waiting` alone). */
export function waitsOf(state: Pick<RunnerState, "waiting" | "waits">): PendingInput[] {
  return state.waits ?? (state.waiting ? [state.waiting] : []);
}

/** Records `waits` as what the run waits on: `waiting` the first, `waits` all when several. */
export function setWaits(state: RunnerState, waits: readonly PendingInput[]): void {
  if (waits.length === 0) delete state.waiting;
  else state.waiting = waits[0];
  if (waits.length > 1) state.waits = [...waits];
  else delete state.waits;
}

/** The `stepInfo` of events about the current iteration of `step`. */
export function stepInfo(state: RunnerState, step: FlowStep): StepInfo {
  return {
    runId: state.runId,
    stepId: step.id,
    desc: step.name,
    order: state.order,
    path: [step.name],
    iteration: state.iteration,
  };
}
