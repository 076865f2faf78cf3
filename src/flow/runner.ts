/**
 * `StepFlowRunner`: the loop that runs an agent's step flow (docs/runner.md).
 *
 * Read `run()` then `#loop()` top to bottom: each pass of the loop is one iteration — the handler
 * of the current step's kind runs the step (`step_handlers.ts`: check-gated, gate-routed, command, input, agent)
 * and returns its outcome; the loop records it (history, events, log), lets a failure go through
 * the step's `onError` policy and completion conditions end a run that would go on, routes and
 * checkpoints. The loop keeps nothing of an iteration on the instance. The parts it uses live
 * beside it: the state and its checkpoints (`run_state.ts`, `checkpoint.ts`), the pure decisions
 * that turn an answer into an outcome (`decisions.ts`), pause and stop (`run_control.ts`), and the
 * backend call (`backend_call.ts`), an agent step's child run (`child_run.ts`).
 *
 * Long because: what is left here shares the run's private members — its
 * journal, control and events — with the loop: recording an iteration, failures, the wait and the
 * answer, the child run's start record, run control. Each concern's decisions live in the files
 * above; what stays is how it is recorded.
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { RunContext, RunState, StepInfo, ToolCallEvent } from "../events/types.ts";
import { agentBackend } from "../llm/agent_backend.ts";
import {
  exceedsDepth,
  excerpt,
  MAX_OUTPUT_DEPTH,
  PROMPT_EXCERPT_CHARS,
  type ReaskInfo,
} from "../engine/ask_structured.ts";
import type { RecordedCall } from "../llm/replay_file.ts";
import type { ToolTurnResponse } from "../llm/tool_turn.ts";
import { recordedCall } from "./llm_call_log.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import { PromptResolver } from "../prompt/resolver.ts";
import type { RunLock, RunStore } from "../store/types.ts";
import type { AgentCommandContext } from "./agent_command.ts";
import { backendRetryError, callBackend, type CallContext } from "./backend_call.ts";
import { RunMcpServers } from "./run_mcp_servers.ts";
import {
  createRunJournal,
  type RestoredRun,
  restoreRun,
  restoreUnchanged,
  type RunJournal,
} from "./checkpoint.ts";
import { BACKEND_SETUP_CODES } from "../llm/backend_error.ts";
import { toolCallLogFields } from "./tool_call_log.ts";
import {
  resumedLine,
  type ResumedStep,
  resumedSummary,
  type UnfinishedCall,
  unfinishedCallError,
} from "./tool_call_resume.ts";
import { InStepFlushFailed, StepCallJournal } from "./step_call_journal.ts";
import { answeredPermission, permissionPending, PermissionWait } from "./permission_wait.ts";
import { parsePermissionMode } from "../definition/permission_rule.ts";
import { type IterationToolCalls, noteToolCall, runPermissionHook } from "./permission_asks.ts";
import {
  completionOutcome,
  failureOutcome,
  maxIterationsError,
  type MovingOutcome,
  type StepError,
} from "./decisions.ts";
import {
  type AnswerOptions,
  MAX_ANSWERED_BY,
  type PendingInput,
  type RecordedAnswer,
  waitExpired,
} from "./input_request.ts";
import { OutputSchemaCache, permissionAnswerSchema } from "./output_validator.ts";
import { flowStep } from "./router.ts";
import {
  createRunnerControl,
  type RunnerControl,
  type StopCause,
  watchStops,
} from "./run_control.ts";
import {
  advance,
  endRun,
  newRunnerState,
  type RunnerState,
  runResult,
  stepInfo,
  storeHandoff,
  TERMINAL_STATUS,
  waitingResult,
} from "./run_state.ts";
import { IterationDependencies, type RunResources } from "./step_dependencies.ts";
import { DEFAULT_MAX_AGENT_DEPTH, driveChild } from "./child_run.ts";
import type { StepRecord, StepResult } from "./step_handler.ts";
import { type RunnableStepKind, STEP_HANDLERS } from "./step_handlers.ts";
import { startFlowTelemetry } from "./telemetry.ts";
import { meterBackend } from "./metered_backend.ts";
import {
  BudgetExceeded,
  budgetSpentBeforeStep,
  budgetStopInStep,
  startRunSpend,
} from "./run_spend.ts";
import type { SpendLedger } from "./spend_ledger.ts";
import type {
  CompletionReason,
  HistoryEntry,
  RunOptions,
  StepFlowResult,
  StepFlowRunnerOptions,
} from "./types.ts";
import { backoffDelay, sleep } from "../backoff.ts";
import { validationProblems } from "../llm/json_schema.ts";
import { newRunId } from "../store/run_id.ts";
import { assertRunGroup } from "../store/run_group.ts";

export type { RunnerState } from "./run_state.ts";

/**
 * Runs an agent definition.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition, ScriptedBackend, StepFlowRunner } from "jsr:@stepflow/core";
 *
 * const definition = await loadAgentDefinition("issue-solver");
 * const backend = new ScriptedBackend({
 *   "initial.issue": [{ output: { stepId: "initial.issue", next_action: { action: "complete" } } }],
 *   "complete.issue": [{ output: { stepId: "complete.issue", summary: "done" } }],
 * });
 * const result = await new StepFlowRunner(definition, { backend }).run({ args: { topic: "flaky test" } });
 * console.log(result.success, result.completionReason, result.state.history.length);
 * ```
 */
export class StepFlowRunner {
  readonly #def: AgentDefinition;
  readonly #options: StepFlowRunnerOptions;
  #state: RunState = "idle";
  #events: EventEmitter;
  /** Pause and stop of the current (or last) run. */
  #control?: RunnerControl;
  /** The run's MCP servers (chat backends): started on first use, closed when the run ends. */
  #mcpServers?: RunMcpServers;
  #ctx: RunContext = { runId: "" };
  #journal: RunJournal = createRunJournal(undefined);
  /** Whether the current run is a resume or redrive (see `restoreUnchanged`). */
  #continuing = false;
  /** The runner of the agent step's child run being driven, if any (pause and resume reach it). */
  #childRunner?: StepFlowRunner;
  /** The recorded tool calls of the step a resumed run was killed in, until that step runs. */
  #resumedStep?: ResumedStep;
  /** The current iteration's durable tool calls (a recorded step with tools). */
  #inStep?: StepCallJournal;
  /** The run's spend ledger: every call counted, every budget checked (run_spend.ts). */
  #spend?: SpendLedger;

