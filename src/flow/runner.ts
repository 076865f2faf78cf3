/**
 * `StepFlowRunner`: the loop that runs an agent's step flow (STEPFLOW.md §5–§7).
 *
 * Read `run()` then `#loop()` top to bottom: each pass of the loop is one iteration — resolve the
 * prompt, (gate steps) resolve the schema, call the backend, then either interpret the check (seed 001)
 * or the structured gate (seed 004), route, record history, checkpoint. Failures go through the step's
 * `onError` policy. Everything the loop needs to continue after a crash lives in `RunnerState`, which is
 * checkpointed after every iteration.
 *
 * @module
 */
import { resolve } from "node:path";
import type { GateIntent } from "../definition/schema.ts";
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { createEventEmitter, type EventEmitter } from "../events/emitter.ts";
import type { RunContext, RunState, StepInfo } from "../events/types.ts";
import {
  ANSWER_EXCERPT_CHARS,
  askStructured,
  boundDepth,
  excerpt,
  PROMPT_EXCERPT_CHARS,
  type ReaskInfo,
} from "../engine/ask_structured.ts";
import { validationProblems } from "../llm/json_schema.ts";
import { sleep } from "../llm/scripted.ts";
import { createBackend } from "../llm/factory.ts";
import type { RetryInfo } from "../llm/retry.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import { PromptResolver } from "../prompt/resolver.ts";
import type { PromptVariables } from "../prompt/variables.ts";
import type { AgentCommandContext } from "./agent_command.ts";
import { runCommandStep } from "./command_step.ts";
import { completionReached } from "./completion.ts";
import {
  appendValidationReport,
  DEFAULT_VALIDATION_RETRIES,
  runStepValidators,
  validationRetryPrompt,
} from "./validators.ts";
import type { RunCheckpoint, RunLock, RunStatus } from "../store/types.ts";
import { assertContinuable } from "./continue_check.ts";
import { backoffDelay } from "./backoff.ts";
import { CHECK_RESPONSE_SCHEMA, type CheckVerdict, interpretCheck } from "./check.ts";
import { interpretGate } from "./gate.ts";
import { OutputSchemaCache } from "./output_validator.ts";
import { ownValue, setOwn } from "./own_record.ts";
import { flowStep, routeTransition } from "./router.ts";
import { startFlowTelemetry } from "./telemetry.ts";
import type {
  CompletionReason,
  HistoryEntry,
  RunOptions,
  RunUsage,
  StepFlowResult,
  StepFlowRunnerOptions,
  Transition,
} from "./types.ts";

/** Everything a run needs to continue after a crash; checkpointed after every iteration. */
export interface RunnerState {
  /** The run id. */
  runId: string;
  /** Agent name. */
  agent: string;
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
  /** Summed usage. */
  usage: RunUsage;
  /** Set once the run ended. */
  end?: {
    reason: CompletionReason;
    stepId: string;
    output?: unknown;
    error?: { code: string; message: string; stepId?: string };
  };
}

/** What one iteration decided. */
type Outcome =
  | { kind: "goto"; stepId: string; transition: Transition }
  | {
    kind: "end";
    reason: CompletionReason;
    transition: Transition;
    output?: unknown;
    error?: StepError;
  };

interface StepError {
  code: string;
  message: string;
  stepId?: string;
}

/** Errors that are configuration problems: `onError` never applies to them (STEPFLOW.md §6). */
const CONFIGURATION_CODES = new Set([
  "PROMPT_NOT_FOUND",
  "PROMPT_PATH_INVALID",
  "PROMPT_VARIABLES_MISSING",
  "PROMPT_FRONTMATTER_INVALID",
]);

const TERMINAL_STATUS: Record<CompletionReason, RunStatus> = {
  completed: "completed",
  aborted: "aborted",
  cancelled: "cancelled",
  timeout: "timeout",
  max_iterations: "failed",
  retries_exhausted: "failed",
  schema_resolution_failed: "failed",
  step_routing_failed: "failed",
  step_failed: "failed",
};

