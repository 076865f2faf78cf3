/**
 * Public types of the step-flow runner (docs/runner.md).
 *
 * @module
 */
import type { BackendChoice } from "../llm/backend_choice.ts";
import type { ExecutorEvents, ModelFallbackEvent } from "../events/types.ts";
import type { RunUsage } from "../events/progress_lines.ts";
import type { LlmBackend } from "../llm/types.ts";
import type { RunStore } from "../store/types.ts";
import type { AnswerOptions, PendingInput } from "./input_request.ts";
import type { PermissionAsk, PermissionReply } from "../engine/tool_loop.ts";
import type { PermissionMode } from "../definition/permission_rule.ts";
import type { ModelPricing, RunBudget } from "../definition/schema.ts";
import type { PriceTable } from "../llm/pricing.ts";
import type { AgentDefinition } from "../definition/types.ts";

export type { PermissionAsk, PermissionReply };

/** How a history entry left its step. */
export type Transition =
  | "next"
  | "repeat"
  | "jump"
  | "retry"
  | "fallback"
  | "complete"
  | "abort"
  | "continue"
  | "fail";

/**
 * Why a run ended — or `waiting`: the run stopped at an input step until someone answers it
 * (it has not ended; {@linkcode StepFlowResult.waiting} says what it waits for). `declined`: a
 * person's answer at an input step took the `abort` intent — their decision to stop, not a
 * failure ({@linkcode StepFlowResult.declined} says who and what they said); `aborted` is a model's
 * or the caller's stop.
 */
export type CompletionReason =
  | "completed"
  | "aborted"
  | "declined"
  | "max_iterations"
  | "retries_exhausted"
  | "schema_resolution_failed"
  | "step_routing_failed"
  | "step_failed"
  | "cancelled"
  | "timeout"
  | "waiting"
  | "budget_exceeded";

/**
 * A person's decision to stop the run: their answer at an input step took the `abort` intent (the
 * run ends `declined`). In a parent run whose child asked the question, `stepId` is the parent's
 * agent step and `childRunId` the child that was answered.
 *
 * @example
 * ```ts
 * import type { DeclinedAnswer } from "./types.ts";
 * const declined: DeclinedAnswer = {
 *   stepId: "approve.release", requestId: "req-1", by: "cli (erin)",
 *   at: "2026-11-26T21:00:00.000Z", intent: "abort", note: { note: "not this week" },
 * };
 * ```
 */
export interface DeclinedAnswer {
  /** The input step (in a parent run: its agent step whose child asked). */
  stepId: string;
  /** The request that was answered. */
  requestId: string;
  /** Who answered (`terminal (erin)`, `cli (erin)`, `mcp`, `dashboard (…)`, `api`, …). */
  by: string;
  /** When (ISO time). */
  at: string;
  /** The intent the answer took (`abort`; as mapped from `escalate`). */
  intent: string;
  /**
   * What else the person said: their answer without its intent field (`{ note: "not this
   * week" }`); absent when the answer held nothing else.
   */
  note?: unknown;
  /** In a parent run: the child run whose input step was answered. */
  childRunId?: string;
}

/** One executed iteration (or schema strike) of a step. */
export interface HistoryEntry {
  /** The step. */
  stepId: string;
  /** 1-based run iteration. */
  iteration: number;
  /** 1-based attempt of this step in a row (retries and repeats count up; moving on resets). */
  attempt: number;
  /** The gate intent after mapping, when the step is gate-routed and produced one. */
  intent?: string;
  /** How the step was left. */
  transition: Transition;
  /** Where the run went next (absent when the run ended). */
  nextStepId?: string;
  /** The check verdict of a check-gated step. */
  checkResult?: { result: "ok" | "ng"; message: string };
  /** The error message, when the iteration failed. */
  error?: string;
  /** A command step's command and exit code. */
  command?: { name: string; exitCode: number };
  /** One validator run after the step's answer (its own history entry). */
  validation?: { command: string; exitCode: number; ok: boolean; pattern?: string };
  /**
   * What the model answered in this iteration (the step call's last answer, after any re-ask): the
   * raw text cut to 8,192 characters, and its full length in characters.
   */
  answer?: { text: string; length: number };
  /**
   * An input step's answer: the request it answered, who answered and when — or, when its
   * `waitTimeout` passed unanswered, `timedOut` (the intent is the timeout's).
   */
  input?: { requestId: string; answeredBy?: string; answeredAt?: string; timedOut?: boolean };
  /**
   * An agent step's child run: its id (a run of its own agent), its agent, how its drive ended
   * (`completed`, `waiting`, or why it failed), and what it used in total (its own calls and its
   * children's; the parent's `usage` includes it).
   */
  child?: { runId: string; agent: string; completionReason: CompletionReason; usage?: RunUsage };
  /**
   * A fan-out step's children (an agent step with `forEach`): its agent, how many items, how many
   * completed and failed, and what the children used in total (the run's `usage` includes it).
   */
  fanOut?: { agent: string; total: number; completed: number; failed: number; usage: RunUsage };
  /**
   * The tool calls of a step with tools, in order: who decided each, when, and how it ended — the
   * first 50 (`MAX_HISTORY_TOOL_CALLS`; the run log's `tool_call` lines hold every call).
   */
  toolCalls?: ToolCallSummary[];
  /** Tool calls of this iteration after the first 50, not listed in `toolCalls`. */
  toolCallsOmitted?: number;
  /**
   * The fall-throughs of the model chain in this iteration's answered calls, in order: which
   * entry failed, why, and which answered instead (the run log's `model_fallback` lines list every
   * one, those of calls that failed in the end too).
   */
  fallbacks?: ModelFallbackEvent[];
  /** ISO start time. */
  startedAt: string;
  /** Duration in milliseconds. */
  durationMs: number;
}