  /**
   * Creates a runner for one agent definition.
   *
   * @param definition a loaded agent (see `loadAgentDefinition`)
   * @param options backend, events, store, limits
   */
  constructor(definition: AgentDefinition, options: StepFlowRunnerOptions = {}) {
    this.#def = definition;
    this.#options = options;
    const handlers = Array.isArray(options.events) ? options.events : [options.events];
    this.#events = createEventEmitter(
      handlers,
      (event, error) => this.#warn(`event handler ${event} threw: ${errorMessage(error)}`),
    );
  }

  /** The run state: `idle`, `running`, `paused`, or how the last run ended. */
  get state(): RunState {
    return this.#state;
  }

  /** Pauses the run before its next backend call (and an agent step's child run being driven). */
  pause(): void {
    this.#childRunner?.pause();
    if (this.#state !== "running" || !this.#control?.pause()) return;
    void this.#setState("paused");
    void this.#events.emit("onPause", this.#ctx);
  }

  /** Resumes a paused run (and its child run). */
  resume(): void {
    this.#childRunner?.resume();
    const release = this.#control?.resume();
    if (!release) return;
    void this.#setState("running");
    void this.#events.emit("onResume", this.#ctx);
    release();
  }

  /** Aborts the run: the call in flight is cancelled and the run ends `aborted`. */
  abort(): void {
    this.#stop("aborted");
  }

  /**
   * Answers a run that waits at an input step and continues it, in this process, to its next wait
   * or its end (the same result as {@linkcode StepFlowRunner.run}). The answer is checked against
   * the step's schema first: a bad answer is refused with the validator's message and nothing is
   * recorded. Otherwise it is recorded — who answered, when, what — in the same checkpoint that
   * moves the run from `waiting` to `running`, under the run's lock, so of two answers exactly one
   * is recorded and the other is refused.
   *
   * @example
   * ```ts ignore
   * const first = await runner.run({ args: { topic: "release" } });
   * if (first.completionReason === "waiting") {
   *   console.log(first.waiting!.prompt);
   *   const result = await runner.answer(first.runId, { decision: "next" }, { answeredBy: "ops" });
   *   console.log(result.completionReason);
   * }
   * ```
   *
   * @throws {StepflowError} `INPUT_NOT_WAITING` (the run does not wait: it was answered already,
   * runs, or ended; or it waits on another request), `INPUT_ANSWER_INVALID` (the answer does not
   * match the step's schema), `INPUT_WAIT_EXPIRED` (its `waitTimeout` passed), and what `run`
   * throws for a `resume`
   */
  answer(
    runId: string,
    value: unknown,
    options: AnswerOptions & Pick<RunOptions, "signal" | "backendChoice" | "permissionMode"> = {},
  ): Promise<StepFlowResult> {
    const { signal, backendChoice, permissionMode, ...answer } = options;
    return this.run({
      resume: runId,
      answer: { ...answer, value },
      ...(signal ? { signal } : {}),
      ...(backendChoice ? { backendChoice } : {}),
      ...(permissionMode ? { permissionMode } : {}),
    });
  }

  /**
   * Records the answer to a run that waits at an input step without continuing it here: the same
   * checks and the same recording as {@linkcode StepFlowRunner.answer} (schema first, then one
   * checkpoint under the run's lock that records the answer and moves the run to `running`), after
   * which the lock is released and the run is left for another process to continue with
   * `run({ resume })` — a worker, when the run was submitted to the queue (`answerSubmittedRun`
   * of the worker module re-queues it). Returns what was recorded.
   *
   * @example
   * ```ts ignore
   * const recorded = await runner.recordAnswer(runId, { decision: "next" }, { answeredBy: "ops" });
   * console.log(recorded.answeredAt);
   * const result = await runner.run({ resume: runId }); // here, or in any other process
   * ```
   *
   * @throws {StepflowError} what {@linkcode StepFlowRunner.answer} throws before the run goes on
   */
  async recordAnswer(
    runId: string,
    value: unknown,
    options: AnswerOptions = {},
  ): Promise<RecordedAnswer> {
    const store = this.#options.store;
    if (!store) {
      throw new StepflowError(
        "NO_RUN_STORE",
        `Cannot answer run ${runId}: the runner has no store. Pass options.store (the store that recorded the run).`,
      );
    }
    const lock = await lockRun(store, runId, true);
    try {
      let restored: RestoredRun;
      try {
        restored = await restoreRun(store, this.#def, runId, false, (m) => this.#warn(m));
      } catch (error) {
        if (error instanceof StepflowError && error.code === "RUN_NOT_RESUMABLE") {
          throw notWaiting(runId, "it already ended; nothing waits for an answer");
        }
        throw error;
      }
      const { state } = restored;
      const answer = (await this.#takeAnswer(state, { ...options, value }))!;
      const journal = createRunJournal(store, restored.logEntries, restored.logged);
      // The answer and the move out of `waiting` are one checkpoint: both or neither. Its log line
      // follows the commit, so a process killed in between never leaves an answer line for a run
      // that still waits (the next drive writes a missing line: `answerUnlogged`).
      delete state.waiting;
      state.answer = answer;
      await journal.checkpoint(state, "running");
      await journal.log(state, { type: "input_answer", ...answer });
      return answer;
    } finally {
      await lock?.release();
    }
  }

  /**
   * Runs the flow to its end and returns the result. It never throws for a flow failure (that is in
   * the result); it throws only for misuse: a run already in progress, an unknown `resume` id, a
   * backend that cannot be created.
   */
  async run(options: RunOptions = {}): Promise<StepFlowResult> {
    if (this.#state === "running" || this.#state === "paused") {
      throw new StepflowError(
        "RUN_IN_PROGRESS",
        "This runner is already running a flow; create another StepFlowRunner.",
      );
    }
    const store = this.#options.store;
    // The backend is chosen at the edge: the caller's, else the agent's own (agentBackend).
    const backend = this.#options.backend ?? await agentBackend(this.#def.agent.behavior, {
      model: this.#options.model,
      onWarning: (m) => this.#warn(m),
    });
    // Lock before reading a checkpoint: a second process resuming the same run must fail here, not
    // continue from a checkpoint the first one is about to move past.
    if (options.group !== undefined) assertRunGroup(options.group, "RunOptions.group");
    if (options.permissionMode !== undefined) assertRunPermissionMode(options.permissionMode);
    const runId = options.resume ?? options.redrive ?? options.runId ?? newRunId();
    if (options.answer && !options.resume) {
      throw new StepflowError(
        "USAGE",
        "An answer continues a waiting run: give the run's id as `resume` (or call answer(runId, value)).",
      );
    }
    const lock: RunLock | undefined = await lockRun(store, runId, options.answer !== undefined);
    let restored: RestoredRun;
    let answer: RecordedAnswer | undefined;
    try {
      // A cancel request nobody was driving the run to see must not cancel this (new) drive.
      await store?.takeCancelRequest?.(runId);
      restored = options.resume ?? options.redrive
        ? await restoreRun(store, this.#def, runId, !options.resume, (m) => this.#warn(m))
        : {
          state: newRunnerState(this.#def, options, runId),
          history: [],
          // A child run killed before its first checkpoint left log lines; its new start follows them.
          logEntries: options.parent && store ? (await store.readLog(runId)).length : 0,
        };
      answer = await this.#takeAnswer(restored.state, options.answer);
      const unfinished = restored.inStep?.unfinished.filter((c) => !c.idempotent) ?? [];
      if (unfinished.length > 0 && !await rerunAllowed(options.rerunUnfinishedCall, unfinished)) {
        throw unfinishedCallError(
          runId,
          this.#def.name,
          restored.inStep!.marker.stepId,
          unfinished,
        );
      }
      this.#spend = startRunSpend(this.#def, this.#options, options, restored.state, backend);
    } catch (error) {
      await lock?.release();
      if (
        options.answer && error instanceof StepflowError && error.code === "RUN_NOT_RESUMABLE"
      ) {
        throw notWaiting(runId, "it already ended; nothing waits for an answer");
      }
      throw error;
    }
    const { state, history } = restored;
    this.#continuing = restored.before !== undefined;
    this.#resumedStep = restored.inStep;
    if (options.backendChoice) state.backendChoice = options.backendChoice;
    if (options.permissionMode) state.permissionMode = options.permissionMode;
    this.#journal = createRunJournal(store, restored.logEntries, restored.logged);
    const mode = options.resume ? "resume" : options.redrive ? "redrive" : "start";
    // `mode` and the usage so far let progress views say "resumed" and keep counting tokens.
    this.#ctx = { runId: state.runId, agent: this.#def.name, args: state.args };
    const startCtx = { ...this.#ctx, mode, iteration: state.iteration, usage: { ...state.usage } };
    this.#control = createRunnerControl();
    const mcpServers = this.#mcpServers = new RunMcpServers();
    const detach = watchStops((cause) => this.#stop(cause), {
      signal: options.signal,
      runTimeoutMs: this.#runTimeout(),
      ...(store?.takeCancelRequest
        ? { takeCancelRequest: () => store.takeCancelRequest!(runId) }
        : {}),
      cancelPollMs: this.#options.cancelPollMs ?? 1000,
      onPollError: (error) =>
        this.#warn(`cannot check for a cancel request of run ${runId}: ${errorMessage(error)}`),
    });
    // OpenTelemetry spans: undefined, and free, unless a tracer provider is registered.
    const telemetry = startFlowTelemetry(this.#def.name, mode, this.#events);
    try {
      await this.#setState("running");
      await this.#events.emit("onPlanStart", this.#def, startCtx);
      await this.#journal.log(state, {
        type: `run_${mode}`,
        stepId: state.currentStepId,
        args: state.args,
        historyLength: state.historyLength,
        ...(restored.inStep ? { inStep: resumedSummary(restored.inStep) } : {}),
      });
      if (answer) {
        // The answer and the move out of `waiting` are one checkpoint: both or neither.
        delete state.waiting;
        state.answer = answer;
      } else if (state.waiting?.child) {
        // Resumed without an answer: the agent step drives its child again (and waits again if
        // the child still does).
        delete state.waiting;
      }
      await this.#journal.checkpoint(state, "running");
      // The answer's line follows the checkpoint that commits it (see `recordAnswer`), or is
      // written now when the drive that committed it stopped before writing it.
      if (state.answer && (answer || restored.answerUnlogged)) {
        await this.#journal.log(state, { type: "input_answer", ...state.answer });
      }
      const metered = meterBackend(backend, this.#spend!, (f) => this.#journal.log(state, f));
      await this.#loop(state, history, telemetry?.backend(metered) ?? metered);
      const end = state.end;
      if (end) {
        await this.#journal.log(state, {
          type: "run_end",
          stepId: end.stepId,
          reason: end.reason,
          ...(end.error ? { error: end.error } : {}),
          usage: { ...state.usage },
        });
        await this.#journal.checkpoint(state, TERMINAL_STATUS[end.reason]);
      } else {
        // An input step stopped the drive: the run waits, and the lock is released below.
        await this.#journal.checkpoint(state, "waiting");
      }
    } catch (error) {
      // Only a store or handler-independent I/O failure, or an unusable backend on a resume or
      // redrive, gets here; the runner must stay reusable.
      telemetry?.fail(error);
      await this.#setState("failed");
      if (
        restored.before && error instanceof StepflowError && BACKEND_SETUP_CODES.has(error.code)
      ) {
        throw await restoreUnchanged(this.#journal, restored.before, state, error);
      }
      throw error;
    } finally {
      detach();
      // No server process outlives its run, however the run ended.
      await mcpServers.close().catch((error) =>
        this.#warn(`closing the run's MCP servers: ${errorMessage(error)}`)
      );
      await lock?.release();
    }
    const result = state.end ? runResult(state, history) : waitingResult(state, history);
    const status = TERMINAL_STATUS[result.completionReason];
    await this.#setState(status);
    await this.#events.emit("onPlanEnd", this.#def, { ...this.#ctx, status, result });
    return result;
  }

  // ---------------------------------------------------------------------------------------------
  // The loop: one pass is one iteration, read top to bottom
  // ---------------------------------------------------------------------------------------------

  async #loop(state: RunnerState, history: HistoryEntry[], backend: LlmBackend): Promise<void> {
    const def = this.#def;
    const maxIterations = this.#options.maxTotalIterations ?? def.limits.maxTotalIterations;
    const resources: RunResources = {
      definition: def,
      options: this.#options,
      events: this.#events,
      prompts: new PromptResolver({
        agentDir: def.dir,
        basePath: def.basePath,
        fallbackDir: def.agent.prompts?.fallbackDir,
        allowFallback: this.#options.allowFallback,
        onWarning: (m: string) => this.#warn(m),
      }),
      systemPrompts: new PromptResolver({ agentDir: def.dir, basePath: "." }),
      schemas: new OutputSchemaCache(def.dir),
      logStepStart: (state, step, prompt) => this.#logStepStart(state, step, prompt),
      call: (request, state, step, calls, toolCalls) =>
        this.#call(backend, request, state, step, calls, toolCalls),
      reask: (state, step, reask) => this.#reask(state, step, reask),
      commandContext: (state, step) => this.#commandContext(state, step),
      waitIfPaused: () => this.#control!.waitIfPaused(),
      log: (state, fields) => this.#journal.log(state, fields),
      warn: (message) => this.#warn(message),
      runChild: (state, step, args) => this.#runChild(backend, state, step, args),
    };
    const control = this.#control!;

    while (!state.end) {
      // 1. A stop, the iteration limit, or a current step the agent lacks ends the run here.
      if (control.stopCause) {
        this.#end(state, control.stopCause, state.currentStepId);
        break;
      }
      const spent = budgetSpentBeforeStep(this.#spend!, state, def);
      if (spent) {
        this.#end(state, "budget_exceeded", state.currentStepId, spent);
        break;
      }
      if (state.iteration >= maxIterations) {
        const error = maxIterationsError(maxIterations, state.currentStepId);
        this.#end(state, "max_iterations", state.currentStepId, error);
        break;
      }
      const step = flowStep(def, state.currentStepId);
      if (!step) {
        // Every route is checked before it is taken; this guards the invariant, never a crash.
        this.#end(state, "step_routing_failed", state.currentStepId, {
          code: "STEP_ROUTING_FAILED",
          message: `[StepFlow] "${state.currentStepId}" is not a flow step of agent "${def.name}".`,
          stepId: state.currentStepId,
        });
        break;
      }

      // 2. The iteration starts: counted and announced.
      // The step is entered again: what the marker said is in #resumedStep now.
      delete state.inStep;
      const agentTools = def.agent.behavior.allowedTools;
      this.#inStep = StepCallJournal.enter(
        this.#journal,
        state,
        step,
        agentTools,
        this.#resumedStep,
      );
      this.#resumedStep = undefined;
      state.iteration++;
      state.order++;
      const info = stepInfo(state, step);
      const startedAt = new Date();
      await this.#events.emit("onStepStart", info);
      if (this.#inStep?.resumed) {
        await this.#events.emit("onStepLog", info, resumedLine(this.#inStep.resumed), "info");
      }

      // 3. The handler of the step's kind runs the step (src/flow/step_handlers.ts).
      const deps = new IterationDependencies(resources, state, step, info);
      let result: StepResult;
      const inStep = this.#inStep;
      try {
        // flowStep never returns a `section` step (a template), so every kind here has a handler.
        result = await STEP_HANDLERS[step.kind as RunnableStepKind](step, state, deps);
      } catch (error) {
        result = { error };
      } finally {
        this.#inStep = undefined;
      }
      // (A handler may return a call's error as its result: a check call's, for one.)
      // A store that failed to record a tool call stops the run, as a failed checkpoint does.
      if (result.error instanceof InStepFlushFailed) throw result.error.cause;
      if (result.error instanceof BudgetExceeded) {
        const stop = budgetStopInStep(this.#spend!, state, def, step, inStep, result.error);
        this.#end(state, "budget_exceeded", step.id, stop);
        break;
      }
      if (result.error instanceof PermissionWait && inStep) {
        await this.#waitForPermission(state, inStep, info, result.error);
        break;
      }
      if (result.outcome?.kind === "wait") {
        await this.#wait(state, step, info, result.outcome.prompt, result.outcome.child);
        break;
      }
      if (result.handoff) storeHandoff(state, step.id, result.handoff);
      const entry = historyEntry(state, step, startedAt, result.record);
      if (deps.toolCalls.list.length > 0) entry.toolCalls = deps.toolCalls.list;
      if (deps.toolCalls.omitted > 0) entry.toolCallsOmitted = deps.toolCalls.omitted;

      // 4. Its outcome: a failure goes through the step's onError policy; a reported failure is
      // told; completion conditions (agent.json `completion`) end a run that would go on.
      let outcome: MovingOutcome;
      if (result.outcome === undefined) {
        if (!deps.wasStarted) await this.#logStepStart(state, step);
        outcome = await this.#onStepFailure(state, step, info, result.error, entry);
      } else if (result.failure) {
        const { error, code, fields } = result.failure;
        await this.#reportError(state, info, entry, error, code, fields);
        outcome = result.outcome;
      } else {
        const response = result.response;
        const completion = completionOutcome(
          def.agent.completion,
          result.outcome,
          state.iteration,
          () => response ? answerText(response) : "",
        );
        if (completion.met !== undefined) {
          this.#warn(
            `step "${state.currentStepId}": completion condition met (${completion.met}); the run completes`,
          );
        }
        outcome = completion.outcome;
      }

      // 5. History, events, log, the move to the next step, the checkpoint.
      entry.durationMs = Date.now() - startedAt.getTime();
      await this.#record(state, history, entry, outcome, info, result.followingEntries, deps.calls);
    }
  }

  /** The `step_start` log entry, with the prompt sent (cut to 16,384 characters) when known. */
  async #logStepStart(state: RunnerState, step: FlowStep, prompt?: string): Promise<void> {
    if (!this.#journal.recording) return;
    const fields: { type: string; [k: string]: unknown } = {
      type: "step_start",
      stepId: step.id,
      attempt: state.attempt,
    };
    if (prompt !== undefined) fields.prompt = excerpt(prompt, PROMPT_EXCERPT_CHARS);
    await this.#journal.log(state, fields);
  }

  /**
   * Makes a re-ask visible before it is sent: an `onStepRetry` event whose error has the code
   * `OUTPUT_REASK` (backend retries use `BACKEND_RETRY`), and a `step_reask` log entry with the
   * rejected answer.
   */
  async #reask(state: RunnerState, step: FlowStep, reask: ReaskInfo): Promise<void> {
    const error = new StepflowError(
      "OUTPUT_REASK",
      `Step "${step.id}": re-asking (${reask.attempt}) because ${reask.reason}${
        reask.errors.length > 0 ? `: ${reask.errors.join("; ")}` : ""
      }`,
      { details: { stepId: step.id, reason: reask.reason, errors: reask.errors } },
    );
    await this.#events.emit("onStepRetry", stepInfo(state, step), reask.attempt, error);
    await this.#journal.log(state, {
      type: "step_reask",
      stepId: step.id,
      attempt: reask.attempt,
      reason: reask.reason,
      errors: reask.errors,
      answer: reask.answer,
    });
  }

  /** Records an iteration: the move to the next step, history, events, log, the checkpoint. */
  async #record(
    state: RunnerState,
    history: HistoryEntry[],
    entry: HistoryEntry,
    outcome: MovingOutcome,
    info: StepInfo,
    following: readonly HistoryEntry[] = [],
    calls: readonly RecordedCall[] = [],
  ): Promise<void> {
    advance(state, entry, outcome, this.#runTimeout());
    history.push(entry);
    // Each validator run is a history entry of its own, after the answer it checked.
    for (const v of following) history.push(v);
    state.historyLength = history.length;
    await this.#events.emit("onStepEnd", info, {
      transition: entry.transition,
      intent: entry.intent,
      nextStepId: entry.nextStepId,
      checkResult: entry.checkResult,
      error: entry.error,
    });
    // Built only when there is a store: this runs on every iteration.
    if (this.#journal.recording) {
      await this.#journal.log(state, {
        type: "step_end",
        stepId: entry.stepId,
        entry,
        // The iteration's backend calls (replay files: src/flow/llm_call_log.ts).
        ...(calls.length > 0 ? { calls } : {}),
        ...(entry.answer ? { answer: entry.answer } : {}),
        usage: { ...state.usage },
        ...(Object.hasOwn(state.handoff, entry.stepId)
          ? { handoff: state.handoff[entry.stepId] }
          : {}),
      });
      for (const v of following) {
        await this.#journal.log(state, {
          type: "step_end",
          stepId: v.stepId,
          entry: v,
          validator: true,
        });
      }
    }
    // The iteration that ends the run is committed by run() together with run_end under the
    // terminal status: a terminal checkpoint committed here, before run_end, and a crash in between
    // left an ended run without run_end that nothing resumes.
    if (!state.end) await this.#journal.checkpoint(state, "running");
  }

  // ---------------------------------------------------------------------------------------------
  // What an iteration does besides the loop's own lines: the call, commands, validators, failures
  // ---------------------------------------------------------------------------------------------

  /**
   * One backend call of the current iteration (see `callBackend`), kept in `calls` for the
   * iteration's `step_end` entry when the run is recorded.
   */
  async #call(
    backend: LlmBackend,
    request: LlmRequest,
    state: RunnerState,
    step: FlowStep,
    calls: RecordedCall[],
    toolCalls: IterationToolCalls,
  ): Promise<LlmResponse> {
    // Nothing to keep without a store (the hot path of in-memory runs stays as lean as the call).
    if (!this.#journal.recording) {
      return this.#sendCall(backend, request, state, step, undefined, calls.length, toolCalls);
    }
    // The model's turns of a step with tools, so a recording asks for the same tool calls.
    const turns: ToolTurnResponse[] = [];
    // Its place among the iteration's calls names a tool-loop call's lines in the run log.
    const callIndex = calls.length;
    const keep = (outcome: { response: LlmResponse } | { error: string }) => {
      const model = (this.#options.backend ?? backend) as { model?: unknown };
      const name = typeof model.model === "string" ? model.model : undefined;
      calls.push(recordedCall(request, outcome, name, turns));
    };
    let response: LlmResponse;
    try {
      response = await this.#sendCall(backend, request, state, step, turns, callIndex, toolCalls);
    } catch (error) {
      // A failed call is part of the recording (a replay fails the same way); a stopped run's is not.
      if (
        !this.#control!.stopCause &&
        !(error instanceof StepflowError && error.code.startsWith("REPLAY_"))
      ) {
        keep({ error: errorMessage(error) });
      }
      throw error;
    }
    keep({ response });
    return response;
  }

  /** Sends one call through the retry policy, the step timeout and pause. */
  #sendCall(
    backend: LlmBackend,
    request: LlmRequest,
    state: RunnerState,
    step: FlowStep,
    turns: ToolTurnResponse[] | undefined,
    callIndex: number,
    toolCalls: IterationToolCalls,
  ): Promise<LlmResponse> {
    // The tool loop's hooks exist only for a step that offers tools.
    const tools = request.allowedTools?.length
      ? this.#toolHooks(state, step, turns, callIndex, toolCalls)
      : undefined;
    return callBackend(backend, request, state, step, {
      signal: this.#control!.signal,
      spend: this.#spend,
      timeoutMs: step.timeoutMs ?? this.#options.stepTimeoutMs ?? this.#def.limits.stepTimeoutMs,
      waitIfPaused: () => this.#control!.waitIfPaused(),
      // The calls of a backend that runs its own tools (claude-code) take the same path.
      onBackendToolCall: ({ stepId: _stepId, ...call }) =>
        this.#reportToolCall(state, step, call, toolCalls, false),
      ...tools,
      // Streamed text costs an event per piece: only when someone listens.
      ...(this.#events.has("onStepText")
        ? {
          onText: (text: string) =>
            void this.#events.emit("onStepText", stepInfo(state, step), text),
        }
        : {}),
      onRetry: (retry) => {
        void this.#events.emit(
          "onStepRetry",
          stepInfo(state, step),
          retry.attempt,
          backendRetryError(retry),
        );
        void this.#journal.log(state, {
          type: "backend_retry",
          stepId: step.id,
          attempt: retry.attempt,
          delayMs: retry.delayMs,
          reason: retry.reason,
        });
      },
    });
  }

  /**
   * The tool loop's hooks of a step with tools: who answers a call that asks (a recorded answer
   * to a wait, the run's grants, then `onPermissionRequest`, else the run waits when asks wait),
   * each call reported (events, log, the history's summary), the run's MCP servers, each model
   * turn kept for a recording — and, when the run is recorded, each turn and call made durable
   * (`step_call_journal.ts`).
   */
  #toolHooks(
    state: RunnerState,
    step: FlowStep,
    turns: ToolTurnResponse[] | undefined,
    callIndex: number,
    toolCalls: IterationToolCalls,
  ): Pick<
    CallContext,
    "onToolCallEvent" | "onTurn" | "mcpServers" | "resume" | "onPermissionRequest"
  > {
    const recorder = this.#inStep?.recorder(callIndex);
    // Calls that finished before an interruption are replayed, not run: the iteration's record
    // of its calls takes them as they were logged.
    for (const done of recorder?.resume?.finished.values() ?? []) {
      if (done.call) noteToolCall(toolCalls, done.call);
    }
    const asks = this.#options.permissionAsks ?? this.#def.agent.behavior.permissionAsks;
    // A wait needs the step recorded (its answer resumes the run inside the step).
    const waits = asks === "wait" && this.#inStep !== undefined;
    const ask = runPermissionHook({
      runId: state.runId,
      agent: state.agent,
      iteration: state.iteration,
      cwd: state.cwd,
      grants: () => state.permissionGrants ?? [],
      signal: this.#control!.signal,
      ...(this.#options.onPermissionRequest ? { answerer: this.#options.onPermissionRequest } : {}),
      recordGrant: async (grant) => {
        (state.permissionGrants ??= []).push(grant);
        await this.#journal.log(state, { type: "permission_grant", ...grant });
      },
      warn: (message) => this.#warn(message),
    });
    return {
      ...(this.#mcpServers ? { mcpServers: this.#mcpServers } : {}),
      onPermissionRequest: async (request, signal) => {
        const answered = answeredPermission(state, request);
        if (answered !== undefined) return answered;
        const reply = await ask(request, signal);
        if (reply !== undefined) return reply;
        if (waits) throw new PermissionWait(request);
        return undefined;
      },
      ...(recorder?.resume ? { resume: recorder.resume } : {}),
      onToolCallEvent: async ({ stepId: _stepId, idempotent, ...call }) => {
        await recorder?.moment(call, idempotent);
        await this.#reportToolCall(state, step, call, toolCalls, recorder !== undefined);
      },
      onTurn: async (response: ToolTurnResponse, replayed: boolean) => {
        turns?.push(response);
        await recorder?.turn(response, replayed);
      },
    };
  }

  /**
   * The one path of a tool call's moments, whoever ran it (the tool loop, or a backend that runs
   * its own tools): an `onToolCall` event each, and once it ended its summary in the iteration's
   * history entry and a `tool_call` line in the run log.
   */
  async #reportToolCall(
    state: RunnerState,
    step: FlowStep,
    call: ToolCallEvent,
    toolCalls: IterationToolCalls,
    recorded: boolean,
  ): Promise<void> {
    await this.#events.emit("onToolCall", stepInfo(state, step), call);
    if (call.phase !== "finished") return;
    noteToolCall(toolCalls, call);
    // A recorded tool-loop call has its lines written by the step's call journal already.
    if (!recorded) void this.#journal.log(state, toolCallLogFields(step.id, call));
  }

  /** Agent features: what a command step or validator needs to run an allowed command. */
  #commandContext(state: RunnerState, step: FlowStep): AgentCommandContext {
    return {
      commands: this.#def.agent.commands,
      allowRun: this.#options.allowRun,
      args: state.args,
      cwd: state.cwd,
      signal: this.#control!.signal,
      agent: this.#def.name,
      stepId: step.id,
    };
  }

  /**
   * Reports a failed iteration: the history entry's error, `onStepError` with `error`, and a
   * `step_error` log line with `code` (plus `fields`). Returns the message.
   */
  async #reportError(
    state: RunnerState,
    info: StepInfo,
    entry: HistoryEntry,
    error: unknown,
    code: string,
    fields: Record<string, unknown> = {},
  ): Promise<string> {
    const message = errorMessage(error);
    entry.error = message;
    await this.#events.emit("onStepError", info, error);
    await this.#journal.log(state, {
      type: "step_error",
      stepId: info.stepId,
      code,
      message,
      ...fields,
      ...(entry.answer ? { answer: entry.answer } : {}),
    });
    return message;
  }

  /**
   * An execution failure (docs/runner.md, "Error policies"): reported, then the step's `onError`
   * policy decides; a retry waits its backoff first, a jump is announced.
   */
  async #onStepFailure(
    state: RunnerState,
    step: FlowStep,
    info: StepInfo,
    error: unknown,
    entry: HistoryEntry,
  ): Promise<MovingOutcome> {
    const control = this.#control!;
    if (control.stopCause) {
      entry.error = `run ${control.stopCause}`;
      return { kind: "end", reason: control.stopCause, transition: "abort" };
    }
    const code = error instanceof StepflowError ? error.code : "BACKEND_ERROR";
    const message = await this.#reportError(state, info, entry, error, code);
    // A resume or redrive whose backend cannot be used leaves the run as it was (run() restores it).
    if (this.#continuing && BACKEND_SETUP_CODES.has(code)) throw error;
    const outcome = failureOutcome(step, { code, message }, state.errorRetries);
    if (outcome.kind === "goto" && outcome.transition === "jump") {
      await this.#events.emit("onStepJump", info, outcome.stepId);
    } else if (outcome.kind === "goto" && outcome.transition === "retry") {
      state.errorRetries++;
      await this.#events.emit("onStepRetry", info, state.errorRetries, error);
      await this.#journal.log(state, {
        type: "step_retry",
        stepId: step.id,
        attempt: state.errorRetries,
      });
      try {
        await sleep(
          backoffDelay(state.errorRetries, this.#options.retryBackoff),
          control.signal,
        );
      } catch {
        return { kind: "end", reason: control.stopCause ?? "cancelled", transition: "abort" };
      }
    }
    return outcome;
  }

  // ---------------------------------------------------------------------------------------------
  // Input steps: the wait and the answer
  // ---------------------------------------------------------------------------------------------

  /**
   * Records that the run waits at an input step: the request in the run state (checkpointed
   * `waiting` by run()), an `input_request` log line, an `onStepLog` for progress views. A wait is
   * not an iteration: the counters go back, and the iteration that routes on the answer is the
   * step's.
   */
  async #wait(
    state: RunnerState,
    step: FlowStep,
    info: StepInfo,
    prompt: string,
    child?: PendingInput,
  ): Promise<void> {
    state.iteration--;
    state.order--;
    const now = Date.now();
    const pending: PendingInput = child
      ? {
        // The child's request, waited on by the parent's agent step (answered through the parent).
        ...child,
        stepId: step.id,
        child: {
          runId: state.child!.runId,
          stepId: child.child?.stepId ?? child.stepId,
          agentDir: child.child?.agentDir ?? step.child!.dir,
        },
      }
      : {
        requestId: crypto.randomUUID(),
        stepId: step.id,
        prompt,
        schemaRef: step.outputSchemaRef!,
        requestedAt: new Date(now).toISOString(),
      };
    if (!child && step.waitTimeout) {
      pending.expiresAt = new Date(now + step.waitTimeout.ms).toISOString();
      pending.timeoutIntent = step.waitTimeout.intent;
    }
    state.waiting = pending;
    await this.#journal.log(state, {
      type: "input_request",
      stepId: step.id,
      requestId: pending.requestId,
      prompt: excerpt(prompt, PROMPT_EXCERPT_CHARS),
      schema: pending.schemaRef,
      ...(pending.expiresAt ? { expiresAt: pending.expiresAt } : {}),
      ...(pending.child ? { child: pending.child } : {}),
    });
    await this.#events.emit(
      "onStepLog",
      info,
      `waiting for an answer (run ${state.runId})`,
      "info",
    );
  }

  /**
   * Records that the run waits for permission for a tool call (`permissionAsks: "wait"`): the
   * request in the run state, an `input_request` log line, and the state put back as the step
   * found it with the step's marker, so the `waiting` checkpoint run() saves is one the answer
   * resumes inside the step from (the call then runs or is refused).
   */
  async #waitForPermission(
    state: RunnerState,
    inStep: StepCallJournal,
    info: StepInfo,
    wait: PermissionWait,
  ): Promise<void> {
    const pending = permissionPending(wait.ask, new Date());
    await this.#journal.log(state, {
      type: "input_request",
      stepId: pending.stepId,
      requestId: pending.requestId,
      prompt: excerpt(pending.prompt, PROMPT_EXCERPT_CHARS),
      schema: pending.schemaRef,
      permission: pending.permission,
    });
    inStep.suspend(state);
    state.waiting = pending;
    await this.#events.emit(
      "onStepLog",
      info,
      `waiting for permission to run ${pending.permission!.tool} (run ${state.runId})`,
      "info",
    );
  }

  /**
   * What a drive of a restored run does about its wait: with an answer, the answer to record
   * (checked against the step's schema; nothing is recorded when it is refused); without one, a
   * waiting run continues only when its `waitTimeout` passed (the step then takes the timeout's
   * intent).
   */
  async #takeAnswer(
    state: RunnerState,
    given: RunOptions["answer"],
  ): Promise<RecordedAnswer | undefined> {
    const pending = state.waiting;
    const runId = state.runId;
    const step = pending ? flowStep(this.#def, pending.stepId) : undefined;
    const expired = pending !== undefined &&
      (step?.waitTimeout !== undefined || pending.child !== undefined) &&
      waitExpired(pending, Date.now());
    if (given === undefined) {
      // A child's wait: resuming drives the child again (answered directly, it may have moved on).
      if (!pending || expired || pending.child) return undefined;
      const what = pending.permission
        ? `for permission to run ${pending.permission.tool} in step "${pending.stepId}"`
        : `for an answer at input step "${pending.stepId}"`;
      const value = pending.permission ? `'{"decision":"allow"}' (or "deny")` : "'<json>'";
      throw new StepflowError(
        "INPUT_WAITING",
        `Run ${runId} waits ${what}; resuming it needs the answer. Answer it with: run-agent --agent ${this.#def.name} --answer ${runId} --value ${value}.`,
        { details: { runId, stepId: pending.stepId, requestId: pending.requestId } },
      );
    }
    if (!pending || (given.requestId !== undefined && given.requestId !== pending.requestId)) {
      throw notWaiting(
        runId,
        pending
          ? `it waits on request ${pending.requestId}, not ${given.requestId} (that wait was answered already)`
          : state.end
          ? `it ended (${state.end.reason})`
          : "it is not waiting for an answer (it was answered already, or it never reached an input step)",
      );
    }
    if (pending.child && this.#options.store) {
      // The child may have been answered directly since: then this answer is not its to take.
      const child = await this.#options.store.loadCheckpoint(pending.child.runId);
      const waiting = (child?.state as { waiting?: PendingInput } | undefined)?.waiting;
      if (child?.status !== "waiting" || waiting?.requestId !== pending.requestId) {
        throw notWaiting(
          runId,
          `its child run ${pending.child.runId} no longer waits on this request (it was answered directly); continue this run with --resume ${runId}`,
        );
      }
    }
    if (expired) {
      throw new StepflowError(
        "INPUT_WAIT_EXPIRED",
        `Run ${runId}: the wait at input step "${pending.stepId}" passed at ${pending.expiresAt} (waitTimeout); the answer was not recorded. Resume the run (--resume ${runId}) to take the timeout's intent "${pending.timeoutIntent}".`,
        { details: { runId, stepId: pending.stepId, expiresAt: pending.expiresAt } },
      );
    }
    const schema = pending.permission
      ? permissionAnswerSchema()
      : await new OutputSchemaCache(pending.child?.agentDir ?? this.#def.dir).resolve(
        pending.schemaRef,
        pending.child?.stepId ?? pending.stepId,
      );
    // An answer is untrusted input like a model's: bounded the same way before anything reads it.
    const problems = exceedsDepth(given.value, MAX_OUTPUT_DEPTH)
      ? [`(root): must not be nested deeper than ${MAX_OUTPUT_DEPTH} levels`]
      : validationProblems(schema.validate, given.value);
    if (problems.length > 0) {
      throw new StepflowError(
        "INPUT_ANSWER_INVALID",
        `The answer to input step "${pending.stepId}" of run ${runId} does not match ${schema.pointer} in ${schema.file}: ${
          problems.join("; ")
        }. Nothing was recorded; answer again with a value the schema accepts.`,
        { details: { runId, stepId: pending.stepId, problems } },
      );
    }
    return {
      requestId: pending.requestId,
      stepId: pending.stepId,
      value: given.value,
      answeredBy: (given.answeredBy ?? "api").slice(0, MAX_ANSWERED_BY),
      answeredAt: new Date().toISOString(),
      ...(pending.permission
        ? { permission: { tool: pending.permission.tool, callId: pending.permission.callId } }
        : {}),
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Agent steps: the child run
  // ---------------------------------------------------------------------------------------------

  /**
   * Runs or continues an agent step's child run (`driveChild`): on this run's store and backend
   * (the caller's, else the one this run created), stopped with this run, its start recorded in
   * this run's log and checkpoint before it starts.
   */
  async #runChild(
    backend: LlmBackend,
    state: RunnerState,
    step: FlowStep,
    args: Record<string, unknown>,
  ): Promise<StepFlowResult> {
    const info = stepInfo(state, step);
    try {
      return await this.#driveChild(backend, state, step, args, info);
    } finally {
      this.#childRunner = undefined;
    }
  }

  #driveChild(
    backend: LlmBackend,
    state: RunnerState,
    step: FlowStep,
    args: Record<string, unknown>,
    info: StepInfo,
  ): Promise<StepFlowResult> {
    return driveChild({
      state,
      step,
      args,
      store: this.#options.store,
      signal: this.#control!.signal,
      maxDepth: this.#options.maxAgentDepth ?? DEFAULT_MAX_AGENT_DEPTH,
      parentAgent: this.#def.name,
      spend: this.#spend,
      runner: (definition) => {
        const child = new StepFlowRunner(definition, {
          ...this.#options,
          backend: this.#options.backend ?? backend,
          events: [],
          onWarning: (m) => this.#warn(`agent step "${step.id}" (${definition.name}): ${m}`),
        });
        this.#childRunner = child;
        return child;
      },
      record: async (link) => {
        await this.#journal.log(state, {
          type: "agent_start",
          stepId: step.id,
          childRunId: link.runId,
          agent: link.agent,
        });
        // Durable before the child starts: a resume continues this child, never a second one.
        await this.#journal.checkpoint(state, "running");
        await this.#events.emit(
          "onStepLog",
          info,
          `child run ${link.runId} (agent ${link.agent}) started`,
          "info",
        );
      },
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Run control
  // ---------------------------------------------------------------------------------------------

  /** Ends the run before an iteration (stop, iteration limit, unknown step). */
  #end(state: RunnerState, reason: CompletionReason, stepId: string, error?: StepError): void {
    endRun(state, reason, stepId, this.#runTimeout(), error);
  }

  async #setState(next: RunState): Promise<void> {
    const previous = this.#state;
    if (previous === next) return;
    this.#state = next;
    await this.#events.emit("onStateChange", next, previous, this.#ctx);
  }

  /** Stops the run once (the first cause wins) and tells the handlers. */
  #stop(cause: StopCause): void {
    if (!this.#control?.stop(cause)) return;
    if (cause === "timeout") void this.#events.emit("onTimeout", this.#ctx);
    else void this.#events.emit("onAbort", this.#ctx);
  }

  #runTimeout(): number | undefined {
    return this.#options.runTimeoutMs ?? this.#def.limits.runTimeoutMs;
  }

  #warn(message: string): void {
    (this.#options.onWarning ?? ((m: string) => console.warn(`[stepflow] ${m}`)))(message);
  }
}