/** Why the run's internal signal fired. */
type StopCause = "aborted" | "cancelled" | "timeout";

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
  #paused?: { promise: Promise<void>; resolve: () => void };
  #controller?: AbortController;
  #stopCause?: StopCause;
  #ctx: RunContext = { runId: "" };
  #logEntries = 0;
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
    if (this.#state !== "running" || this.#paused) return;
    let release!: () => void;
    const promise = new Promise<void>((r) => release = r);
    this.#paused = { promise, resolve: release };
    void this.#setState("paused");
    void this.#events.emit("onPause", this.#ctx);
  }

  /** Resumes a paused run. */
  resume(): void {
    const paused = this.#paused;
    if (!paused) return;
    this.#paused = undefined;
    void this.#setState("running");
    void this.#events.emit("onResume", this.#ctx);
    paused.resolve();
  }

  /** Aborts the run: the call in flight is cancelled and the run ends `aborted`. */
  abort(): void {
    this.#stop("aborted");
  }

  /**
   * Runs the flow to its end and returns the result. It never throws for a flow failure (that is in
   * the result); it throws only for misuse: a run already in progress, an unknown `resume` id, a
   * missing backend.
   */
  async run(options: RunOptions = {}): Promise<StepFlowResult> {
    if (this.#state === "running" || this.#state === "paused") {
      throw new StepflowError(
        "RUN_IN_PROGRESS",
        "This runner is already running a flow; create another StepFlowRunner.",
      );
    }
    const store = this.#options.store;
    const backend = await this.#backend();
    this.#logEntries = 0;
    // Lock before reading a checkpoint: a second process resuming the same run must fail here, not
    // continue from a checkpoint the first one is about to move past.
    const runId = options.resume ?? options.redrive ?? options.runId ?? newRunId();
    const lock: RunLock | undefined = await store?.lock(runId);
    let restored: { state: RunnerState; history: HistoryEntry[] };
    try {
      // A cancel request nobody was driving the run to see must not cancel this (new) drive.
      await store?.takeCancelRequest?.(runId);
      restored = await this.#initialState(options, runId);
    } catch (error) {
      await lock?.release();
      throw error;
    }
    const { state, history } = restored;
    const mode = options.resume ? "resume" : options.redrive ? "redrive" : "start";
    // `mode` and the usage so far let progress views say "resumed" and keep counting tokens.
    this.#ctx = { runId: state.runId, agent: this.#def.name, args: state.args };
    const startCtx = { ...this.#ctx, mode, iteration: state.iteration, usage: { ...state.usage } };
    this.#controller = new AbortController();
    this.#stopCause = undefined;
    const detach = this.#attachSignals(options.signal, runId);
    // OpenTelemetry spans: undefined, and free, unless a tracer provider is registered.
    const telemetry = startFlowTelemetry(this.#def.name, mode, this.#events);
    try {
      await this.#setState("running");
      await this.#events.emit("onPlanStart", this.#def, startCtx);
      await this.#log(state, {
        type: `run_${mode}`,
        stepId: state.currentStepId,
        args: state.args,
        historyLength: state.historyLength,
      });
      await this.#checkpoint(state, "running");
      await this.#loop(state, history, telemetry?.backend(backend) ?? backend);
      const end = state.end!;
      await this.#log(state, {
        type: "run_end",
        stepId: end.stepId,
        reason: end.reason,
        ...(end.error ? { error: end.error } : {}),
        usage: { ...state.usage },
      });
      await this.#checkpoint(state, TERMINAL_STATUS[end.reason]);
    } catch (error) {
      // Only a store or handler-independent I/O failure gets here; the runner must stay reusable.
      telemetry?.fail(error);
      await this.#setState("failed");
      throw error;
    } finally {
      detach();
      await lock?.release();
    }
    const result = this.#result(state, history);
    const status = TERMINAL_STATUS[result.completionReason];
    await this.#setState(status === "failed" ? "failed" : status as RunState);
    await this.#events.emit("onPlanEnd", this.#def, { ...this.#ctx, status, result });
    return result;
  }

  // ---------------------------------------------------------------------------------------------
  // The loop
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

    while (!state.end) {
      if (this.#stopCause) {
        this.#finish(state, this.#stopCause, state.currentStepId);
        break;
      }
      if (state.iteration >= maxIterations) {
        this.#finish(state, "max_iterations", state.currentStepId, {
          code: "MAX_ITERATIONS",
          message:
            `[StepFlow] The run reached maxTotalIterations (${maxIterations}) at step "${state.currentStepId}". Raise limits.maxTotalIterations (or --max-iterations) if the flow needs more.`,
          stepId: state.currentStepId,
        });
        break;
      }

      // One iteration of the current step.
      const step = flowStep(def, state.currentStepId);
      if (!step) {
        // Every route is checked before it is taken; this guards the invariant, never a crash.
        this.#finish(state, "step_routing_failed", state.currentStepId, {
          code: "STEP_ROUTING_FAILED",
          message: `[StepFlow] "${state.currentStepId}" is not a flow step of agent "${def.name}".`,
          stepId: state.currentStepId,
        });
        break;
      }
      state.iteration++;
      state.order++;
      const info = this.#stepInfo(state, step);
      const startedAt = new Date();
      await this.#events.emit("onStepStart", info);
      // step_start is logged once the prompt is known (it carries the prompt), else in the catch.
      let started = false;

      let outcome: Outcome;
      const entry: HistoryEntry = {
        stepId: step.id,
        iteration: state.iteration,
        attempt: state.attempt,
        transition: "next",
        startedAt: startedAt.toISOString(),
        durationMs: 0,
      };
      if (step.kind === "command") {
        // A command step calls no model: the exit code routes (src/flow/command_step.ts).
        await this.#logStepStart(state, step);
        try {
          outcome = this.#completion(state, await this.#commandStep(state, step, entry));
        } catch (error) {
          outcome = await this.#onStepFailure(state, step, info, error, entry);
        }
        entry.durationMs = Date.now() - startedAt.getTime();
        await this.#record(state, history, entry, outcome, info);
        continue;
      }
      try {
        const vars: PromptVariables = {
          uv: state.args,
          inputText: state.inputText,
          iteration: state.iteration,
          stepId: step.id,
          handoff: state.latestHandoff,
          parameters: def.agent.parameters ?? {},
        };
        // After a failed step validation the retry prompt reports it (src/flow/validators.ts).
        const retry = state.validationRetry?.stepId === step.id ? state.validationRetry : undefined;
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
        const request: LlmRequest = {
          kind: "step",
          agent: def.name,
          stepId: step.id,
          iteration: state.iteration,
          prompt: prompt.text,
          cwd: state.cwd,
        };
        if (systemPrompt !== undefined) request.systemPrompt = systemPrompt;
        const model = this.#options.model ?? step.model ?? def.agent.behavior.model;
        if (model) request.model = model;
        const tools = step.allowedTools ?? def.agent.behavior.allowedTools;
        if (tools) request.allowedTools = tools;
        const permissionMode = step.permissionMode ?? def.agent.behavior.permissionMode;
        if (permissionMode) request.permissionMode = permissionMode;

        if (step.kind === "check") {
          // Seed 001: run the step, then (after iterations.min runs) its check.
          const response = await this.#call(backend, request, state, step);
          entry.answer = excerpt(response.text, ANSWER_EXCERPT_CHARS);
          state.checkRuns++;
          if (state.checkRuns < step.iterations.min) {
            outcome = { kind: "goto", stepId: step.id, transition: "repeat" };
          } else {
            const verdict = await this.#runCheck(backend, request, state, step, vars, prompts);
            entry.checkResult = verdict;
            outcome = this.#routeCheck(state, step, verdict);
          }
        } else {
          // Seed 004: schema first (two-strike rule), then the call, validation, gate, router.
          let schema;
          try {
            schema = await schemas.resolve(step.outputSchemaRef!, step.id);
            setOwn(state.schemaStrikes, step.id, 0);
          } catch (error) {
            outcome = await this.#schemaStrike(state, step, info, error, entry);
            entry.durationMs = Date.now() - startedAt.getTime();
            await this.#record(state, history, entry, outcome, info);
            continue;
          }
          request.outputSchema = schema.schema;
          const asked = await askStructured({
            request,
            call: (req) => this.#call(backend, req, state, step),
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
          const output = asked.value;
          outcome = await this.#routeGate(state, step, output, entry, info);
          if (step.validation && (outcome.kind === "goto" || outcome.reason === "completed")) {
            outcome = await this.#validate(state, step, outcome, info);
          }
        }
        outcome = this.#completion(state, outcome);
      } catch (error) {
        if (!started) await this.#logStepStart(state, step);
        outcome = await this.#onStepFailure(state, step, info, error, entry);
      }
      entry.durationMs = Date.now() - startedAt.getTime();
      await this.#record(state, history, entry, outcome, info);
    }
  }

  /** The `step_start` log entry, with the prompt sent (cut to 16,384 characters) when known. */
  async #logStepStart(state: RunnerState, step: FlowStep, prompt?: string): Promise<void> {
    if (!this.#options.store) return;
    const fields: { type: string; [k: string]: unknown } = {
      type: "step_start",
      stepId: step.id,
      attempt: state.attempt,
    };
    if (prompt !== undefined) fields.prompt = excerpt(prompt, PROMPT_EXCERPT_CHARS);
    await this.#log(state, fields);
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
    await this.#events.emit("onStepRetry", this.#stepInfo(state, step), reask.attempt, error);
    await this.#log(state, {
      type: "step_reask",
      stepId: step.id,
      attempt: reask.attempt,
      reason: reask.reason,
      errors: reask.errors,
      answer: reask.answer,
    });
  }

  /** Records an iteration: history, events, log, the move to the next step, the checkpoint. */
  async #record(
    state: RunnerState,
    history: HistoryEntry[],
    entry: HistoryEntry,
    outcome: Outcome,
    info: StepInfo,
  ): Promise<void> {
    entry.transition = outcome.transition;
    if (outcome.kind === "goto") {
      entry.nextStepId = outcome.stepId;
      if (outcome.stepId === state.currentStepId) {
        state.attempt++;
      } else {
        state.currentStepId = outcome.stepId;
        state.attempt = 1;
        state.checkRuns = 0;
        state.checkRetries = 0;
        state.checkFailures = 0;
        state.errorRetries = 0;
        state.validationRetries = 0;
        delete state.validationRetry;
      }
    } else {
      this.#finish(state, outcome.reason, entry.stepId, outcome.error, outcome.output);
    }
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
    if (this.#options.store) {
      await this.#log(state, {
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
        await this.#log(state, { type: "step_end", stepId: v.stepId, entry: v, validator: true });
      }
    }
    // The iteration that ends the run is committed by run() together with run_end under the
    // terminal status: a terminal checkpoint committed here, before run_end, and a crash in between
    // left an ended run without run_end that nothing resumes.
    if (!state.end) await this.#checkpoint(state, "running");
  }

  // ---------------------------------------------------------------------------------------------
  // Steps: backend calls, checks, gates
  // ---------------------------------------------------------------------------------------------

  /** One backend call, with the step timeout, pause and cancellation; sums usage. */
  async #call(
    backend: LlmBackend,
    request: LlmRequest,
    state: RunnerState,
    step: FlowStep,
  ): Promise<LlmResponse> {
    await this.#waitIfPaused();
    const runSignal = this.#controller!.signal;
    runSignal.throwIfAborted();
    if (state.sessionId) request.sessionId = state.sessionId;
    const timeoutMs = step.timeoutMs ?? this.#options.stepTimeoutMs ??
      this.#def.limits.stepTimeoutMs;
    const signal = timeoutMs
      ? AbortSignal.any([runSignal, AbortSignal.timeout(timeoutMs)])
      : runSignal;
    const onRetry = (retry: RetryInfo) => {
      const info = this.#stepInfo(state, step);
      const error = new StepflowError(
        "BACKEND_RETRY",
        `${retry.backend} attempt ${retry.attempt}/${retry.maxAttempts} failed (${retry.reason}); retrying in ${retry.delayMs} ms`,
        { cause: retry.error, details: { status: retry.status, delayMs: retry.delayMs } },
      );
      void this.#events.emit("onStepRetry", info, retry.attempt, error);
      void this.#log(state, {
        type: "backend_retry",
        stepId: step.id,
        attempt: retry.attempt,
        delayMs: retry.delayMs,
        reason: retry.reason,
      });
    };
    let response: LlmResponse;
    try {
      response = await backend.complete(request, { signal, onRetry });
    } catch (error) {
      if (runSignal.aborted) throw runSignal.reason;
      if (signal.aborted) {
        throw new StepflowError(
          "STEP_TIMEOUT",
          `Backend call of step "${step.id}" timed out after ${timeoutMs} ms (${request.kind}). Raise the step's timeoutMs or limits.stepTimeoutMs.`,
          { details: { stepId: step.id } },
        );
      }
      throw error;
    }
    runSignal.throwIfAborted();
    state.usage.calls++;
    if (response.usage) {
      state.usage.inputTokens += response.usage.inputTokens;
      state.usage.outputTokens += response.usage.outputTokens;
    } else {
      // No usage is not zero tokens: count the call as unknown so totals are never silently low.
      state.usage.callsWithoutUsage = (state.usage.callsWithoutUsage ?? 0) + 1;
    }
    if (response.costUsd) state.usage.costUsd += response.costUsd;
    if (response.sessionId) state.sessionId = response.sessionId;
    this.#lastAnswer = response;
    return response;
  }

  /** Runs a step's check prompt (a separate call with `kind: "check"`). */
  async #runCheck(
    backend: LlmBackend,
    stepRequest: LlmRequest,
    state: RunnerState,
    step: FlowStep,
    vars: Parameters<PromptResolver["resolve"]>[1],
    prompts: PromptResolver,
  ): Promise<CheckVerdict> {
    const checkPrompt = await prompts.resolve(step.check!.prompt, vars, { stepId: step.id });
    const response = await this.#call(
      backend,
      {
        ...stepRequest,
        kind: "check",
        prompt: checkPrompt.text,
        outputSchema: { ...CHECK_RESPONSE_SCHEMA },
      },
      state,
      step,
    );
    return interpretCheck(response);
  }

  /** Seed 001 routing: OK → onPass; NG → repeat within iterations.max, then onFail. */
  #routeCheck(state: RunnerState, step: FlowStep, verdict: CheckVerdict): Outcome {
    const check = step.check!;
    if (verdict.result === "ng") state.checkFailures = (state.checkFailures ?? 0) + 1;
    if (verdict.result === "ok") {
      return "next" in check.onPass
        ? { kind: "goto", stepId: check.onPass.next, transition: "next" }
        : { kind: "end", reason: "completed", transition: "complete" };
    }
    if (state.checkRuns < step.iterations.max) {
      return { kind: "goto", stepId: step.id, transition: "repeat" };
    }
    if ("fallback" in check.onFail) {
      return { kind: "goto", stepId: check.onFail.fallback, transition: "fallback" };
    }
    const maxRetries = check.onFail.maxRetries ?? 0;
    if (maxRetries === 0 || state.checkRetries < maxRetries) {
      state.checkRetries++;
      state.checkRuns = 0;
      return { kind: "goto", stepId: step.id, transition: "retry" };
    }
    return {
      kind: "end",
      reason: "retries_exhausted",
      transition: "fail",
      error: {
        code: "RETRIES_EXHAUSTED",
        message: `[StepFlow] Step "${step.id}" failed ${
          plural(state.checkFailures ?? 1, "check")
        } over ${
          plural(maxRetries + 1, "attempt")
        } (onFail.maxRetries ${maxRetries}, iterations.max ${step.iterations.max}). Last check: ${verdict.message}`,
        stepId: step.id,
      },
    };
  }

  /** Seed 004 routing: intent (mapped, allowed or fallback), handoff, then the router. */
  async #routeGate(
    state: RunnerState,
    step: FlowStep,
    output: unknown,
    entry: HistoryEntry,
    info: StepInfo,
  ): Promise<Outcome> {
    const gate = step.gate;
    const reading = gate
      ? interpretGate(output, gate)
      : { handoff: {} } as ReturnType<typeof interpretGate>;
    if (Object.keys(reading.handoff).length > 0) {
      // Spreads and setOwn keep every key as data ("__proto__" included); Object.assign would not.
      setOwn(state.handoff, step.id, { ...ownValue(state.handoff, step.id), ...reading.handoff });
      for (const key of Object.keys(reading.handoff)) {
        setOwn(state.latestHandoff, key, reading.handoff[key]);
      }
    }
    if (step.kind === "closing") {
      if (reading.intent) entry.intent = reading.intent;
      return { kind: "end", reason: "completed", transition: "complete", output };
    }
    const routingFailed = (message: string): Outcome => ({
      kind: "end",
      reason: "step_routing_failed",
      transition: "fail",
      error: { code: "STEP_ROUTING_FAILED", message, stepId: step.id },
    });

    let intent: GateIntent | undefined = reading.intent;
    if (intent === undefined && reading.unknownIntent === undefined) {
      // R4: from iteration 2 on, no intent ends the run.
      if (state.iteration > 1 || !gate!.fallbackIntent) {
        return routingFailed(
          `[StepFlow] No intent produced for iteration ${state.iteration} on step "${step.id}".\nFlow steps must produce structured output with a valid intent.\nCheck that the step's schema includes ${
            gate!.intentField
          } and the LLM returns valid JSON.`,
        );
      }
      intent = gate!.fallbackIntent;
    } else if (intent === undefined || !gate!.allowedIntents.includes(intent)) {
      const shown = intent ?? reading.unknownIntent;
      if (!gate!.fallbackIntent) {
        return routingFailed(
          `[StepFlow] Step "${step.id}" produced intent "${shown}", which is not in allowedIntents (${
            gate!.allowedIntents.join(", ")
          }) and the step declares no fallbackIntent.`,
        );
      }
      this.#warn(
        `step "${step.id}" produced intent "${shown}" (not allowed); using fallbackIntent "${
          gate!.fallbackIntent
        }"`,
      );
      intent = gate!.fallbackIntent;
    }
    entry.intent = intent;

    const route = routeTransition(this.#def, step, intent, reading.target);
    switch (route.kind) {
      case "goto":
        if (route.transition === "jump") await this.#events.emit("onStepJump", info, route.stepId);
        return route;
      case "complete":
        return { kind: "end", reason: "completed", transition: "complete", output };
      case "abort":
        return {
          kind: "end",
          reason: "aborted",
          transition: "abort",
          error: {
            code: "ABORT_INTENT",
            message: `[StepFlow] Step "${step.id}" asked to abort (intent "abort").`,
            stepId: step.id,
          },
        };
      case "error":
        return routingFailed(route.message);
    }
  }

  /** Agent features: what a command step or validator needs to run an allowed command. */
  #commandContext(state: RunnerState, step: FlowStep): AgentCommandContext {
    return {
      commands: this.#def.agent.commands,
      allowRun: this.#options.allowRun,
      args: state.args,
      cwd: state.cwd,
      signal: this.#controller!.signal,
      agent: this.#def.name,
      stepId: step.id,
    };
  }

  /** A command step: run it, hand off its output, route on its exit code. */
  async #commandStep(state: RunnerState, step: FlowStep, entry: HistoryEntry): Promise<Outcome> {
    await this.#waitIfPaused();
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
    const max = step.validation!.maxRetries ?? DEFAULT_VALIDATION_RETRIES;
    const used = state.validationRetries ?? 0;
    const summary = `validator "${failure.command}" failed (${failure.reason}${
      failure.pattern ? `, pattern ${failure.pattern}` : ""
    })`;
    if (used >= max) {
      throw new StepflowError(
        "VALIDATION_FAILED",
        `Step "${step.id}": ${summary} after ${used} retr${
          used === 1 ? "y" : "ies"
        } (validation.maxRetries ${max}). Last output:\n${failure.output.slice(-2000)}`,
        { details: { stepId: step.id, command: failure.command, exitCode: failure.exitCode } },
      );
    }
    state.validationRetries = used + 1;
    state.validationRetry = {
      stepId: step.id,
      command: failure.command,
      output: failure.output.slice(-20_000),
      ...(failure.pattern !== undefined ? { pattern: failure.pattern } : {}),
    };
    const error = new StepflowError("VALIDATION_FAILED", `Step "${step.id}": ${summary}`);
    await this.#events.emit("onStepRetry", info, used + 1, error);
    await this.#log(state, {
      type: "validation_failed",
      stepId: step.id,
      command: failure.command,
      exitCode: failure.exitCode,
      pattern: failure.pattern,
    });
    return { kind: "goto", stepId: step.id, transition: "retry" };
  }

  /** Completion conditions (agent.json `completion`) end a run that would go on. */
  #completion(state: RunnerState, outcome: Outcome): Outcome {
    if (outcome.kind !== "goto" || !this.#def.agent.completion) return outcome;
    const met = completionReached(this.#def.agent.completion, {
      iteration: state.iteration,
      text: () => answerText(this.#lastAnswer),
    });
    if (!met) return outcome;
    this.#warn(
      `step "${state.currentStepId}": completion condition met (${met}); the run completes`,
    );
    return { kind: "end", reason: "completed", transition: "complete" };
  }

  /** Two-strike rule: the first strike retries the step; the second ends the run. */
  async #schemaStrike(
    state: RunnerState,
    step: FlowStep,
    info: StepInfo,
    error: unknown,
    entry: HistoryEntry,
  ): Promise<Outcome> {
    const strikes = (ownValue(state.schemaStrikes, step.id) ?? 0) + 1;
    setOwn(state.schemaStrikes, step.id, strikes);
    const message = errorMessage(error);
    entry.error = message;
    await this.#events.emit(
      "onStepError",
      info,
      new StepflowError("STRUCTURED_OUTPUT_UNAVAILABLE", message, { cause: error }),
    );
    await this.#log(state, {
      type: "step_error",
      stepId: step.id,
      code: "STRUCTURED_OUTPUT_UNAVAILABLE",
      message,
      strike: strikes,
    });
    if (strikes < 2) return { kind: "goto", stepId: step.id, transition: "retry" };
    const ref = step.outputSchemaRef!;
    return {
      kind: "end",
      reason: "schema_resolution_failed",
      transition: "fail",
      error: {
        code: "FAILED_SCHEMA_RESOLUTION",
        message:
          `[StepFlow] Schema resolution failed twice in a row on step "${step.id}": pointer ${ref.schema} in schemas/${ref.file}. ${message}`,
        stepId: step.id,
      },
    };
  }

  /** Applies the step's `onError` policy to an execution failure (STEPFLOW.md §6). */
  async #onStepFailure(
    state: RunnerState,
    step: FlowStep,
    info: StepInfo,
    error: unknown,
    entry: HistoryEntry,
  ): Promise<Outcome> {
    if (this.#stopCause) {
      entry.error = `run ${this.#stopCause}`;
      return { kind: "end", reason: this.#stopCause, transition: "abort" };
    }
    const code = error instanceof StepflowError ? error.code : "BACKEND_ERROR";
    const message = errorMessage(error);
    entry.error = message;
    await this.#events.emit("onStepError", info, error);
    await this.#log(state, {
      type: "step_error",
      stepId: step.id,
      code,
      message,
      ...(entry.answer ? { answer: entry.answer } : {}),
    });
    const failed: Outcome = {
      kind: "end",
      reason: "step_failed",
      transition: "fail",
      error: { code, message: stepFailureMessage(step.id, message), stepId: step.id },
    };
    if (CONFIGURATION_CODES.has(code)) return failed;

    const policy = step.onError;
    switch (policy.kind) {
      case "fail":
        return failed;
      case "continue": {
        if (step.kind === "check") {
          const onPass = step.check!.onPass;
          return "next" in onPass
            ? { kind: "goto", stepId: onPass.next, transition: "continue" }
            : { kind: "end", reason: "completed", transition: "continue" };
        }
        const next = step.transitions.next?.target;
        return next ? { kind: "goto", stepId: next, transition: "continue" } : failed;
      }
      case "retry": {
        if (state.errorRetries >= policy.count) {
          failed.error!.message += ` (gave up after ${policy.count} retr${
            policy.count === 1 ? "y" : "ies"
          })`;
          return failed;
        }
        state.errorRetries++;
        await this.#events.emit("onStepRetry", info, state.errorRetries, error);
        await this.#log(state, {
          type: "step_retry",
          stepId: step.id,
          attempt: state.errorRetries,
        });
        try {
          await sleep(
            backoffDelay(state.errorRetries, this.#options.retryBackoff),
            this.#controller!.signal,
          );
        } catch {
          return { kind: "end", reason: this.#stopCause ?? "cancelled", transition: "abort" };
        }
        return { kind: "goto", stepId: step.id, transition: "retry" };
      }
      case "jump":
        await this.#events.emit("onStepJump", info, policy.target);
        return { kind: "goto", stepId: policy.target, transition: "jump" };
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Run state, control, persistence
  // ---------------------------------------------------------------------------------------------

  /** The given backend, else the agent's `behavior.backend` (default `claude-code`). */
  async #backend(): Promise<LlmBackend> {
    if (this.#options.backend) return this.#options.backend;
    const behavior = this.#def.agent.behavior;
    return await createBackend({
      name: behavior.backend ?? "claude-code",
      model: this.#options.model ?? behavior.model,
      onWarning: (m) => this.#warn(m),
    });
  }

  async #initialState(
    options: RunOptions,
    runId: string,
  ): Promise<{ state: RunnerState; history: HistoryEntry[] }> {
    if (options.resume ?? options.redrive) return await this.#restore(runId, !options.resume);
    const args = { ...(options.args ?? {}) };
    const state: RunnerState = {
      runId,
      agent: this.#def.name,
      args,
      cwd: resolve(options.cwd ?? Deno.cwd()),
      startedAt: new Date().toISOString(),
      currentStepId: this.#def.entryStepId,
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
    return { state, history: [] };
  }

  /** Loads a checkpoint and the history from the run log (resume and redrive). */
  async #restore(
    runId: string,
    redrive: boolean,
  ): Promise<{ state: RunnerState; history: HistoryEntry[] }> {
    const store = this.#options.store;
    const verb = redrive ? "redrive" : "resume";
    if (!store) {
      throw new StepflowError(
        "NO_RUN_STORE",
        `Cannot ${verb} run ${runId}: the runner has no store. Pass options.store (the file store records runs under logging.directory).`,
      );
    }
    const checkpoint = await store.loadCheckpoint(runId);
    if (!checkpoint) {
      throw new StepflowError(
        "RUN_NOT_FOUND",
        `No run ${runId} was found to ${verb}. List runs with --runs.`,
        {
          details: { runId },
        },
      );
    }
    if (checkpoint.agent !== this.#def.name) {
      throw new StepflowError(
        "RUN_AGENT_MISMATCH",
        `Run ${runId} belongs to agent "${checkpoint.agent}", not "${this.#def.name}".`,
      );
    }
    const state = copyState(checkpoint.state as unknown as RunnerState, (m) => this.#warn(m));
    assertContinuable(runId, checkpoint.status, verb);
    if (redrive) {
      const failedStep = state.end?.stepId ?? state.currentStepId;
      if (!flowStep(this.#def, failedStep)) {
        throw new StepflowError(
          "RUN_STEP_UNKNOWN",
          `Run ${runId} failed at step "${failedStep}", which the agent no longer defines.`,
        );
      }
      state.currentStepId = failedStep;
      state.attempt = 1;
      state.checkRuns = 0;
      state.checkRetries = 0;
      state.checkFailures = 0;
      state.errorRetries = 0;
      state.validationRetries = 0;
      delete state.validationRetry;
      setOwn(state.schemaStrikes, failedStep, 0);
      delete state.end;
    } else {
      if (!flowStep(this.#def, state.currentStepId)) {
        throw new StepflowError(
          "RUN_STEP_UNKNOWN",
          `Run ${runId} stopped at step "${state.currentStepId}", which the agent no longer defines.`,
        );
      }
    }
    const log = await store.readLog(runId);
    this.#logEntries = log.length;
    // A crash between a step_end line and its checkpoint leaves a step_end the checkpoint does not
    // count; that step runs again, so every resume marker cuts history back to what it had.
    const history: HistoryEntry[] = [];
    for (const line of log) {
      if (line.type === "step_end") history.push(line.entry as HistoryEntry);
      else if (line.type === "run_resume" || line.type === "run_redrive") {
        history.length = Math.min(history.length, Number(line.historyLength ?? 0));
      }
    }
    history.length = Math.min(history.length, state.historyLength);
    if (history.length !== state.historyLength) {
      throw new StepflowError(
        "RUN_LOG_INCOMPLETE",
        `Run ${runId}: the checkpoint records ${state.historyLength} history entries but the log holds ${history.length}. The log was truncated; refusing to resume from a state that would lose history.`,
      );
    }
    return { state, history };
  }

  #finish(
    state: RunnerState,
    reason: CompletionReason,
    stepId: string,
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
          ? `The run exceeded its time limit (${this.#runTimeout()} ms) at step "${stepId}".`
          : `The run was ${reason} at step "${stepId}".`,
        stepId,
      };
    }
  }

  #result(state: RunnerState, history: HistoryEntry[]): StepFlowResult {
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
    return result;
  }

  #stepInfo(state: RunnerState, step: FlowStep): StepInfo {
    return {
      runId: state.runId,
      stepId: step.id,
      desc: step.name,
      order: state.order,
      path: [step.name],
      iteration: state.iteration,
    };
  }

  async #setState(next: RunState): Promise<void> {
    const previous = this.#state;
    if (previous === next) return;
    this.#state = next;
    await this.#events.emit("onStateChange", next, previous, this.#ctx);
  }

  async #waitIfPaused(): Promise<void> {
    while (this.#paused && !this.#stopCause) await this.#paused.promise;
  }

  #stop(cause: StopCause): void {
    if (!this.#controller || this.#stopCause) return;
    this.#stopCause = cause;
    this.#controller.abort(new StepflowError(cause.toUpperCase(), `run ${cause}`));
    const paused = this.#paused;
    this.#paused = undefined;
    paused?.resolve();
    if (cause === "timeout") void this.#events.emit("onTimeout", this.#ctx);
    else void this.#events.emit("onAbort", this.#ctx);
  }

  #attachSignals(signal: AbortSignal | undefined, runId: string): () => void {
    const onAbort = () => this.#stop("cancelled");
    if (signal?.aborted) onAbort();
    else signal?.addEventListener("abort", onAbort, { once: true });
    const timeoutMs = this.#runTimeout();
    const timer = timeoutMs ? setTimeout(() => this.#stop("timeout"), timeoutMs) : undefined;
    const stopPolling = this.#pollCancelRequests(runId);
    return () => {
      signal?.removeEventListener("abort", onAbort);
      if (timer !== undefined) clearTimeout(timer);
      stopPolling();
    };
  }

  /**
   * A cancel request recorded in the store by another process (the dashboard's Cancel) ends the
   * run as Ctrl-C does. Polled on a timer, not per iteration: the loop pays nothing, and a long
   * backend call is cancelled too.
   */
  #pollCancelRequests(runId: string): () => void {
    const store = this.#options.store;
    if (!store?.takeCancelRequest) return () => {};
    let polling = false;
    const poll = async () => {
      if (polling) return;
      polling = true;
      try {
        if (await store.takeCancelRequest!(runId)) this.#stop("cancelled");
      } catch (error) {
        this.#warn(`cannot check for a cancel request of run ${runId}: ${errorMessage(error)}`);
      } finally {
        polling = false;
      }
    };
    const interval = setInterval(poll, this.#options.cancelPollMs ?? 1000);
    return () => clearInterval(interval);
  }

  #runTimeout(): number | undefined {
    return this.#options.runTimeoutMs ?? this.#def.limits.runTimeoutMs;
  }

  async #log(state: RunnerState, fields: { type: string; [k: string]: unknown }): Promise<void> {
    const store = this.#options.store;
    if (!store) return;
    this.#logEntries++;
    await store.append(state.runId, {
      ts: new Date().toISOString(),
      runId: state.runId,
      iteration: state.iteration,
      ...fields,
    });
  }

  async #checkpoint(state: RunnerState, status: RunStatus): Promise<void> {
    const store = this.#options.store;
    if (!store) return;
    const checkpoint: RunCheckpoint = {
      version: 1,
      runId: state.runId,
      agent: state.agent,
      status,
      startedAt: state.startedAt,
      updatedAt: new Date().toISOString(),
      logEntries: this.#logEntries,
      state: state as unknown as Record<string, unknown>,
    };
    await store.saveCheckpoint(checkpoint);
  }

  #warn(message: string): void {
    (this.#options.onWarning ?? ((m: string) => console.warn(`[stepflow] ${m}`)))(message);
  }
}

