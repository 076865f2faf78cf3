/**
 * `StepFlowRunner`: the loop that runs an agent's step flow (STEPFLOW.md §5–§7).
 *
 * Read `run()` then `#loop()` top to bottom: each pass of the loop is one iteration — resolve the
 * prompt, (gate steps) resolve the schema, call the backend, then let the check (seed 001) or the
 * structured gate (seed 004) decide the outcome, record history, checkpoint. Failures go through
 * the step's `onError` policy. The parts the loop uses live beside it: the state and its checkpoints
 * (`run_state.ts`, `checkpoint.ts`), the pure decisions that turn a response into an outcome
 * (`decisions.ts`), pause and stop (`run_control.ts`), and the backend call (`backend_call.ts`).
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { RunContext, RunState, StepInfo } from "../events/types.ts";
import { agentBackend } from "../llm/agent_backend.ts";
import {
  ANSWER_EXCERPT_CHARS,
  askStructured,
  excerpt,
  PROMPT_EXCERPT_CHARS,
  type ReaskInfo,
} from "../engine/ask_structured.ts";
import { validationProblems } from "../llm/json_schema.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import { PromptResolver } from "../prompt/resolver.ts";
import type { PromptVariables } from "../prompt/variables.ts";
import type { RunLock } from "../store/types.ts";
import type { AgentCommandContext } from "./agent_command.ts";
import { backendRetryError, callBackend, checkRequest, stepRequest } from "./backend_call.ts";
import { toolCallLine, toolCallLogFields } from "./tool_call_log.ts";
import { interpretCheck } from "./check.ts";
import { createRunJournal, type RestoredRun, restoreRun, type RunJournal } from "./checkpoint.ts";
import { runCommandStep } from "./command_step.ts";
import {
  checkOutcome,
  completionOutcome,
  failureOutcome,
  gateOutcome,
  maxIterationsError,
  type Outcome,
  schemaStrikeOutcome,
  type StepError,
  validationOutcome,
} from "./decisions.ts";
import { type CompiledOutputSchema, OutputSchemaCache } from "./output_validator.ts";
import { ownValue, setOwn } from "./own_record.ts";
import { flowStep } from "./router.ts";
import { createRunControl, type RunControl, type StopCause, watchStops } from "./run_control.ts";
import {
  advance,
  endRun,
  newRunnerState,
  type RunnerState,
  runResult,
  stepInfo,
  storeHandoff,
  TERMINAL_STATUS,
} from "./run_state.ts";
import { startFlowTelemetry } from "./telemetry.ts";
import type {
  CompletionReason,
  HistoryEntry,
  RunOptions,
  StepFlowResult,
  StepFlowRunnerOptions,
} from "./types.ts";
import {
  appendValidationReport,
  DEFAULT_VALIDATION_RETRIES,
  runStepValidators,
  validationRetryPrompt,
} from "./validators.ts";
import { backoffDelay, sleep } from "../backoff.ts";
import { newRunId } from "../store/run_id.ts";

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
  #control?: RunControl;
  #ctx: RunContext = { runId: "" };
  #journal: RunJournal = createRunJournal(undefined);
  /** The latest answer (for `detect:keyword`; turned into text only when a condition needs it). */
  #lastAnswer: { text: string; structuredOutput?: unknown } = { text: "" };
  /** Validator runs of the current iteration, recorded after its own history entry. */
  #validatorEntries: HistoryEntry[] = [];

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

  /** Pauses the run before its next backend call. */
  pause(): void {
    if (this.#state !== "running" || !this.#control?.pause()) return;
    void this.#setState("paused");
    void this.#events.emit("onPause", this.#ctx);
  }

  /** Resumes a paused run. */
  resume(): void {
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
    const runId = options.resume ?? options.redrive ?? options.runId ?? newRunId();
    const lock: RunLock | undefined = await store?.lock(runId);
    let restored: RestoredRun;
    try {
      // A cancel request nobody was driving the run to see must not cancel this (new) drive.
      await store?.takeCancelRequest?.(runId);
      restored = options.resume ?? options.redrive
        ? await restoreRun(store, this.#def, runId, !options.resume, (m) => this.#warn(m))
        : { state: newRunnerState(this.#def, options, runId), history: [], logEntries: 0 };
    } catch (error) {
      await lock?.release();
      throw error;
    }
    const { state, history } = restored;
    this.#journal = createRunJournal(store, restored.logEntries);
    const mode = options.resume ? "resume" : options.redrive ? "redrive" : "start";
    // `mode` and the usage so far let progress views say "resumed" and keep counting tokens.
    this.#ctx = { runId: state.runId, agent: this.#def.name, args: state.args };
    const startCtx = { ...this.#ctx, mode, iteration: state.iteration, usage: { ...state.usage } };
    this.#control = createRunControl();
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
      });
      await this.#journal.checkpoint(state, "running");
      await this.#loop(state, history, telemetry?.backend(backend) ?? backend);
      const end = state.end!;
      await this.#journal.log(state, {
        type: "run_end",
        stepId: end.stepId,
        reason: end.reason,
        ...(end.error ? { error: end.error } : {}),
        usage: { ...state.usage },
      });
      await this.#journal.checkpoint(state, TERMINAL_STATUS[end.reason]);
    } catch (error) {
      // Only a store or handler-independent I/O failure gets here; the runner must stay reusable.
      telemetry?.fail(error);
      await this.#setState("failed");
      throw error;
    } finally {
      detach();
      await lock?.release();
    }
    const result = runResult(state, history);
    const status = TERMINAL_STATUS[result.completionReason];
    await this.#setState(status === "failed" ? "failed" : status as RunState);
    await this.#events.emit("onPlanEnd", this.#def, { ...this.#ctx, status, result });
    return result;
  }

  // ---------------------------------------------------------------------------------------------
  // The loop: one pass is one iteration, read top to bottom
  // ---------------------------------------------------------------------------------------------

  async #loop(state: RunnerState, history: HistoryEntry[], backend: LlmBackend): Promise<void> {
    const def = this.#def;
    const maxIterations = this.#options.maxTotalIterations ?? def.limits.maxTotalIterations;
    const prompts = new PromptResolver({
      agentDir: def.dir,
      basePath: def.basePath,
      fallbackDir: def.agent.prompts?.fallbackDir,
      allowFallback: this.#options.allowFallback,
      onWarning: (m) => this.#warn(m),
    });
    const systemPrompts = new PromptResolver({ agentDir: def.dir, basePath: "." });
    const schemas = new OutputSchemaCache(def.dir);
    const control = this.#control!;
    const call = (request: LlmRequest, step: FlowStep) => this.#call(backend, request, state, step);

    while (!state.end) {
      // 1. A stop, the iteration limit, or a current step the agent lacks ends the run here.
      if (control.stopCause) {
        this.#end(state, control.stopCause, state.currentStepId);
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

      // 2. The iteration starts: counted, announced, given its history entry.
      state.iteration++;
      state.order++;
      const info = stepInfo(state, step);
      const startedAt = new Date();
      await this.#events.emit("onStepStart", info);
      const entry: HistoryEntry = {
        stepId: step.id,
        iteration: state.iteration,
        attempt: state.attempt,
        transition: "next",
        startedAt: startedAt.toISOString(),
        durationMs: 0,
      };
      let outcome: Outcome;
      // step_start carries the prompt, so it is logged once the prompt is known (a command step
      // has none); when resolving the prompt fails, the catch logs it.
      let started = step.kind === "command";
      if (started) await this.#logStepStart(state, step);

      try {
        if (step.kind === "command") {
          // 3a. A command step calls no model: the exit code routes (src/flow/command_step.ts).
          outcome = await this.#commandStep(state, step, entry);
        } else {
          // 3b. The prompt, the system prompt, and the step request.
          const vars: PromptVariables = {
            uv: state.args,
            inputText: state.inputText,
            iteration: state.iteration,
            stepId: step.id,
            handoff: state.latestHandoff,
            parameters: def.agent.parameters ?? {},
          };
          // After a failed step validation the retry prompt reports it (src/flow/validators.ts).
          const retry = state.validationRetry?.stepId === step.id
            ? state.validationRetry
            : undefined;
          if (retry) vars.validation = retry;
          const systemPrompt = def.agent.behavior.systemPromptPath
            ? (await systemPrompts.resolve({ path: def.agent.behavior.systemPromptPath }, vars, {
              stepId: step.id,
            })).text
            : undefined;
          const retryRef = retry ? validationRetryPrompt(step, retry) : undefined;
          const prompt = await prompts.resolve(retryRef ?? step.prompt!, vars, {
            stepId: step.id,
            fallbackKey: step.fallbackKey,
          });
          if (retry && !retryRef) prompt.text = appendValidationReport(prompt.text, retry);
          await this.#logStepStart(state, step, prompt.text);
          started = true;
          const request = stepRequest(
            def,
            step,
            state,
            prompt.text,
            systemPrompt,
            this.#options.model,
          );

          if (step.kind === "check") {
            // 4a. Seed 001: the step runs; once it has run iterations.min times, its check is asked
            // (a separate call) and the verdict routes.
            const response = await call(request, step);
            entry.answer = excerpt(response.text, ANSWER_EXCERPT_CHARS);
            state.checkRuns++;
            if (state.checkRuns < step.iterations.min) {
              outcome = { kind: "goto", stepId: step.id, transition: "repeat" };
            } else {
              const checkPrompt = await prompts.resolve(step.check!.prompt, vars, {
                stepId: step.id,
              });
              const verdict = interpretCheck(
                await call(checkRequest(request, checkPrompt.text), step),
              );
              entry.checkResult = verdict;
              const decided = checkOutcome(step, state, verdict);
              Object.assign(state, decided.counters);
              outcome = decided.outcome;
            }
          } else {
            // 4b. Seed 004: the schema is resolved from disk first; a failure is a strike (the
            // backend is not called) and the strike is the iteration's outcome.
            let schema: CompiledOutputSchema;
            try {
              schema = await schemas.resolve(step.outputSchemaRef!, step.id);
              setOwn(state.schemaStrikes, step.id, 0);
            } catch (error) {
              const strikes = (ownValue(state.schemaStrikes, step.id) ?? 0) + 1;
              setOwn(state.schemaStrikes, step.id, strikes);
              const code = "STRUCTURED_OUTPUT_UNAVAILABLE";
              const unavailable = new StepflowError(code, errorMessage(error), { cause: error });
              const fields = { strike: strikes };
              const message = await this.#reportError(
                state,
                info,
                entry,
                unavailable,
                code,
                fields,
              );
              outcome = schemaStrikeOutcome(step, strikes, message);
              entry.durationMs = Date.now() - startedAt.getTime();
              await this.#record(state, history, entry, outcome, info);
              continue;
            }
            // Ask for output matching the schema, re-asking with the problems when it does not.
            request.outputSchema = schema.schema;
            const asked = await askStructured({
              request,
              call: (req) => call(req, step),
              validate: (value) => validationProblems(schema.validate, value),
              maxReasks: this.#options.maxSchemaRetries ?? 1,
              onReask: (reask) => this.#reask(state, step, reask),
            });
            entry.answer = asked.answer;
            if (!asked.ok) {
              const problems = [asked.reason, ...asked.errors];
              throw new StepflowError(
                "OUTPUT_SCHEMA_INVALID",
                `Step "${step.id}" output does not match ${schema.pointer} in ${schema.file} after ${asked.reasks} re-ask(s): ${
                  problems.join("; ")
                }`,
                { details: { stepId: step.id, problems } },
              );
            }
            // The gate reads intent and handoff from the output and routes.
            const gate = gateOutcome(def, step, asked.value, state.iteration);
            storeHandoff(state, step.id, gate.handoff);
            if (gate.warning !== undefined) this.#warn(gate.warning);
            if (gate.intent !== undefined) entry.intent = gate.intent;
            outcome = gate.outcome;
            if (outcome.kind === "goto" && outcome.transition === "jump") {
              await this.#events.emit("onStepJump", info, outcome.stepId);
            }
            // Step validators may send the step round again with a retry prompt.
            if (step.validation && (outcome.kind === "goto" || outcome.reason === "completed")) {
              outcome = await this.#validate(state, step, outcome, info);
            }
          }
        }
        // 5. Completion conditions (agent.json `completion`) end a run that would go on.
        const completion = completionOutcome(
          def.agent.completion,
          outcome,
          state.iteration,
          () => answerText(this.#lastAnswer),
        );
        if (completion.met !== undefined) {
          this.#warn(
            `step "${state.currentStepId}": completion condition met (${completion.met}); the run completes`,
          );
        }
        outcome = completion.outcome;
      } catch (error) {
        // 6. An execution failure: the step's onError policy decides.
        if (!started) await this.#logStepStart(state, step);
        outcome = await this.#onStepFailure(state, step, info, error, entry);
      }

      // 7. History, events, log, the move to the next step, the checkpoint.
      entry.durationMs = Date.now() - startedAt.getTime();
      await this.#record(state, history, entry, outcome, info);
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
    outcome: Outcome,
    info: StepInfo,
  ): Promise<void> {
    advance(state, entry, outcome, this.#runTimeout());
    history.push(entry);
    // Each validator run is a history entry of its own, after the answer it checked.
    const validatorEntries = this.#validatorEntries;
    if (validatorEntries.length > 0) {
      this.#validatorEntries = [];
      for (const v of validatorEntries) history.push(v);
    }
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
        ...(entry.answer ? { answer: entry.answer } : {}),
        usage: { ...state.usage },
        ...(Object.hasOwn(state.handoff, entry.stepId)
          ? { handoff: state.handoff[entry.stepId] }
          : {}),
      });
      for (const v of validatorEntries) {
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

  /** One backend call of the current iteration (see `callBackend`); keeps the latest answer. */
  async #call(
    backend: LlmBackend,
    request: LlmRequest,
    state: RunnerState,
    step: FlowStep,
  ): Promise<LlmResponse> {
    const response = await callBackend(backend, request, state, step, {
      signal: this.#control!.signal,
      timeoutMs: step.timeoutMs ?? this.#options.stepTimeoutMs ?? this.#def.limits.stepTimeoutMs,
      waitIfPaused: () => this.#control!.waitIfPaused(),
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
      onToolCall: (record) => {
        const level = record.isError ? "warn" : "info";
        void this.#events.emit("onStepLog", stepInfo(state, step), toolCallLine(record), level);
        void this.#journal.log(state, toolCallLogFields(record));
      },
    });
    this.#lastAnswer = response;
    return response;
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

  /** A command step: run it, hand off its output, route on its exit code. */
  async #commandStep(state: RunnerState, step: FlowStep, entry: HistoryEntry): Promise<Outcome> {
    await this.#control!.waitIfPaused();
    const result = await runCommandStep(step, this.#commandContext(state, step));
    state.handoff[step.id] = { ...state.handoff[step.id], ...result.handoff };
    Object.assign(state.latestHandoff, result.handoff);
    entry.command = { name: step.command!, exitCode: result.handoff.exitCode };
    this.#lastAnswer = { text: `${result.handoff.stdout}\n${result.handoff.stderr}` };
    if (result.error) throw result.error;
    return result.next !== undefined
      ? { kind: "goto", stepId: result.next, transition: "next" }
      : { kind: "end", reason: "completed", transition: "complete", output: result.handoff };
  }

  /** Step validators: all pass → the outcome stands; a failure re-runs the step (bounded). */
  async #validate(
    state: RunnerState,
    step: FlowStep,
    outcome: Outcome,
    info: StepInfo,
  ): Promise<Outcome> {
    if (this.#options.skipValidators) {
      this.#warn(
        `step "${step.id}": ${
          step.validation!.validators.length
        } validator(s) skipped (skipValidators / --skip-validators)`,
      );
      return outcome;
    }
    const { runs, failure } = await runStepValidators(
      step.validation!,
      this.#commandContext(state, step),
    );
    for (const run of runs) {
      const entry: HistoryEntry = {
        stepId: step.id,
        iteration: state.iteration,
        attempt: state.attempt,
        transition: run.ok ? "next" : "retry",
        startedAt: run.startedAt,
        durationMs: run.durationMs,
        validation: { command: run.command, exitCode: run.exitCode, ok: run.ok },
      };
      if (run.pattern !== undefined) entry.validation!.pattern = run.pattern;
      if (!run.ok) entry.error = `validator "${run.command}" failed (${run.reason})`;
      this.#validatorEntries.push(entry);
    }
    if (!failure) {
      state.validationRetries = 0;
      delete state.validationRetry;
      return outcome;
    }
    const used = state.validationRetries ?? 0;
    const max = step.validation!.maxRetries ?? DEFAULT_VALIDATION_RETRIES;
    const decided = validationOutcome(step, failure, used, max);
    if (decided.kind === "fail") {
      throw new StepflowError("VALIDATION_FAILED", decided.message, {
        details: { stepId: step.id, command: failure.command, exitCode: failure.exitCode },
      });
    }
    state.validationRetries = used + 1;
    state.validationRetry = decided.retry;
    const error = new StepflowError("VALIDATION_FAILED", decided.message);
    await this.#events.emit("onStepRetry", info, used + 1, error);
    await this.#journal.log(state, {
      type: "validation_failed",
      stepId: step.id,
      command: failure.command,
      exitCode: failure.exitCode,
      pattern: failure.pattern,
    });
    return { kind: "goto", stepId: step.id, transition: "retry" };
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
   * An execution failure (STEPFLOW.md §6): reported, then the step's `onError` policy decides; a
   * retry waits its backoff first, a jump is announced.
   */
  async #onStepFailure(
    state: RunnerState,
    step: FlowStep,
    info: StepInfo,
    error: unknown,
    entry: HistoryEntry,
  ): Promise<Outcome> {
    const control = this.#control!;
    if (control.stopCause) {
      entry.error = `run ${control.stopCause}`;
      return { kind: "end", reason: control.stopCause, transition: "abort" };
    }
    const code = error instanceof StepflowError ? error.code : "BACKEND_ERROR";
    const message = await this.#reportError(state, info, entry, error, code);
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

/** An answer's text and structured output as one searchable text (`detect:keyword`). */
function answerText(answer: { text: string; structuredOutput?: unknown }): string {
  return answer.structuredOutput === undefined
    ? answer.text
    : `${answer.text}\n${JSON.stringify(answer.structuredOutput)}`;
}