/** `RunOptions.permissionMode`: one of the modes the tool loop applies. */
function assertRunPermissionMode(mode: unknown): void {
  const parsed = parsePermissionMode(mode);
  if (!parsed.ok) {
    throw new StepflowError(
      "PERMISSION_MODE_INVALID",
      `RunOptions.permissionMode: ${parsed.problem}.`,
      { details: { permissionMode: mode } },
    );
  }
}

/** The history entry of an iteration, with the fields its step filled in. */
function historyEntry(
  state: RunnerState,
  step: FlowStep,
  startedAt: Date,
  record: StepRecord | undefined,
): HistoryEntry {
  return {
    stepId: step.id,
    iteration: state.iteration,
    attempt: state.attempt,
    transition: "next",
    startedAt: startedAt.toISOString(),
    durationMs: 0,
    ...record,
  };
}

/** An answer's text and structured output as one searchable text (`detect:keyword`). */
function answerText(answer: { text: string; structuredOutput?: unknown }): string {
  return answer.structuredOutput === undefined
    ? answer.text
    : `${answer.text}\n${JSON.stringify(answer.structuredOutput)}`;
}

/**
 * Whether the unfinished calls a resume found may run again: `RunOptions.rerunUnfinishedCall`, or
 * what its check answers. Asked after the run's lock was taken, so a permission stored with the
 * run is used by the drive that holds it only, never by a duplicate that lost the lock.
 */