/** Nesting kept in a restored state's handoff; outputs are bounded far below it at validation. */
const RESTORED_DEPTH = 1_000;

/**
 * A copy of a checkpointed state that the loop can mutate without touching the store's object: the
 * containers the loop writes to are copied one level. `structuredClone` recursed, so a handoff value
 * nested a few thousand levels deep (stored before output depth was bounded) made every resume
 * crash; such values are cut at {@linkcode RESTORED_DEPTH} levels, with a warning, so the run can
 * checkpoint and print them again.
 */
function copyState(saved: RunnerState, warn: (message: string) => void): RunnerState {
  const handoff = boundDepth(saved.handoff, RESTORED_DEPTH) as RunnerState["handoff"];
  const latest = boundDepth(saved.latestHandoff, RESTORED_DEPTH) as RunnerState["latestHandoff"];
  if (handoff !== saved.handoff || latest !== saved.latestHandoff) {
    warn(
      `run ${saved.runId}: its handoff holds data nested deeper than ${RESTORED_DEPTH} levels (stored by an older version); the deeper parts are omitted`,
    );
  }
  return {
    ...saved,
    schemaStrikes: { ...saved.schemaStrikes },
    handoff: { ...handoff },
    latestHandoff: { ...latest },
    usage: { ...saved.usage },
  };
}

/** An answer's text and structured output as one searchable text (`detect:keyword`). */
function answerText(answer: { text: string; structuredOutput?: unknown }): string {
  return answer.structuredOutput === undefined
    ? answer.text
    : `${answer.text}\n${JSON.stringify(answer.structuredOutput)}`;
}

/**
 * The run error's message for a failed step: the error's own message when it already names the step
 * (`Step "x" output does not match …`, `Backend call of step "x" timed out …`, `Prompt file not
 * found: … (step "x")`), else `Step "x" failed: <message>` — so the step is named exactly once.
 */
function stepFailureMessage(stepId: string, message: string): string {
  return message.includes(`"${stepId}"`) ? message : `Step "${stepId}" failed: ${message}`;
}

/** `1 check`, `9 checks`. */
function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** A sortable, unique run id: `20261122T041500Z-1a2b3c`. */
export function newRunId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const random = crypto.getRandomValues(new Uint8Array(3));
  return `${stamp}-${[...random].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
