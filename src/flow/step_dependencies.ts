/**
 * The {@linkcode StepDependencies} of one iteration, bound to its step and the run's state. One
 * small object per iteration whose methods live on the prototype: the loop builds it on every
 * pass, so it allocates no closures (the flow bench runs 10,000 iterations).
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { ModelFallbackEvent, StepInfo } from "../events/types.ts";
import type { ReaskInfo } from "../engine/ask_structured.ts";
import type { RecordedCall } from "../llm/replay_file.ts";
import type { LlmRequest, LlmResponse } from "../llm/types.ts";
import type { PromptResolver } from "../prompt/resolver.ts";
import type { AgentCommandContext } from "./agent_command.ts";
import type { OutputSchemaCache } from "./output_validator.ts";
import type { RunnerState } from "./run_state.ts";
import type { IterationToolCalls } from "./permission_asks.ts";
import type { StepCallJournal } from "./step_call_journal.ts";
import type { WaitOutcome } from "./run_wait.ts";
import type { StepDependencies, StepResult } from "./step_handler.ts";
import type { StepFlowResult, StepFlowRunnerOptions } from "./types.ts";

/** What the runner lends every iteration of a run: its resources and its effects. */
export interface RunResources {
  /** The agent. */
  readonly definition: AgentDefinition;
  /** The runner's options. */
  readonly options: StepFlowRunnerOptions;
  /** The run's events. */
  readonly events: EventEmitter;
  /** Step prompts. */
  readonly prompts: PromptResolver;
  /** The system prompt. */
  readonly systemPrompts: PromptResolver;
  /** Output schemas. */
  readonly schemas: OutputSchemaCache;
  /** Logs `step_start`. */
  logStepStart(state: RunnerState, step: FlowStep, prompt?: string): Promise<void>;
  /** One backend call for `step` (`inStep`: the iteration's call journal, when recorded). */
  call(
    request: LlmRequest,
    state: RunnerState,
    step: FlowStep,
    calls: RecordedCall[],
    toolCalls: IterationToolCalls,
    inStep: StepCallJournal | undefined,
  ): Promise<LlmResponse | WaitOutcome>;
  /** Makes a re-ask visible. */
  reask(state: RunnerState, step: FlowStep, info: ReaskInfo): Promise<void>;
  /** What running an allowed command needs. */
  commandContext(state: RunnerState, step: FlowStep): AgentCommandContext;
  /** Resolves when the run is not paused. */
  waitIfPaused(): Promise<void>;
  /** Appends a run-log line. */
  log(state: RunnerState, fields: { type: string; [k: string]: unknown }): Promise<void>;
  /** Warns the person running the agent. */
  warn(message: string): void;
  /** Runs or continues the child run of an agent step. */
  runChild(
    state: RunnerState,
    step: FlowStep,
    args: Record<string, unknown>,
  ): Promise<StepFlowResult>;
  /** Runs or continues a fan-out step's iteration. */
  fanOut(state: RunnerState, step: FlowStep, info: StepInfo): Promise<StepResult>;
}

/** The dependencies of one iteration; `wasStarted` tells the loop whether `step_start` is logged. */
export class IterationDependencies implements StepDependencies {
  /** True once the handler logged `step_start`. */
  wasStarted = false;
  /** The iteration's backend calls, for its `step_end` log entry (replay files). */
  readonly calls: RecordedCall[] = [];
  /** The iteration's tool calls, for its history entry. */
  readonly toolCalls: IterationToolCalls = { list: [], omitted: 0 };
  /** The model chain's fall-throughs of the iteration's answered calls, for its history entry. */
  readonly fallbacks: ModelFallbackEvent[] = [];
  readonly #run: RunResources;
  readonly #state: RunnerState;
  readonly #step: FlowStep;
  readonly #inStep: StepCallJournal | undefined;

  /**
   * Binds the run's resources to one iteration of `step`; `inStep` is the iteration's call
   * journal (a recorded step with tools).
   */
  constructor(
    run: RunResources,
    state: RunnerState,
    step: FlowStep,
    readonly info: StepInfo,
    inStep: StepCallJournal | undefined,
  ) {
    this.#run = run;
    this.#state = state;
    this.#step = step;
    this.#inStep = inStep;
  }

  /** The agent. */
  get definition(): AgentDefinition {
    return this.#run.definition;
  }
  /** The runner's options. */
  get options(): StepFlowRunnerOptions {
    return this.#run.options;
  }
  /** The run's events. */
  get events(): EventEmitter {
    return this.#run.events;
  }
  /** Step prompts. */
  get prompts(): PromptResolver {
    return this.#run.prompts;
  }
  /** The system prompt. */
  get systemPrompts(): PromptResolver {
    return this.#run.systemPrompts;
  }
  /** Output schemas. */
  get schemas(): OutputSchemaCache {
    return this.#run.schemas;
  }

  /** See {@linkcode StepDependencies.started}. */
  started(prompt?: string): Promise<void> {
    this.wasStarted = true;
    return this.#run.logStepStart(this.#state, this.#step, prompt);
  }
  /** See {@linkcode StepDependencies.call}. */
  async call(request: LlmRequest): Promise<LlmResponse | WaitOutcome> {
    const response = await this.#run.call(
      request,
      this.#state,
      this.#step,
      this.calls,
      this.toolCalls,
      this.#inStep,
    );
    if ("fallbacks" in response && response.fallbacks) this.fallbacks.push(...response.fallbacks);
    return response;
  }
  /** See {@linkcode StepDependencies.reask}. */
  reask(info: ReaskInfo): Promise<void> {
    return this.#run.reask(this.#state, this.#step, info);
  }
  /** See {@linkcode StepDependencies.commandContext}. */
  commandContext(): AgentCommandContext {
    return this.#run.commandContext(this.#state, this.#step);
  }
  /** See {@linkcode StepDependencies.waitIfPaused}. */
  waitIfPaused(): Promise<void> {
    return this.#run.waitIfPaused();
  }
  /** See {@linkcode StepDependencies.log}. */
  log(fields: { type: string; [k: string]: unknown }): Promise<void> {
    return this.#run.log(this.#state, fields);
  }
  /** See {@linkcode StepDependencies.warn}. */
  warn(message: string): void {
    this.#run.warn(message);
  }
  /** See {@linkcode StepDependencies.runChild}. */
  runChild(args: Record<string, unknown>): Promise<StepFlowResult> {
    return this.#run.runChild(this.#state, this.#step, args);
  }
  /** See {@linkcode StepDependencies.fanOut}. */
  fanOut(): Promise<StepResult> {
    return this.#run.fanOut(this.#state, this.#step, this.info);
  }
}