/**
 * One tool call as a history entry lists it (the run log's `tool_call` line has the arguments and
 * the result too).
 *
 * @example
 * ```ts
 * import type { ToolCallSummary } from "./types.ts";
 * const call: ToolCallSummary = {
 *   callId: "c1", tool: "Bash", target: "npm test", decision: "allow",
 *   decidedBy: "terminal (erin)", decidedAt: "2026-11-26T21:00:00.000Z", isError: false,
 *   durationMs: 812,
 * };
 * ```
 */
export interface ToolCallSummary {
  /** The call's id. */
  callId: string;
  /** The tool. */
  tool: string;
  /** What it acted on: a path, a pattern, a command (shortened). */
  target?: string;
  /** `allow` (ran), `deny` (refused) or `invalid` (unknown tool, bad arguments). */
  decision: "allow" | "deny" | "invalid";
  /**
   * Who decided: `rule <rule>`, `<mode> mode`, `nobody to ask`, or whoever answered an ask
   * (`terminal (erin)`, `onPermissionRequest`, what an answerer's `by` says).
   */
  decidedBy?: string;
  /** When it was decided (ISO time). */
  decidedAt?: string;
  /** True when the model got an error. */
  isError: boolean;
  /** Milliseconds the tool ran. */
  durationMs: number;
}

/**
 * A permission ask as the runner's `onPermissionRequest` receives it: the call, why it asks, the
 * rule that would allow it, and the run it belongs to.
 */
export interface RunPermissionAsk extends PermissionAsk {
  /** The run. */
  runId: string;
  /** The agent. */
  agent: string;
  /** The run's iteration. */
  iteration: number;
  /**
   * Fires when the call stops — the run is cancelled or times out, or the step's `timeoutMs`
   * passes: stop waiting for a person then.
   */
  signal: AbortSignal;
}

/**
 * An answer to a {@linkcode RunPermissionAsk}: `true` runs the call, `false` refuses it,
 * `"always"` runs it and every later call the ask's `suggestion` rule covers, for the rest of the
 * run; a {@linkcode PermissionReply} says the same and who answered.
 */
export type PermissionAnswer = boolean | "always" | PermissionReply;

/** An "always for this run" answer, as the run keeps it (state and run log). */
export interface PermissionGrant {
  /** The `allowedTools` rule it adds for the rest of the run (the ask's suggestion). */
  rule: string;
  /** The step that asked. */
  stepId: string;
  /** The call that asked. */
  callId: string;
  /** Who answered. */
  grantedBy: string;
  /** When (ISO time). */
  grantedAt: string;
}

/** Token usage and cost summed over a run: one type, declared with the progress lines in events. */
export type { RunUsage };

