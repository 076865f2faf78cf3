/**
 * OpenTelemetry spans and metrics of a step-flow run, through `npm:@opentelemetry/api`, named by
 * the GenAI semantic conventions (version {@linkcode SEMCONV_VERSION}) beside stepflow's own
 * `stepflow.*` attributes:
 *
 * - `invoke_agent <agent>` — the whole run (or the resumed/redriven part of it); a child run of an
 *   agent step is a child of that step's span;
 * - `stepflow.step <stepId>` — one iteration of a step, child of the run span;
 * - `chat <model>` — one model call (`step`, `check`, `reask`, or one turn of the tool loop),
 *   child of its step span and the active span while the call runs (so instrumented `fetch`
 *   calls nest under it); `invoke_agent claude-code` on the `claude-code` backend, an agent itself;
 * - `execute_tool <tool>` — one tool call, from the model's request to its result, child of its
 *   step span (the tool loop's calls and those Claude Code runs itself alike);
 * - the `gen_ai.client.token.usage` and `gen_ai.client.operation.duration` histograms, one record
 *   per model call.
 *
 * Prompts and answers are recorded only when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
 * asks for them (src/flow/telemetry_content.ts). Nothing is created unless a tracer or meter
 * provider is registered — by the application, by the command lines when an OTLP endpoint is set
 * (src/cli/kit/telemetry_export.ts), or by Deno under `OTEL_DENO=true` — and that is checked once
 * per run, so a run without telemetry pays nothing per iteration.
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  context,
  type Histogram,
  type MeterProvider,
  metrics,
  ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
  type TracerProvider,
} from "@opentelemetry/api";
import { errorMessage, StepflowError } from "../errors.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { RunContext, StepInfo, ToolCallEvent } from "../events/types.ts";
import {
  supportsToolTurns,
  type ToolTurnBackend,
  type ToolTurnRequest,
  type ToolTurnResponse,
} from "../llm/tool_turn.ts";
import type { LlmBackend, LlmRequest, LlmResponse } from "../llm/types.ts";
import {
  contentCaptureFromEnv,
  inputMessages,
  outputMessages,
  systemInstructions,
  toolArguments,
} from "./telemetry_content.ts";
import {
  type BackendFlavour,
  backendFlavour,
  errorType,
  GENAI_METRICS,
  SPAN_ATTRIBUTES as A,
  toolErrorType,
  TRACER_NAME,
} from "./telemetry_names.ts";
import type { StepFlowResult } from "./types.ts";

export { SEMCONV_VERSION, SPAN_ATTRIBUTES, TRACER_NAME } from "./telemetry_names.ts";

/** The provider `@opentelemetry/api` falls back to when nobody registered one. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * True when a tracer provider is registered with `@opentelemetry/api` (by the application, by the
 * command lines' OTLP export, or by Deno under `OTEL_DENO=true`), i.e. when spans would go
 * somewhere.
 */
export function tracingEnabled(): boolean {
  let provider: TracerProvider = trace.getTracerProvider();
  if (typeof (provider as Partial<ProxyTracerProvider>).getDelegate === "function") {
    provider = (provider as ProxyTracerProvider).getDelegate();
  }
  return provider !== NOOP_PROVIDER && provider?.constructor?.name !== "NoopTracerProvider";
}

/** True when a meter provider is registered with `@opentelemetry/api`. */
export function metricsEnabled(): boolean {
  return metrics.getMeterProvider()?.constructor?.name !== "NoopMeterProvider";
}

/** The spans of one run, attached to the runner's events. */
export interface FlowTelemetry {
  /** Wraps the backend so each call gets its span and metrics. */
  backend(backend: LlmBackend): LlmBackend;
  /** Ends open spans when the run threw instead of ending (its error is recorded). */
  fail(error: unknown): void;
}

/** What {@linkcode RunTelemetry} knows about the run. */
interface FlowTelemetryOptions {
  /** The agent (its name, and agent.json `description` when it has one). */
  definition: { name: string; agent?: { description?: string } };
  /** How the run starts: `start`, `resume` or `redrive`. */
  mode: "start" | "resume" | "redrive";
  /** The runner's event emitter. */
  events: EventEmitter;
  /** The run's backend, when known before the run starts (its provider goes on the run span). */
  backend?: LlmBackend | undefined;
  /** The parent run of a child run (an agent step's), whose step span is the run span's parent. */
  parent?: { runId: string } | undefined;
}

