/**
 * What a step kind is to the runner: one {@linkcode StepHandler}, a function from the step, the run
 * state and the iteration's {@linkcode StepDependencies} to a {@linkcode StepResult}. The loop in
 * `flow_run.ts` only calls the handler of the current step's kind (`step_handlers.ts`), records the
 * result and routes; everything a kind does — prompts, backend calls, commands, validators — is in
 * its handler's file (`step_check_gated.ts`, `step_gate_routed.ts`, `step_command.ts`).
 *
 * A handler keeps nothing between iterations itself: what must survive (counters, handoff) is in
 * the {@linkcode RunnerState}, which is checkpointed after every iteration. A step that runs a child
 * flow awaits it through a dependency (the agent step: `runChild`). A step that cannot go on until
 * someone answers — an input step, a tool call whose permission waits, a child run that waits —
 * returns a wait as its outcome (`run_wait.ts`), which the loop records before the drive stops;
 * nothing is thrown to mean "wait".
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { StepInfo } from "../events/types.ts";
import type { ReaskInfo } from "../engine/ask_structured.ts";
import type { LlmRequest, LlmResponse } from "../llm/types.ts";
import type { PromptResolver } from "../prompt/resolver.ts";
import type { AgentCommandContext } from "./agent_command.ts";
import type { Outcome } from "./decisions.ts";
import type { OutputSchemaCache } from "./output_validator.ts";
import type { RunnerState } from "./run_state.ts";
import type { WaitOutcome } from "./run_wait.ts";
import type { HistoryEntry, StepFlowResult, StepFlowRunnerOptions } from "./types.ts";

/** The fields of its history entry a step fills in (the loop adds id, iteration, timing, route). */
export type StepRecord = Pick<
  HistoryEntry,
  "answer" | "checkResult" | "intent" | "command" | "input" | "child" | "fanOut"
>;

/** A failure a step reports while still deciding its own outcome (a schema strike). */
export interface ReportedFailure {
  /** The error (`onStepError` carries it; its message goes into the history entry). */
  error: unknown;
  /** The stable code of the `step_error` log entry. */
  code: string;
  /** More fields of the `step_error` log entry. */
  fields?: Record<string, unknown>;
}

/** What every {@linkcode StepResult} may carry besides its outcome or error. */
export interface StepResultParts {
  /** History fields of the step's entry. */
  record?: StepRecord;
  /** Values handed off under the step (`{handoff.<key>}`), stored also when the step failed. */
  handoff?: Record<string, unknown>;
  /** Entries recorded right after the step's own (one per validator run). */
  followingEntries?: HistoryEntry[];
  /** The last answer (what `detect:keyword` completion conditions search). */
  response?: Pick<LlmResponse, "text" | "structuredOutput">;
}

/**
 * What one iteration of a step gave: an `outcome` (where the run goes; with `failure` when the step
 * failed in a way it routes itself), or an `error` for the step's `onError` policy to decide. A
 * handler may also throw: that is an `error` without the other parts.
 */
export type StepResult =
  & StepResultParts
  & (
    | { outcome: Outcome; failure?: ReportedFailure; error?: never }
    | { error: unknown; outcome?: never; failure?: never }
  );

/** What a handler may use in one iteration, bound to the current step and run. */
export interface StepDependencies {
  /** The agent. */
  readonly definition: AgentDefinition;
  /** The runner's options (model override, skipValidators, maxSchemaRetries, …). */
  readonly options: StepFlowRunnerOptions;
  /** The event of this iteration (`onStepJump`, `onStepRetry`, … carry it). */
  readonly info: StepInfo;
  /** Step prompts (with the agent's fallback directory). */
  readonly prompts: PromptResolver;
  /** The agent's system prompt. */
  readonly systemPrompts: PromptResolver;
  /** Output schemas, compiled once per file version. */
  readonly schemas: OutputSchemaCache;
  /** The run's events. */
  readonly events: EventEmitter;
  /**
   * Logs `step_start` (with the prompt sent, when the step has one). Call it once the prompt is
   * known; when the step fails before, the loop logs it without a prompt.
   */
  started(prompt?: string): Promise<void>;
  /**
   * One backend call (step timeout, pause, cancel, retry notices, usage). When a tool call of it
   * waits for permission, the call returns the run's wait instead of a response: the handler
   * returns it as its outcome (`isWait` in `run_wait.ts`).
   */
  call(request: LlmRequest): Promise<LlmResponse | WaitOutcome>;
  /** Makes a re-ask visible before it is sent (`onStepRetry` with `OUTPUT_REASK`, `step_reask`). */
  reask(info: ReaskInfo): Promise<void>;
  /** What running an allowed command needs (command steps, validators). */
  commandContext(): AgentCommandContext;
  /** Resolves when the run is not paused. */
  waitIfPaused(): Promise<void>;
  /** Appends a run-log line (nothing without a store). */
  log(fields: { type: string; [k: string]: unknown }): Promise<void>;
  /** A warning for the person running the agent. */
  warn(message: string): void;
  /**
   * Runs the step's child agent (`step.child`) as its own recorded run with `args`, or continues
   * the child the run already started at this step (its id is recorded before it starts), and
   * returns how the child's drive ended (agent steps).
   */
  runChild(args: Record<string, unknown>): Promise<StepFlowResult>;
  /**
   * Runs (or continues) a fan-out step's iteration: one child run of `step.child` per item of its
   * `forEach`, as `fan_out.ts` says (fan-out steps).
   */
  fanOut(): Promise<StepResult>;
}

/**
 * Runs one iteration of a step of one kind.
 *
 * @example
 * ```ts ignore
 * const echo: StepHandler = async (step, state, deps) => {
 *   const response = await deps.call({ kind: "step", agent: deps.definition.name, stepId: step.id,
 *     iteration: state.iteration, prompt: "hi", cwd: state.cwd });
 *   return { outcome: { kind: "end", reason: "completed", transition: "complete" }, response };
 * };
 * ```
 */
export type StepHandler = (
  step: FlowStep,
  state: RunnerState,
  deps: StepDependencies,
) => Promise<StepResult>;