/** The result of {@linkcode StepFlowRunner.run}. */
export interface StepFlowResult {
  /** True when the run completed. */
  success: boolean;
  /** The run id (use it with `resume`). */
  runId: string;
  /** The last step that ran. */
  finalStepId: string;
  /** Why the run ended. */
  completionReason: CompletionReason;
  /** Iterations executed. */
  iterations: number;
  /** The closing step's structured output, if any. */
  output?: unknown;
  /**
   * Set when the run did not succeed. `details.next`, when present, is the step that carries the
   * run on as data (`{ action: "resume", runId, args: ["--budget-usd", "0.04"] }` for a run its
   * budget stopped); the CLI prints it as a command line.
   */
  error?: { code: string; message: string; stepId?: string; details?: Record<string, unknown> };
  /** History and handoff. */
  state: {
    history: HistoryEntry[];
    handoff: Record<string, Record<string, unknown>>;
  };
  /** Summed token usage and cost. */
  usage: RunUsage;
  /**
   * Set when the run waits for an answer at an input step (`completionReason` `waiting`): the
   * question, the request to answer, and when the wait passes. Answer it with
   * `StepFlowRunner.answer(runId, value)`.
   */
  waiting?: PendingInput;
  /**
   * Set when a person's answer stopped the run (`completionReason` `declined`): who decided, when,
   * at which step, and their note. Such a run has no `error`: it did not fail.
   */
  declined?: DeclinedAnswer;
  /**
   * Every request the run waits on, when it waits on more than one (a fan-out step whose children
   * wait at input steps or for permissions); `waiting` is the first. Answer each with
   * `StepFlowRunner.answer(runId, value, { requestId })`.
   */
  waits?: PendingInput[];
}

/** Options of a runner. */
export interface StepFlowRunnerOptions {
  /**
   * The backend. When absent, the agent's own is created when `run()` starts:
   * `agentBackend(definition.agent.behavior)` — `behavior.backend` (default `claude-code`) with
   * `model`, else `behavior.model`.
   */
  backend?: LlmBackend;
  /** Event handlers (one set or several). */
  events?: ExecutorEvents | ExecutorEvents[];
  /** Where runs are recorded (run log + checkpoints). Default: in memory. */
  store?: RunStore;
  /** Honour `fallbackKey` / `prompts.fallbackDir` (development only; each use warns). */
  allowFallback?: boolean;
  /** Let command steps and validators run the commands agent.json `commands` lists (`--allow-run`). */
  allowRun?: boolean;
  /**
   * A tool call that asks for permission when nobody can be asked: `"refuse"` (the model is told
   * why) or `"wait"` (the run records the request and waits for `{ "decision": "allow" | "deny" }`,
   * as at an input step; needs a store). Default: agent.json `behavior.permissionAsks`, else
   * `"refuse"`. CLI: `--permission-asks`.
   */
  permissionAsks?: "refuse" | "wait";
  /**
   * Skip step validators (each skip warns): for scripted dry runs where the commands cannot pass.
   * Command steps still run.
   */
  skipValidators?: boolean;
  /** Overrides `limits.maxTotalIterations` (default 100). */
  maxTotalIterations?: number;
  /** Re-asks after schema-invalid output (default 1). */
  maxSchemaRetries?: number;
  /** Overrides `limits.runTimeoutMs`. */
  runTimeoutMs?: number;
  /** Overrides `limits.stepTimeoutMs` (one backend call). */
  stepTimeoutMs?: number;
  /** Backoff of `onError: "retry=N"`: first delay, factor and cap (defaults 500 ms, 2, 30 s). */
  retryBackoff?: { initialMs?: number; factor?: number; maxMs?: number };
  /**
   * Model override for every call (else step `model`, else agent `behavior.model`, either of which
   * may be a fallback chain). Fallbacks after it: `createBackend({ fallbackModels })`
   * (`--fallback-model`).
   */
  model?: string;
  /**
   * A wait the server asks for (its `Retry-After` or a rate-limit reset) at least this long, in ms,
   * is not slept in the run: the drive stops where a taken-over run would (the iteration in flight
   * is made again), `run()` rejects with `RateLimitYield` (code `RATE_LIMIT_YIELD`; `until` says
   * when to continue) and its caller resumes the run then. Workers set it to give their slot back
   * (`WorkerOptions.rateLimitYieldMs`). Unset (the default): every wait within the retry policy's
   * `maxRateLimitWaitMs` is slept in place.
   */
  rateLimitYieldMs?: number;
  /**
   * A hard budget for the run, over agent.json `limits.budget` dimension by dimension (CLI:
   * `--budget-usd`, `--budget-tokens`): checked before every model call and tool call, summed over
   * retries, re-asks, tool turns and child runs, recorded with the run so a resume keeps it; given
   * again on a resume it replaces what was recorded (raise it to carry on a run it stopped). An
   * exhausted budget ends the run `budget_exceeded`, resumably (docs/budgets.md). A dollar budget
   * needs a price for every model the run may call (else `BUDGET_PRICE_MISSING`, before anything
   * runs). Child runs of agent steps count against it; their own budget is their agent.json's.
   *
   * @example
   * ```ts ignore
   * const runner = new StepFlowRunner(def, { budget: { usd: 5, toolCalls: 200 } });
   * ```
   */
  budget?: RunBudget;
  /**
   * Prices over agent.json `pricing` and the built-in table (`--pricing FILE`, `STEPFLOW_PRICING`):
   * model name → `{ inputUsdPerMTok, outputUsdPerMTok, cacheReadUsdPerMTok?, cacheWriteUsdPerMTok? }`,
   * or a `PriceTable` (its sources are named in the run log).
   */
  pricing?: PriceTable | Readonly<Record<string, ModelPricing>>;
  /** Receives warnings (fallback prompts, …). Default `console.warn`. */
  onWarning?: (message: string) => void;
  /**
   * How often the runner asks the store for a cancel request from another process
   * (`RunStore.takeCancelRequest`, e.g. the dashboard's Cancel); default 1000 ms.
   */
  cancelPollMs?: number;
  /**
   * How deep agent steps may nest: a run whose agent step would start a child this many levels
   * below the top run fails that step with `AGENT_STEP_DEPTH` (default 8, `DEFAULT_MAX_AGENT_DEPTH`).
   */
  maxAgentDepth?: number;
  /**
   * The most children of fan-out steps in flight at once over every run this runner drives (their
   * own nested fan-outs included): 1-4,096, default 64 (`DEFAULT_MAX_CHILDREN`). Each step's
   * `concurrency` applies within it. CLI: `--max-children`.
   */
  maxChildren?: number;
  /**
   * Where fan-out steps queue their children instead of driving them here: a worker gives its
   * queue, so each child is a run of its own taken by any worker, and the parent gives its slot
   * back while they run (docs/scaling.md, "Fan-out steps on the workers").
   */
  childQueue?: ChildQueue;
  /**
   * Answers the tool calls that ask for permission (the step's `permissionMode` and `allowedTools`
   * neither allow nor refuse them). Awaited before the call runs; the time it takes counts toward
   * the step's timeout. Without it a call that asks is refused — unless an earlier `"always"` of
   * this run covers it — and the model is told which rule or mode would allow it. An answerer
   * that throws or answers something else refuses the call and warns. Child runs of agent steps
   * use it too. Not used by `claude-code`, which keeps Claude Code's own permission handling.
   *
   * @example
   * ```ts ignore
   * const runner = new StepFlowRunner(def, {
   *   onPermissionRequest: (ask) => {
   *     if (ask.tool === "Bash" && String(ask.args.command).startsWith("npm ")) return "always";
   *     return { allow: false, by: "policy bot", message: "only npm commands may run" };
   *   },
   * });
   * ```
   */
  onPermissionRequest?: (ask: RunPermissionAsk) => PermissionAnswer | Promise<PermissionAnswer>;
}

