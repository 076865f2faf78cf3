/**
 * One run of an agent's step flow, and the loop that drives it (docs/runner.md).
 *
 * A {@linkcode FlowRun} is a value of its own: everything that belongs to one run — its state and
 * history, its journal (run log and checkpoints), its pause and stop, its MCP servers, the child
 * runs its agent steps drive, its events — lives on it; nothing of a run is on the runner that
 * started it or on a module. So any number of runs, of one runner or of one process, go on at
 * once. `StepFlowRunner` (`runner.ts`) is the handle that creates one per `run()` / `answer()`.
 *
 * Read `drive()` then `#loop()` top to bottom: each pass of the loop is one iteration — the handler
 * of the current step's kind runs the step (`step_handlers.ts`: check-gated, gate-routed, command,
 * input, agent) and returns its outcome; the loop records it (history, events, log), lets a
 * failure go through the step's `onError` policy and completion conditions end a run that would
 * go on, routes and checkpoints. The loop keeps nothing of an iteration between passes. The parts
 * it uses live beside it: the state and its checkpoints (`run_state.ts`, `checkpoint.ts`), the
 * pure decisions that turn an answer into an outcome (`decisions.ts`), pause and stop
 * (`run_control.ts`), opening a run (`run_open.ts`), the backend calls (`run_calls.ts`), what an
 * iteration records (`iteration_record.ts`), waits (`run_wait.ts`), an agent step's child run
 * (`child_run.ts`).
 *
 * Long because: the drive, the loop, a failure's policy, a wait and a child run's start share the
 * run's private members (journal, control, events, children); each concern's decisions live in the
 * files above, what stays is the run itself.
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import { excerpt, PROMPT_EXCERPT_CHARS } from "../engine/ask_structured.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { ExecutorEvents, RunContext, RunState, StepInfo } from "../events/types.ts";
import { BACKEND_SETUP_CODES } from "../llm/backend_error.ts";
import type { LlmBackend } from "../llm/types.ts";
import { PromptResolver } from "../prompt/resolver.ts";
import { newRunId } from "../store/run_id.ts";
import { backoffDelay, sleep } from "../backoff.ts";
import type { AgentCommandContext } from "./agent_command.ts";
import { createRunJournal, restoreUnchanged, type RunJournal } from "./checkpoint.ts";
import { type ChildRunner, DEFAULT_MAX_AGENT_DEPTH, driveChild } from "./child_run.ts";
import { ChildLimiter } from "./child_limiter.ts";
import { FanOutHalted, runFanOut } from "./fan_out.ts";
import { FanOutSuspended } from "./child_queue.ts";
import type { RunStore } from "../store/types.ts";
import {
  completionOutcome,
  failureOutcome,
  maxIterationsError,
  type MovingOutcome,
  type StepError,
} from "./decisions.ts";
import { OutputSchemaCache } from "./output_validator.ts";
import { flowStep } from "./router.ts";
import { openRun } from "./run_open.ts";
import { RunCalls } from "./run_calls.ts";
import { createRunnerControl, type StopCause, watchStops } from "./run_control.ts";
import { RunMcpServers } from "./run_mcp_servers.ts";
import { pendingRequest, type WaitOutcome } from "./run_wait.ts";
import {
  endRun,
  type RunnerState,
  runResult,
  setWaits,
  stepInfo,
  storeHandoff,
  TERMINAL_STATUS,
  waitingResult,
  waitsOf,
} from "./run_state.ts";
import { InStepFlushFailed, StepCallJournal } from "./step_call_journal.ts";
import { IterationDependencies, type RunResources } from "./step_dependencies.ts";
import { historyEntry, IterationRecorder } from "./iteration_record.ts";
import type { StepResult } from "./step_handler.ts";
import { type RunnableStepKind, STEP_HANDLERS } from "./step_handlers.ts";
import { startFlowTelemetry } from "./telemetry.ts";
import { meterBackend } from "./metered_backend.ts";
import { BudgetExceeded, budgetSpentBeforeStep, budgetStopInStep } from "./run_spend.ts";
import type { SpendLedger } from "./spend_ledger.ts";
import { RateLimitYield } from "../llm/retry.ts";
import { resumedLine, type ResumedStep, resumedSummary } from "./tool_call_resume.ts";
import type {
  CompletionReason,
  HistoryEntry,
  ParentRunLink,
  RunOptions,
  StepFlowResult,
  StepFlowRunnerOptions,
} from "./types.ts";

/** What every run of an agent is made with: the agent, the runner's options, who hears events. */
export interface RunSetup {
  /** The agent. */
  readonly definition: AgentDefinition;
  /** The runner's options. */
  readonly options: StepFlowRunnerOptions;
  /** The handler sets the run's events go to (the runner's; none for a child run). */
  readonly handlers: readonly (ExecutorEvents | undefined)[];
  /**
   * The runner-wide cap of fan-out children in flight, shared by every run of the runner and their
   * child runs (a new one per run when absent).
   */
  readonly limiter?: ChildLimiter;
  /**
   * The run is a fan-out step's child and holds a place of `limiter`: a fan-out of its own gives
   * the place back while its children run, so nested fan-outs cannot starve each other.
   */
  readonly holdsPlace?: boolean;
  /**
   * Output schemas shared with the other children of one fan-out step (one agent's schemas,
   * compiled once for all of them); a run of its own otherwise.
   */
  readonly schemas?: OutputSchemaCache;
}