/**
 * Starts the telemetry of one run: subscribes to the runner's events (removing itself when the
 * run ends) and returns the backend wrapper. Returns undefined — and does nothing — when neither a
 * tracer nor a meter provider is registered.
 *
 * @param definition the agent (its name, and agent.json `description` when it has one)
 * @param mode how the run starts: `start`, `resume` or `redrive`
 * @param events the runner's event emitter
 * @param backend the run's backend, when known before the run starts (its provider goes on the
 *   run span)
 * @param parent the parent run of a child run (an agent step's): the run span's parent is that
 *   run's open step span
 *
 * @example
 * ```ts ignore
 * const telemetry = startFlowTelemetry(definition, "start", emitter, backend, state.parent);
 * const traced = telemetry?.backend(backend) ?? backend;
 * ```
 */
export function startFlowTelemetry(
  definition: FlowTelemetryOptions["definition"],
  mode: FlowTelemetryOptions["mode"],
  events: EventEmitter,
  backend?: LlmBackend,
  parent?: { runId: string },
): FlowTelemetry | undefined {
  const tracing = tracingEnabled();
  const metering = metricsEnabled();
  if (!tracing && !metering) return undefined;
  return new RunTelemetry(
    { definition, mode, events, backend, parent },
    trace.getTracer(TRACER_NAME),
    metering ? instruments() : undefined,
    contentCaptureFromEnv(),
  );
}

/**
 * Ends the spans of every run still open in this process, recording `reason` as their error: a
 * command that quits mid-run (a second Ctrl-C, SIGTERM) calls it before flushing its telemetry.
 */
export function endOpenRuns(reason: string): void {
  for (const run of [...OPEN_RUNS.values()]) run.fail(new Error(reason));
}

/** The runs of this process whose span is open, by run id (child runs find their parent here). */
const OPEN_RUNS = new Map<string, RunTelemetry>();

interface Instruments {
  tokenUsage: Histogram;
  duration: Histogram;
}

let cachedInstruments: { provider: MeterProvider; instruments: Instruments } | undefined;

/** The two GenAI client histograms, made once per meter provider. */
function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  if (cachedInstruments?.provider !== provider) {
    const meter = provider.getMeter(TRACER_NAME);
    const histogram = (m: (typeof GENAI_METRICS)[keyof typeof GENAI_METRICS]) =>
      meter.createHistogram(m.name, {
        unit: m.unit,
        description: m.description,
        advice: { explicitBucketBoundaries: [...m.buckets] },
      });
    cachedInstruments = {
      provider,
      instruments: {
        tokenUsage: histogram(GENAI_METRICS.tokenUsage),
        duration: histogram(GENAI_METRICS.operationDuration),
      },
    };
  }
  return cachedInstruments.instruments;
}

/** The open step of a run: its span, its context and the tokens of its calls so far. */
interface OpenStep {
  span: Span;
  context: Context;
  input: number;
  output: number;
}

/** A model call as the wrapper sees it: a plain call or one turn of the tool loop. */
type CallRequest = (LlmRequest | ToolTurnRequest) & { kind?: string };
type CallResponse = (LlmResponse | ToolTurnResponse) & {
  toolCalls?: ToolTurnResponse["toolCalls"];
};

/** The spans and metrics of one run; each event of the runner has its handler here. */
class RunTelemetry implements FlowTelemetry {
  readonly #options: FlowTelemetryOptions;
  readonly #tracer: Tracer;
  readonly #instruments: Instruments | undefined;
  readonly #captureContent: boolean;
  readonly #remove: () => void;
  #flavour: BackendFlavour | undefined;
  #run: Span | undefined;
  #runContext: Context = context.active();
  #runId = "";
  #step: OpenStep | undefined;
  /** The tool calls in flight, by call id. */
  readonly #tools = new Map<string, Span>();
  /** The model calls in flight (a run cut short ends them too). */
  readonly #calls = new Set<Span>();