/** The run an agent step's child run belongs to (in the child's state, checkpoint and summary). */
export interface ParentRunLink {
  /** The parent run. */
  runId: string;
  /** The parent's agent. */
  agent: string;
  /** The parent's agent step that runs this child. */
  stepId: string;
  /** How many agent steps lie between the top run and this one (a top run's child: 1). */
  depth: number;
  /** A fan-out step's child: the index of its item in the step's `forEach` array. */
  item?: number;
  /**
   * The parent agent's folder (absolute), so a fan-out child answered on its own can wake its
   * waiting parent.
   */
  agentDir?: string;
  /** The agent root the parent's agent steps name their agents under (with `agentDir`). */
  agentRoot?: string;
}

/**
 * Asked by a resume that found tool calls started and never finished whose tools are not
 * idempotent (`RunOptions.rerunUnfinishedCall`), once the drive holds the run's lock: true lets
 * them run again.
 *
 * @example
 * ```ts
 * import type { RerunUnfinishedCallCheck } from "@stepflow/core/runner";
 * // Only calls started before log line 42 (the ones the user saw unfinished) may run again.
 * const check: RerunUnfinishedCallCheck = (calls) => calls.every((c) => c.startLine < 42);
 * console.log(check([{ tool: "Bash", callId: "c1", startLine: 40 }])); // true
 * ```
 */
export type RerunUnfinishedCallCheck = (
  calls: readonly { tool: string; callId: string; target?: string; startLine: number }[],
) => boolean | Promise<boolean>;