/** One run; see the module documentation. Create it, then `drive()` it once. */
export class FlowRun {
  /** The run's id (a new run's is chosen here; a resume's or redrive's is the one given). */
  readonly runId: string;
  readonly #def: AgentDefinition;
  readonly #options: StepFlowRunnerOptions;
  readonly #runOptions: RunOptions;
  readonly #events: EventEmitter;
  readonly #setup: RunSetup;
  readonly #limiter: ChildLimiter;
  /** Pause and stop of this run. */
  readonly #control = createRunnerControl();
  /** The child runs its agent steps are driving now (pause, resume and stops reach them). */
  readonly #children = new Set<FlowRun>();
  /** The run's MCP servers (chat backends): started on first use, closed when the run ends. */
  readonly #mcpServers = new RunMcpServers();
  #state: RunState = "idle";
  /** Paused before its drive started: the drive pauses as soon as it runs. */
  #pauseWhenStarted = false;
  #ctx: RunContext;
  #journal: RunJournal = createRunJournal(undefined);
  /** Records each iteration to the journal and events (`iteration_record.ts`). */
  #recorder: IterationRecorder;
  /** Whether this drive is a resume or redrive (see `restoreUnchanged`). */
  #continuing = false;
  /** The recorded tool calls of the step a resumed run was killed in, until that step runs. */
  #resumedStep?: ResumedStep;
  /** The backend this drive uses (the caller's, else the one it created): its children use it. */
  #backend?: LlmBackend;
  #parent?: ParentRunLink;
  /** The run's spend ledger: every call counted, every budget checked (run_spend.ts). */
  #spend?: SpendLedger;