async function rerunAllowed(
  rerun: RunOptions["rerunUnfinishedCall"],
  unfinished: readonly UnfinishedCall[],
): Promise<boolean> {
  return typeof rerun === "function" ? await rerun(unfinished) === true : rerun === true;
}

/**
 * Takes the run's lock. For an answer, a run another process holds or drove on since it was read
 * is not waiting (it runs, or another answer was recorded and continues it): that is
 * `INPUT_NOT_WAITING`, not a lock error.
 */
async function lockRun(
  store: RunStore | undefined,
  runId: string,
  answering: boolean,
): Promise<RunLock | undefined> {
  try {
    return await store?.lock(runId);
  } catch (error) {
    if (answering && error instanceof StepflowError && error.code === "RUN_LOCKED") {
      throw notWaiting(
        runId,
        "another process drives it right now (it runs, or another answer was recorded first and continues it)",
      );
    }
    // Between reading the waiting run and locking it, another answer was recorded and drove it on:
    // for this answer that is the same "not waiting any more", not a generic conflict.
    if (answering && error instanceof StepflowError && error.code === "RUN_CHANGED") {
      throw notWaiting(runId, "another answer was recorded first and the run went on from it");
    }
    throw error;
  }
}

function notWaiting(runId: string, why: string): StepflowError {
  return new StepflowError(
    "INPUT_NOT_WAITING",
    `Run ${runId} cannot take this answer: ${why}. See its state with --show ${runId}.`,
    { details: { runId } },
  );
}