/** Options of one run. */
export interface RunOptions {
  /** `{uv-<name>}` values (CLI parameters). */
  args?: Record<string, unknown>;
  /** `{input_text}` (stdin). */
  inputText?: string;
  /** Working directory passed to the backend (default `Deno.cwd()`). */
  cwd?: string;
  /** Cancels the run between backend calls (and the call in flight). */
  signal?: AbortSignal;
  /** Continue the run with this id from its last checkpoint. */
  resume?: string;
  /** Restart the failed run with this id from its failed step. */
  redrive?: string;
  /** Use this id for a new run (default: generated). */
  runId?: string;
  /**
   * A group for a new run: runs started with the same group are listed together (`--runs --group`,
   * the dashboard's `/?group=…`); `deno task eval` gives its runs one per eval. 1-64 letters,
   * digits, `_`, `-`, `.` or `:` (else `RUN_GROUP_INVALID`). Recorded in the run's state: a resume
   * or redrive keeps the group the run started with and ignores this one.
   */
  group?: string;
  /**
   * How the caller chose the backend (name, `--model` override, server URL, script path — never a
   * key), recorded in the run's state so a later resume or redrive can choose the same one (see
   * `recordedBackendChoice`). On a resume or redrive it replaces the recorded choice.
   */
  backendChoice?: BackendChoice;
  /**
   * The permission mode of every step of this run, over agent.json's and the steps'
   * `permissionMode` (`run-agent --permission-mode`). Recorded in the run's state: a resume or
   * redrive keeps it, and replaces it when given again; child runs of agent steps take it too.
   * Not one of the modes: `PERMISSION_MODE_INVALID`.
   */
  permissionMode?: PermissionMode;
  /**
   * With `resume`: the answer to the input step the run waits at, recorded and routed on
   * ({@linkcode StepFlowRunner.answer} is the short form).
   */
  answer?: AnswerOptions & { value: unknown };
  /**
   * With `resume`: run again a tool call the run was killed in the middle of although its tool is
   * not idempotent (its effect may happen twice). Without it such a resume stops with
   * `TOOL_CALL_UNFINISHED` before anything runs (docs/durable-runs.md, "Inside a step with tools").
   * CLI: `--rerun-unfinished-call`.
   *
   * A function is asked instead, once, only when such calls were found, and only after this drive
   * holds the run's lock (so a permission stored elsewhere is read by the one drive that uses it,
   * never by a duplicate that loses the lock); it gets those calls, each with the run-log line of
   * its latest start, and returns whether they may run again. The workers use it for the
   * permission `--resume RUN_ID --rerun-unfinished-call --submit` records on a submitted run.
   */
  rerunUnfinishedCall?: boolean | RerunUnfinishedCallCheck;
  /**
   * Set by an agent step for its child run: the parent it belongs to (kept in the child's state,
   * checkpoint and summary). Callers leave it out.
   */
  parent?: ParentRunLink;
}

/** One child to queue: a run of `agent` under its id, linked to its parent and item. */
export interface QueuedChild {
  /** The child run (its link is in the parent's log and checkpoint already). */
  runId: string;
  /** The child's agent. */
  agent: AgentDefinition;
  /** The item's index: children are sent to the workers in item order. */
  position: number;
  /** The child's parameters. */
  args: Record<string, unknown>;
  /** The parent it belongs to. */
  parent: ParentRunLink;
  /** The parent's backend choice (the child records the same). */
  backendChoice?: RunOptions["backendChoice"];
  /** The parent's permission mode. */
  permissionMode?: RunOptions["permissionMode"];
}

/** A fan-out step of one parent run, as the queue knows it. */
export interface QueuedFanOut {
  /** The parent run. */
  parentRunId: string;
  /** The fan-out step. */
  stepId: string;
  /** The step's children out at once, over every worker. */
  concurrency: number;
}

/** The queue a fan-out step's children go to (a worker's; see the module documentation). */
export interface ChildQueue {
  /**
   * Records each child as a queued run of its agent (idempotent per child: a parent that was
   * killed after it queued some does no harm queueing them again) and sends the first of the
   * step's children to the workers, as many as `concurrency` leaves room for; the others are sent
   * one by one as children end.
   */
  enqueue(fanOut: QueuedFanOut, children: readonly QueuedChild[]): Promise<void>;
  /**
   * The parent took these children's ends (and waits) up: they wake it no more. A child whose end
   * its worker did not get to count (killed just after) is counted now: its place goes to the
   * step's next child.
   */
  noticed(
    fanOut: QueuedFanOut,
    seen: { ended: readonly string[]; waiting: readonly string[] },
  ): Promise<void>;
  /**
   * Stops the step's children (onItemError `fail`): the ones not sent yet never start, the ones out
   * are asked to cancel. Returns the children asked to cancel.
   */
  cancel(fanOut: QueuedFanOut): Promise<string[]>;
}