  /** A run of `setup.definition` as `runOptions` say (a new run, a resume, a redrive). */
  constructor(setup: RunSetup, runOptions: RunOptions) {
    this.#def = setup.definition;
    this.#options = setup.options;
    this.#setup = setup;
    this.#limiter = setup.limiter ?? new ChildLimiter(setup.options.maxChildren);
    this.#runOptions = runOptions;
    this.runId = runOptions.resume ?? runOptions.redrive ?? runOptions.runId ?? newRunId();
    this.#ctx = { runId: this.runId };
    // Its own emitter over the runner's handler sets: what a run adds (its telemetry) hears only it.
    this.#events = createEventEmitter(
      setup.handlers,
      (event, error) => this.#warn(`event handler ${event} threw: ${errorMessage(error)}`),
    );
    this.#recorder = new IterationRecorder(this.#journal, this.#events, this.#runTimeout());
  }

  /** `idle` until the drive starts, then `running`, `paused`, `waiting`, or how it ended. */
  get state(): RunState {
    return this.#state;
  }

  /** The agent this run is a run of. */
  get definition(): AgentDefinition {
    return this.#def;
  }

  /** The store the run is recorded in. */
  get store(): RunStore | undefined {
    return this.#options.store;
  }

  /** The caller's signal of this drive (a stop reaches the runs it wakes). */
  get signal(): AbortSignal | undefined {
    return this.#runOptions.signal;
  }

  /** The run this one is a child of (known once its drive opened it). */
  get parent(): ParentRunLink | undefined {
    return this.#parent;
  }

  /** Pauses the run before its next backend call, and every child run it drives. */
  pause(): void {
    for (const child of this.#children) child.pause();
    if (this.#state === "idle") this.#pauseWhenStarted = true;
    if (this.#state !== "running" || !this.#control.pause()) return;
    void this.#setState("paused");
    void this.#events.emit("onPause", this.#ctx);
  }

  /** Resumes a paused run and its child runs. */
  resume(): void {
    for (const child of this.#children) child.resume();
    this.#pauseWhenStarted = false;
    const release = this.#control.resume();
    if (!release) return;
    void this.#setState("running");
    void this.#events.emit("onResume", this.#ctx);
    release();
  }

  /** Aborts the run: the call in flight is cancelled, the run ends `aborted`, its children `cancelled`. */
  abort(): void {
    this.#stop("aborted");
  }

  /**
   * Drives the run to its end or its next wait and returns the result. It never throws for a flow
   * failure (that is in the result); it throws for misuse: an unknown `resume` id, a run another
   * process drives, a backend that cannot be created.
   */
  async drive(): Promise<StepFlowResult> {
    const opened = await openRun(
      this.#def,
      this.#options,
      this.#runOptions,
      this.runId,
      (m) => this.#warn(m),
    );
    const { lock, restored, answer } = opened;
    this.#spend = opened.spend;
    const { state, history } = restored;
    if (state.parent) this.#parent = state.parent;
    const runOptions = this.#runOptions;
    const store = this.#options.store;
    this.#continuing = restored.before !== undefined;
    this.#resumedStep = restored.inStep;
    if (runOptions.backendChoice) state.backendChoice = runOptions.backendChoice;
    if (runOptions.permissionMode) state.permissionMode = runOptions.permissionMode;
    this.#journal = createRunJournal(store, restored.logEntries, restored.logged);
    this.#recorder = new IterationRecorder(this.#journal, this.#events, this.#runTimeout());
    const mode = runOptions.resume ? "resume" : runOptions.redrive ? "redrive" : "start";
    // `mode` and the usage so far let progress views say "resumed" and keep counting tokens.
    this.#ctx = { runId: state.runId, agent: this.#def.name, args: state.args };
    const startCtx = { ...this.#ctx, mode, iteration: state.iteration, usage: { ...state.usage } };
    const detach = watchStops((cause) => this.#stop(cause), {
      signal: runOptions.signal,
      runTimeoutMs: this.#runTimeout(),
      ...(store?.takeCancelRequest
        ? { takeCancelRequest: () => store.takeCancelRequest!(this.runId) }
        : {}),
      cancelPollMs: this.#options.cancelPollMs ?? 1000,
      onPollError: (error) =>
        this.#warn(
          `cannot check for a cancel request of run ${this.runId}: ${errorMessage(error)}`,
        ),
    });
    // OpenTelemetry spans: undefined, and free, unless a tracer provider is registered.
    const telemetry = startFlowTelemetry(
      this.#def,
      mode,
      this.#events,
      opened.backend,
      state.parent,
    );
    try {
      await this.#setState("running");
      await this.#events.emit("onPlanStart", this.#def, startCtx);
      if (this.#pauseWhenStarted) this.pause();
      await this.#journal.log(state, {
        type: `run_${mode}`,
        stepId: state.currentStepId,
        args: state.args,
        historyLength: state.historyLength,
        ...(restored.inStep ? { inStep: resumedSummary(restored.inStep) } : {}),
      });
      if (answer?.child) {
        // Recorded in a fan-out child (run_open.ts): the step continues it; its other waits stay.
        setWaits(state, waitsOf(state).filter((w) => w.requestId !== answer.requestId));
      } else if (answer) {
        // The answer and the move out of `waiting` are one checkpoint: both or neither.
        setWaits(state, []);
        state.answer = answer;
      } else if (state.waiting?.child && state.waiting.child.item === undefined) {
        // Resumed without an answer: the agent step drives its child again (and waits again if
        // the child still does). A fan-out's waits stay listed until its step settles them.
        delete state.waiting;
      }
      await this.#journal.checkpoint(state, "running");
      // The answer's line follows the checkpoint that commits it (see `recordAnswer`), or is
      // written now when the drive that committed it stopped before writing it.
      if (state.answer && (answer || restored.answerUnlogged)) {
        await this.#journal.log(state, { type: "input_answer", ...state.answer });
      } else if (answer?.child) {
        // Recorded in a fan-out child; this run's log says who answered which child.
        await this.#journal.log(state, { type: "input_answer", ...answer });
      }
      // Every model call of the run passes through its meter (metered_backend.ts); its
      // `model_call` lines are built only for a run that is recorded.
      const metered = meterBackend(
        opened.backend,
        opened.spend,
        this.#journal.recording ? (f) => this.#journal.log(state, f) : undefined,
      );
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
        // A step stopped the drive to wait: the run waits, and the lock is released below.
        await this.#journal.checkpoint(state, "waiting");
      }
    } catch (error) {
      // Only a store or handler-independent I/O failure, or an unusable backend on a resume or
      // redrive, gets here.
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
      await this.#mcpServers.close().catch((error) =>
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
    const calls = new RunCalls({
      backend,
      definition: def,
      options: this.#options,
      events: this.#events,
      journal: this.#journal,
      control: this.#control,
      mcpServers: this.#mcpServers,
      spend: this.#spend,
      warn: (message) => this.#warn(message),
    });
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
      schemas: this.#setup.schemas ?? new OutputSchemaCache(def.dir),
      logStepStart: (state, step, prompt) => this.#recorder.stepStart(state, step, prompt),
      call: (request, state, step, recorded, toolCalls, inStep) =>
        calls.call(request, state, step, recorded, toolCalls, inStep),
      reask: (state, step, reask) => this.#recorder.reask(state, step, reask),
      commandContext: (state, step) => this.#commandContext(state, step),
      waitIfPaused: () => this.#control.waitIfPaused(),
      log: (state, fields) => this.#journal.log(state, fields),
      warn: (message) => this.#warn(message),
      runChild: (state, step, args) => this.#runChild(backend, state, step, args),
      fanOut: (state, step, info) => this.#runFanOut(backend, state, step, info),
    };
    while (!state.end) {
      // 1. A stop, a spent budget, the iteration limit, or a current step the agent lacks ends
      // the run here.
      if (this.#endsBeforeStep(state, maxIterations)) break;
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

      // 2. The iteration starts: counted and announced. A step with tools of a recorded run gets
      // its call journal (a resumed run's recorded calls of this step, when it was killed in it).
      delete state.inStep;
      const agentTools = def.agent.behavior.allowedTools;
      const inStep = StepCallJournal.enter(
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
      if (inStep?.resumed) {
        await this.#events.emit("onStepLog", info, resumedLine(inStep.resumed), "info");
      }

      // 3. The handler of the step's kind runs the step (src/flow/step_handlers.ts).
      const deps = new IterationDependencies(resources, state, step, info, inStep);
      let result: StepResult;
      try {
        // flowStep never returns a `section` step (a template), so every kind here has a handler.
        result = await STEP_HANDLERS[step.kind as RunnableStepKind](step, state, deps);
      } catch (error) {
        result = { error };
      }
      // (A handler may return a call's error as its result: a check call's, for one.)
      // A store that failed to record a tool call stops the run, as a failed checkpoint does; so
      // does a fan-out child that cannot go on by itself (its resume refused a tool call's rerun).
      if (result.error instanceof InStepFlushFailed) throw result.error.cause;
      if (result.error instanceof FanOutHalted) throw result.error.cause;
      // A fan-out whose children run on the workers gives the slot back until they end.
      if (result.error instanceof FanOutSuspended) throw result.error;
      if (result.error instanceof BudgetExceeded) {
        const stop = budgetStopInStep(this.#spend!, state, step, inStep, result.error);
        this.#end(state, "budget_exceeded", step.id, stop);
        break;
      }
      // A wait given back (a worker's): the drive stops where a taken-over run would.
      if (result.error instanceof RateLimitYield) throw result.error;
      // A wait (an input step's question, a tool call's permission, a child's wait) ends the drive.
      if (result.outcome?.kind === "wait") {
        await this.#wait(state, step, info, result.outcome, inStep);
        break;
      }
      if (result.handoff) storeHandoff(state, step.id, result.handoff);
      const entry = historyEntry(state, step, startedAt, result.record);
      if (deps.toolCalls.list.length > 0) entry.toolCalls = deps.toolCalls.list;
      if (deps.toolCalls.omitted > 0) entry.toolCallsOmitted = deps.toolCalls.omitted;
      if (deps.fallbacks.length > 0) entry.fallbacks = deps.fallbacks;

      // 4. Its outcome: a failure goes through the step's onError policy; a reported failure is
      // told; completion conditions (agent.json `completion`) end a run that would go on.
      let outcome: MovingOutcome;
      if (result.outcome === undefined) {
        if (!deps.wasStarted) await this.#recorder.stepStart(state, step);
        outcome = await this.#onStepFailure(state, step, info, result.error, entry);
      } else if (result.failure) {
        const { error, code, fields } = result.failure;
        await this.#recorder.error(state, info, entry, error, code, fields);
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
      await this.#recorder.iteration(
        state,
        history,
        entry,
        outcome,
        info,
        result.followingEntries,
        deps.calls,
      );
    }
  }

  // ---------------------------------------------------------------------------------------------
  // What an iteration does besides the loop's own lines: commands, failures
  // ---------------------------------------------------------------------------------------------

  /** Agent features: what a command step or validator needs to run an allowed command. */
  #commandContext(state: RunnerState, step: FlowStep): AgentCommandContext {
    return {
      commands: this.#def.agent.commands,
      allowRun: this.#options.allowRun,
      args: state.args,
      cwd: state.cwd,
      signal: this.#control.signal,
      agent: this.#def.name,
      stepId: step.id,
    };
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
    const control = this.#control;
    if (control.stopCause) {
      entry.error = `run ${control.stopCause}`;
      return { kind: "end", reason: control.stopCause, transition: "abort" };
    }
    const code = error instanceof StepflowError ? error.code : "BACKEND_ERROR";
    const message = await this.#recorder.error(state, info, entry, error, code);
    // A resume or redrive whose backend cannot be used leaves the run as it was (drive() restores it).
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
        await sleep(backoffDelay(state.errorRetries, this.#options.retryBackoff), control.signal);
      } catch {
        return { kind: "end", reason: control.stopCause ?? "cancelled", transition: "abort" };
      }
    }
    return outcome;
  }

  // ---------------------------------------------------------------------------------------------
  // Waits: an input step's question, a tool call's permission, a child run's wait
  // ---------------------------------------------------------------------------------------------

  /**
   * Records that the run waits: the request (or, for a fan-out step's waiting children, every
   * request) in the run state (checkpointed `waiting` by drive()), an `input_request` log line per
   * request, an `onStepLog` for progress views. A wait is not an
   * iteration: the counters go back (a tool call's permission puts the state back as the step
   * found it, with the step's marker, so the answer resumes the run inside the step), and the
   * iteration that goes on from the answer is the step's.
   */
  async #wait(
    state: RunnerState,
    step: FlowStep,
    info: StepInfo,
    outcome: WaitOutcome,
    inStep: StepCallJournal | undefined,
  ): Promise<void> {
    const [wait] = outcome.waits;
    // A permission wait (only in a recorded step with tools) puts back the state the step found.
    const suspended = wait.kind === "permission" ? inStep : undefined;
    if (!suspended) {
      state.iteration--;
      state.order--;
    }
    const now = new Date();
    const pendings = outcome.waits.map((w) => pendingRequest(w, step, now));
    for (const pending of pendings) {
      await this.#journal.log(state, {
        type: "input_request",
        stepId: pending.stepId,
        requestId: pending.requestId,
        prompt: excerpt(pending.prompt, PROMPT_EXCERPT_CHARS),
        schema: pending.schemaRef,
        ...(pending.expiresAt ? { expiresAt: pending.expiresAt } : {}),
        ...(pending.child ? { child: pending.child } : {}),
        ...(pending.permission ? { permission: pending.permission } : {}),
      });
    }
    suspended?.suspend(state);
    setWaits(state, pendings);
    const pending = pendings[0];
    const what = pendings.length > 1
      ? `${pendings.length} answers`
      : pending.permission
      ? `permission to run ${pending.permission.tool}`
      : "an answer";
    await this.#events.emit("onStepLog", info, `waiting for ${what} (run ${state.runId})`, "info");
  }

  // ---------------------------------------------------------------------------------------------
  // Agent steps: the child run
  // ---------------------------------------------------------------------------------------------

  /**
   * Runs or continues an agent step's child run (`driveChild`) as a run object of its own:
   * recorded as a run of its agent (in the store this run's store gives for it), on this run's
   * backend (the caller's, else the one this run created), stopped with this run (its signal),
   * paused and resumed with it, its start recorded in this run's log and checkpoint before it
   * starts.
   */
  #runChild(
    backend: LlmBackend,
    state: RunnerState,
    step: FlowStep,
    args: Record<string, unknown>,
  ): Promise<StepFlowResult> {
    this.#backend = backend;
    const info = stepInfo(state, step);
    const options = this.#options;
    return driveChild({
      state,
      step,
      args,
      store: options.store,
      signal: this.#control.signal,
      maxDepth: options.maxAgentDepth ?? DEFAULT_MAX_AGENT_DEPTH,
      parentAgent: this.#def.name,
      spend: this.#spend,
      runner: (definition, store) =>
        this.#childRunner(definition, store, `agent step "${step.id}" (${definition.name})`),
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

  /**
   * A runner of a child agent's runs, recorded in `store`: each run a {@linkcode FlowRun} of its
   * own on this run's options and backend, without this run's event handlers (`handlers` instead:
   * a fan-out's child reports its steps), paused, resumed and stopped with this run. Every child
   * run is made here.
   */
  #childRunner(
    definition: AgentDefinition,
    store: RunStore | undefined,
    label: string,
    child: {
      handlers?: readonly ExecutorEvents[];
      holdsPlace?: boolean;
      schemas?: OutputSchemaCache;
    } = {},
  ): ChildRunner {
    const options = this.#options;
    return {
      run: async (runOptions) => {
        const run = new FlowRun({
          definition,
          options: {
            ...options,
            // Recorded as a run of its own agent (child_run.ts says where).
            store,
            backend: options.backend ?? this.#backend,
            events: [],
            onWarning: (m) => this.#warn(`${label}: ${m}`),
          },
          handlers: child.handlers ?? [],
          limiter: this.#limiter,
          ...(child.holdsPlace ? { holdsPlace: true } : {}),
          ...(child.schemas ? { schemas: child.schemas } : {}),
        }, runOptions);
        this.#children.add(run);
        // A parent paused meanwhile holds the child from its start.
        if (this.#state === "paused") run.pause();
        try {
          return await run.drive();
        } finally {
          this.#children.delete(run);
        }
      },
    };
  }

  /**
   * Runs or continues a fan-out step's iteration (`runFanOut`): its children are runs of the
   * step's agent made by {@linkcode FlowRun.#childRunner}, each holding a place of the runner's
   * cap. A run that holds a place itself (a fan-out's child) gives it back meanwhile.
   */
  async #runFanOut(
    backend: LlmBackend,
    state: RunnerState,
    step: FlowStep,
    info: StepInfo,
  ): Promise<StepResult> {
    this.#backend = backend;
    const options = this.#options;
    const journal = this.#journal;
    const holds = this.#setup.holdsPlace === true;
    // The children are runs of one agent: its schemas are compiled once for all of them.
    const schemas = new OutputSchemaCache(step.child!.dir);
    if (holds) this.#limiter.release();
    try {
      return await runFanOut({
        state,
        step,
        info,
        store: options.store,
        signal: this.#control.signal,
        waitIfPaused: () => this.#control.waitIfPaused(),
        limiter: this.#limiter,
        log: (fields) => journal.log(state, fields),
        lines: () => journal.lines,
        flush: () => journal.checkpoint(state, "running"),
        events: this.#events,
        childRunner: (store, onStep) =>
          this.#childRunner(step.child!, store, `fan-out step "${step.id}" (${step.child!.name})`, {
            handlers: [{ onStepStart: (child) => onStep(child.stepId) }],
            holdsPlace: true,
            schemas,
          }),
        parentAgent: this.#def.name,
        parentDir: this.#def.dir,
        maxDepth: options.maxAgentDepth ?? DEFAULT_MAX_AGENT_DEPTH,
        ...(this.#runOptions.rerunUnfinishedCall
          ? { rerunUnfinishedCall: this.#runOptions.rerunUnfinishedCall }
          : {}),
        ...(this.#spend ? { spend: this.#spend } : {}),
        ...(options.childQueue ? { childQueue: options.childQueue } : {}),
      });
    } finally {
      if (holds) {
        await this.#limiter.acquire(this.#control.signal).catch(() => this.#limiter.take());
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Run control
  // ---------------------------------------------------------------------------------------------

  /** Ends the run before an iteration (stop, iteration limit, unknown step). */
  /**
   * Ends the run before its next iteration when it must stop: a stop asked for (cancel, abort, the
   * run's time limit), a spent budget (its own or an ancestor's), the iteration limit. True when
   * it ended.
   */
  #endsBeforeStep(state: RunnerState, maxIterations: number): boolean {
    const at = state.currentStepId;
    const stopCause = this.#control.stopCause;
    if (stopCause) {
      this.#end(state, stopCause, at);
      return true;
    }
    const spent = budgetSpentBeforeStep(this.#spend!, state);
    if (spent) {
      this.#end(state, "budget_exceeded", at, spent);
      return true;
    }
    if (state.iteration < maxIterations) return false;
    this.#end(state, "max_iterations", at, maxIterationsError(maxIterations, at));
    return true;
  }

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
    if (!this.#control.stop(cause)) return;
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

/** An answer's text and structured output as one searchable text (`detect:keyword`). */
function answerText(answer: { text: string; structuredOutput?: unknown }): string {
  return answer.structuredOutput === undefined
    ? answer.text
    : `${answer.text}\n${JSON.stringify(answer.structuredOutput)}`;
}