  constructor(
    options: FlowTelemetryOptions,
    tracer: Tracer,
    metricInstruments: Instruments | undefined,
    captureContent: boolean,
  ) {
    this.#options = options;
    this.#tracer = tracer;
    this.#instruments = metricInstruments;
    this.#captureContent = captureContent;
    if (options.backend) this.#flavour = backendFlavour(options.backend.name);
    this.#remove = options.events.add({
      onPlanStart: (_plan, ctx) => this.#runStarted(ctx),
      onStepStart: (info) => this.#stepStarted(info),
      onStepError: (_info, error) => this.#stepFailed(error),
      onStepEnd: (_info, result) => this.#stepEnded(result),
      onToolCall: (info, call) => this.#toolCallMoved(info, call),
      onPlanEnd: (_plan, ctx) => this.#runEnded(ctx),
    });
  }

  /** The context a child run's span starts in: this run's open step (else the run). */
  childContext(): Context {
    return this.#step?.context ?? this.#runContext;
  }

  backend(backend: LlmBackend): LlmBackend {
    const flavour = this.#flavour = backendFlavour(backend.name);
    this.#run?.setAttribute(A.provider, flavour.provider);
    const wrapped: LlmBackend & Partial<ToolTurnBackend> = {
      name: backend.name,
      complete: (request, options) =>
        this.#traceCall(backend, request, () => backend.complete(request, options)),
      ...(backend.reportsToolCalls ? { reportsToolCalls: true } : {}),
      ...(backend.walksModelChains ? { walksModelChains: true } : {}),
    };
    // A backend that runs tool turns keeps doing so through the wrapper (a span per turn).
    if (supportsToolTurns(backend)) {
      wrapped.toolTurn = (request, options) =>
        this.#traceCall(backend, request, () => backend.toolTurn(request, options));
    }
    // The runner reads the backend's default model (recordings name it).
    const model = (backend as { model?: unknown }).model;
    if (typeof model === "string") (wrapped as { model?: string }).model = model;
    return wrapped;
  }

  fail(error: unknown): void {
    for (const span of this.#calls) {
      recordError(span, error);
      span.end();
    }
    this.#calls.clear();
    this.#endTools();
    if (this.#step) recordError(this.#step.span, error);
    this.#endStep();
    if (this.#run) {
      recordError(this.#run, error);
      this.#run.end();
      this.#run = undefined;
    }
    this.#closed();
  }

  // -------------------------------------------------------------------------------------------
  // The run
  // -------------------------------------------------------------------------------------------

  #runStarted(ctx: RunContext): void {
    const { definition, mode, parent } = this.#options;
    this.#runId = ctx.runId;
    const attributes: Attributes = {
      [A.operation]: "invoke_agent",
      [A.agentName]: definition.name,
      [A.conversationId]: ctx.runId,
      [A.agent]: definition.name,
      [A.runId]: ctx.runId,
      [A.runMode]: mode,
    };
    if (this.#flavour) attributes[A.provider] = this.#flavour.provider;
    const model = (this.#options.backend as { model?: unknown } | undefined)?.model;
    if (typeof model === "string") attributes[A.model] = model;
    if (definition.agent?.description) {
      attributes[A.agentDescription] = definition.agent.description;
    }
    if (parent) attributes[A.parentRunId] = parent.runId;
    const parentContext = parent
      ? OPEN_RUNS.get(parent.runId)?.childContext() ?? context.active()
      : context.active();
    this.#run = this.#tracer.startSpan(
      `invoke_agent ${definition.name}`,
      { kind: SpanKind.INTERNAL, attributes },
      parentContext,
    );
    this.#runContext = trace.setSpan(parentContext, this.#run);
    OPEN_RUNS.set(ctx.runId, this);
  }

  #runEnded(ctx: RunContext): void {
    this.#endStep();
    const run = this.#run;
    const result = ctx.result as StepFlowResult | undefined;
    if (run && result) {
      const attributes: Attributes = {
        [A.completionReason]: result.completionReason,
        [A.iterations]: result.iterations,
        [A.inputTokens]: result.usage.inputTokens,
        [A.outputTokens]: result.usage.outputTokens,
        // The token counts are a lower bound when some calls reported no usage.
        [A.callsWithoutUsage]: result.usage.callsWithoutUsage ?? 0,
      };
      if (Number.isFinite(result.usage.costUsd)) attributes[A.costUsd] = result.usage.costUsd;
      if (result.usage.cacheReadTokens) {
        attributes[A.cacheReadTokens] = result.usage.cacheReadTokens;
      }
      if (result.usage.cacheWriteTokens) {
        attributes[A.cacheWriteTokens] = result.usage.cacheWriteTokens;
      }
      run.setAttributes(attributes);
      if (!result.success && result.completionReason !== "waiting") {
        run.setStatus({
          code: SpanStatusCode.ERROR,
          message: result.error?.message ?? result.completionReason,
        });
        run.setAttribute(A.errorType, result.error?.code ?? result.completionReason);
        if (result.error?.code) run.setAttribute(A.errorCode, result.error.code);
      }
    }
    run?.end();
    this.#run = undefined;
    this.#closed();
  }

  #closed(): void {
    if (OPEN_RUNS.get(this.#runId) === this) OPEN_RUNS.delete(this.#runId);
    this.#remove();
  }

  // -------------------------------------------------------------------------------------------
  // Steps
  // -------------------------------------------------------------------------------------------

  #stepStarted(info: StepInfo): void {
    this.#endStep();
    const span = this.#tracer.startSpan(`stepflow.step ${info.stepId}`, {
      kind: SpanKind.INTERNAL,
      attributes: {
        [A.agent]: this.#options.definition.name,
        [A.runId]: this.#runId,
        [A.stepId]: info.stepId,
        [A.iteration]: info.iteration ?? info.order,
      },
    }, this.#runContext);
    this.#step = { span, context: trace.setSpan(this.#runContext, span), input: 0, output: 0 };
  }

  #stepFailed(error: unknown): void {
    if (this.#step) recordError(this.#step.span, error);
  }

  #stepEnded(result: unknown): void {
    const step = this.#step;
    if (!step) return;
    const r = (result ?? {}) as {
      transition?: string;
      intent?: string;
      nextStepId?: string;
      checkResult?: { result?: string };
    };
    const attributes: Attributes = { [A.inputTokens]: step.input, [A.outputTokens]: step.output };
    if (r.transition) attributes[A.transition] = r.transition;
    if (r.intent) attributes[A.intent] = r.intent;
    if (r.nextStepId) attributes[A.nextStepId] = r.nextStepId;
    if (r.checkResult?.result) attributes[A.checkResult] = r.checkResult.result;
    step.span.setAttributes(attributes);
    this.#endStep();
  }

  #endStep(): void {
    this.#endTools();
    this.#step?.span.end();
    this.#step = undefined;
  }

  // -------------------------------------------------------------------------------------------
  // Tool calls
  // -------------------------------------------------------------------------------------------

  #toolCallMoved(info: StepInfo, call: ToolCallEvent): void {
    if (call.phase === "requested") return this.#toolRequested(info, call);
    const span = this.#tools.get(call.callId);
    if (!span) return;
    if (call.decision) span.setAttribute(A.toolDecision, call.decision);
    if (call.decidedBy) span.setAttribute(A.toolDecidedBy, call.decidedBy);
    if (call.phase === "finished") this.#toolFinished(span, call);
  }

  #toolRequested(info: StepInfo, call: ToolCallEvent): void {
    const attributes: Attributes = {
      [A.operation]: "execute_tool",
      [A.toolName]: call.tool,
      [A.toolCallId]: call.callId,
      // The model names the call and stepflow (the client) runs it: a function tool.
      [A.toolType]: "function",
      [A.agent]: this.#options.definition.name,
      [A.runId]: this.#runId,
      [A.stepId]: info.stepId,
      [A.iteration]: info.iteration ?? info.order,
    };
    if (this.#captureContent) attributes[A.toolArguments] = safely(() => toolArguments(call.args));
    this.#tools.get(call.callId)?.end();
    const span = this.#tracer.startSpan(`execute_tool ${call.tool}`, {
      kind: SpanKind.INTERNAL,
      attributes,
    }, this.#step?.context ?? this.#runContext);
    this.#tools.set(call.callId, span);
  }

  #toolFinished(span: Span, call: ToolCallEvent): void {
    span.setAttributes({
      [A.toolIsError]: call.isError ?? false,
      [A.toolDurationMs]: call.durationMs ?? 0,
    });
    if (call.isError) {
      span.setAttribute(A.errorType, toolErrorType(call));
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: (call.result ?? "").split("\n", 1)[0].slice(0, 200),
      });
    } else if (this.#captureContent && call.result !== undefined) {
      span.setAttribute(A.toolResult, call.result);
    }
    span.end();
    this.#tools.delete(call.callId);
  }

  #endTools(): void {
    for (const span of this.#tools.values()) span.end();
    this.#tools.clear();
  }

  // -------------------------------------------------------------------------------------------
  // Model calls
  // -------------------------------------------------------------------------------------------

  /** One span and one record of each metric per model call (a plain call, or a tool-loop turn). */
  #traceCall<R extends CallResponse>(
    backend: LlmBackend,
    request: CallRequest,
    call: () => Promise<R>,
  ): Promise<R> {
    const parent = this.#step?.context ?? this.#runContext;
    const flavour = backendFlavour(backend.name);
    const backendModel = (backend as { model?: unknown }).model;
    const model = request.model ?? (typeof backendModel === "string" ? backendModel : undefined);
    const attributes = this.#callAttributes(backend, request, flavour, model);
    const name = flavour.operation === "invoke_agent"
      ? `invoke_agent ${backend.name}`
      : model
      ? `${flavour.operation} ${model}`
      : flavour.operation;
    const span = this.#tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
    this.#calls.add(span);
    const owner = this.#step;
    const started = performance.now();
    return context.with(trace.setSpan(parent, span), async () => {
      let failure: unknown;
      let response: R | undefined;
      try {
        response = await call();
        this.#callAnswered(span, response, owner);
        return response;
      } catch (error) {
        failure = error;
        recordError(span, error);
        throw error;
      } finally {
        // Ended already when the run was cut short while the call ran.
        if (this.#calls.delete(span)) span.end();
        this.#recordCallMetrics(flavour, model, started, response, failure);
      }
    });
  }

  #callAttributes(
    backend: LlmBackend,
    request: CallRequest,
    flavour: BackendFlavour,
    model: string | undefined,
  ): Attributes {
    const attributes: Attributes = {
      [A.operation]: flavour.operation,
      [A.provider]: flavour.provider,
      [A.conversationId]: this.#runId,
      [A.agent]: this.#options.definition.name,
      [A.runId]: this.#runId,
      [A.stepId]: request.stepId,
      [A.iteration]: request.iteration,
      [A.callKind]: request.kind ?? "step",
      [A.backend]: backend.name,
    };
    if (model) attributes[A.model] = model;
    if (flavour.operation === "invoke_agent") attributes[A.agentName] = backend.name;
    if (request.outputSchema) attributes[A.outputType] = "json";
    if (this.#captureContent) {
      if (request.systemPrompt) {
        attributes[A.systemInstructions] = systemInstructions(request.systemPrompt);
      }
      attributes[A.inputMessages] = safely(() => inputMessages(request));
    }
    return attributes;
  }

  #callAnswered(span: Span, response: CallResponse, owner: OpenStep | undefined): void {
    const usage = response.usage;
    if (usage) {
      span.setAttributes({
        [A.inputTokens]: usage.inputTokens,
        [A.outputTokens]: usage.outputTokens,
      });
      if (usage.cacheReadTokens) span.setAttribute(A.cacheReadTokens, usage.cacheReadTokens);
      if (usage.cacheWriteTokens) span.setAttribute(A.cacheWriteTokens, usage.cacheWriteTokens);
      if (owner) {
        owner.input += usage.inputTokens;
        owner.output += usage.outputTokens;
      }
    }
    // The server's name for the model, else the chain entry that answered (a model chain's).
    const answered = response.responseModel ?? response.model;
    if (answered) span.setAttribute(A.responseModel, answered);
    if (response.finishReason) span.setAttribute(A.finishReasons, [response.finishReason]);
    if (response.costUsd !== undefined) span.setAttribute(A.costUsd, response.costUsd);
    if (this.#captureContent) {
      span.setAttribute(A.outputMessages, safely(() => outputMessages(response)));
    }
  }

  #recordCallMetrics(
    flavour: BackendFlavour,
    model: string | undefined,
    started: number,
    response: CallResponse | undefined,
    failure: unknown,
  ): void {
    const instruments = this.#instruments;
    if (!instruments) return;
    const attributes: Attributes = {
      [A.operation]: flavour.operation,
      [A.provider]: flavour.provider,
    };
    if (model) attributes[A.model] = model;
    const answered = response?.responseModel ?? response?.model;
    if (answered) attributes[A.responseModel] = answered;
    instruments.duration.record(
      (performance.now() - started) / 1000,
      failure === undefined ? attributes : { ...attributes, [A.errorType]: errorType(failure) },
    );
    const usage = response?.usage;
    if (!usage) return;
    instruments.tokenUsage.record(usage.inputTokens, { ...attributes, [A.tokenType]: "input" });
    instruments.tokenUsage.record(usage.outputTokens, { ...attributes, [A.tokenType]: "output" });
  }
}

/** Content that cannot be written (arguments nested too deep to serialise) is left out, not thrown. */
function safely(write: () => string): string {
  try {
    return write();
  } catch (error) {
    return `(not recorded: ${errorMessage(error)})`;
  }
}

function recordError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : new Error(errorMessage(error)));
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
  span.setAttribute(A.errorType, errorType(error));
  if (error instanceof StepflowError) span.setAttribute(A.errorCode, error.code);
}
