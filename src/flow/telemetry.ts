/**
 * OpenTelemetry spans of a step-flow run, through `npm:@opentelemetry/api`:
 *
 * - `stepflow.run <agent>` — the whole run (or resumed/redriven part of it);
 * - `stepflow.step <stepId>` — one iteration of a step, child of the run span;
 * - `stepflow.backend <kind>` — one backend call (`step`, `check`, `reask`), child of its step span,
 *   and the active span while the call runs (so instrumented `fetch` calls nest under it);
 * - `stepflow.tool <tool>` — one tool call, from the model's request to its result, child of its
 *   step span (the tool loop's calls and those Claude Code runs itself alike).
 *
 * Nothing is created unless a tracer provider is registered — by the application, or by Deno itself
 * when started with `OTEL_DENO=true` — and that is checked once per run, so a run without tracing
 * pays nothing per iteration.
 *
 * @module
 */
import {
  type Attributes,
  type Context,
  context,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type TracerProvider,
} from "@opentelemetry/api";
import { errorMessage, StepflowError } from "../errors.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { ExecutorEvents, RunContext, StepInfo, ToolCallEvent } from "../events/types.ts";
import { supportsToolTurns, type ToolTurnBackend } from "../llm/tool_turn.ts";
import type { LlmBackend, LlmResponse } from "../llm/types.ts";
import type { StepFlowResult } from "./types.ts";

/** The instrumentation scope (tracer name) of stepflow's spans. */
export const TRACER_NAME = "@stepflow/core";

/** The attribute keys stepflow puts on its spans. */
export const SPAN_ATTRIBUTES: Readonly<{
  agent: "stepflow.agent";
  runId: "stepflow.run.id";
  runMode: "stepflow.run.mode";
  stepId: "stepflow.step.id";
  iteration: "stepflow.iteration";
  intent: "stepflow.intent";
  transition: "stepflow.transition";
  nextStepId: "stepflow.next_step.id";
  checkResult: "stepflow.check.result";
  callKind: "stepflow.call.kind";
  completionReason: "stepflow.completion_reason";
  iterations: "stepflow.iterations";
  errorCode: "stepflow.error.code";
  inputTokens: "gen_ai.usage.input_tokens";
  outputTokens: "gen_ai.usage.output_tokens";
  costUsd: "stepflow.cost_usd";
  callsWithoutUsage: "stepflow.usage.calls_without_usage";
  backend: "gen_ai.system";
  model: "gen_ai.request.model";
  toolName: "gen_ai.tool.name";
  toolCallId: "gen_ai.tool.call.id";
  toolDecision: "stepflow.tool.decision";
  toolDecidedBy: "stepflow.tool.decided_by";
  toolIsError: "stepflow.tool.is_error";
  toolDurationMs: "stepflow.tool.duration_ms";
}> = Object.freeze({
  agent: "stepflow.agent",
  runId: "stepflow.run.id",
  runMode: "stepflow.run.mode",
  stepId: "stepflow.step.id",
  iteration: "stepflow.iteration",
  intent: "stepflow.intent",
  transition: "stepflow.transition",
  nextStepId: "stepflow.next_step.id",
  checkResult: "stepflow.check.result",
  callKind: "stepflow.call.kind",
  completionReason: "stepflow.completion_reason",
  iterations: "stepflow.iterations",
  errorCode: "stepflow.error.code",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  costUsd: "stepflow.cost_usd",
  callsWithoutUsage: "stepflow.usage.calls_without_usage",
  backend: "gen_ai.system",
  model: "gen_ai.request.model",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolDecision: "stepflow.tool.decision",
  toolDecidedBy: "stepflow.tool.decided_by",
  toolIsError: "stepflow.tool.is_error",
  toolDurationMs: "stepflow.tool.duration_ms",
});

const A = SPAN_ATTRIBUTES;

/** The provider `@opentelemetry/api` falls back to when nobody registered one. */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/**
 * True when a tracer provider is registered with `@opentelemetry/api` (by the application, or by
 * Deno under `OTEL_DENO=true`), i.e. when spans would go somewhere.
 */
export function tracingEnabled(): boolean {
  let provider: TracerProvider = trace.getTracerProvider();
  if (typeof (provider as Partial<ProxyTracerProvider>).getDelegate === "function") {
    provider = (provider as ProxyTracerProvider).getDelegate();
  }
  return provider !== NOOP_PROVIDER && provider?.constructor?.name !== "NoopTracerProvider";
}

/** The spans of one run, attached to the runner's events. */
export interface FlowTelemetry {
  /** Wraps the backend so each call gets its span. */
  backend(backend: LlmBackend): LlmBackend;
  /** Ends open spans when the run threw instead of ending (its error is recorded). */
  fail(error: unknown): void;
}

/**
 * Starts the spans of one run: subscribes to `events` (removing itself when the run ends) and
 * returns the backend wrapper. Returns undefined — and does nothing — when no tracer provider is
 * registered.
 *
 * @param agent the agent's name
 * @param mode how the run starts: `start`, `resume` or `redrive`
 * @param events the runner's event emitter
 *
 * @example
 * ```ts ignore
 * const telemetry = startFlowTelemetry(def.name, "start", emitter);
 * const backend = telemetry?.backend(rawBackend) ?? rawBackend;
 * ```
 */
// Long because: the handlers of one run's spans share the run's span, context and open step (a
// closure); each handler is a few lines, and splitting them apart would pass that state around.
export function startFlowTelemetry(
  agent: string,
  mode: "start" | "resume" | "redrive",
  events: EventEmitter,
): FlowTelemetry | undefined {
  if (!tracingEnabled()) return undefined;
  const tracer = trace.getTracer(TRACER_NAME);
  let run: Span | undefined;
  let runContext: Context = ROOT_CONTEXT;
  let step: { span: Span; context: Context; input: number; output: number } | undefined;
  let runId = "";
  /** The tool calls in flight, by call id. */
  const tools = new Map<string, Span>();

  const endTools = () => {
    for (const span of tools.values()) span.end();
    tools.clear();
  };
  const endStep = () => {
    endTools();
    step?.span.end();
    step = undefined;
  };
  const handlers: ExecutorEvents = {
    onPlanStart(_plan: unknown, ctx: RunContext) {
      runId = ctx.runId;
      run = tracer.startSpan(`stepflow.run ${agent}`, {
        kind: SpanKind.INTERNAL,
        attributes: { [A.agent]: agent, [A.runId]: runId, [A.runMode]: mode },
      }, context.active());
      runContext = trace.setSpan(context.active(), run);
    },
    onStepStart(info: StepInfo) {
      endStep();
      const span = tracer.startSpan(`stepflow.step ${info.stepId}`, {
        kind: SpanKind.INTERNAL,
        attributes: {
          [A.agent]: agent,
          [A.runId]: runId,
          [A.stepId]: info.stepId,
          [A.iteration]: info.iteration ?? info.order,
        },
      }, runContext);
      step = { span, context: trace.setSpan(runContext, span), input: 0, output: 0 };
    },
    onStepError(_info: StepInfo, error: unknown) {
      if (!step) return;
      recordError(step.span, error);
    },
    onStepEnd(_info: StepInfo, result?: unknown) {
      if (!step) return;
      const r = (result ?? {}) as {
        transition?: string;
        intent?: string;
        nextStepId?: string;
        checkResult?: { result?: string };
      };
      const attributes: Attributes = {
        [A.inputTokens]: step.input,
        [A.outputTokens]: step.output,
      };
      if (r.transition) attributes[A.transition] = r.transition;
      if (r.intent) attributes[A.intent] = r.intent;
      if (r.nextStepId) attributes[A.nextStepId] = r.nextStepId;
      if (r.checkResult?.result) attributes[A.checkResult] = r.checkResult.result;
      step.span.setAttributes(attributes);
      endStep();
    },
    onToolCall(info: StepInfo, call: ToolCallEvent) {
      if (call.phase === "requested") {
        const attributes: Attributes = {
          [A.agent]: agent,
          [A.runId]: runId,
          [A.stepId]: info.stepId,
          [A.iteration]: info.iteration ?? info.order,
          [A.toolName]: call.tool,
          [A.toolCallId]: call.callId,
        };
        tools.get(call.callId)?.end();
        const parent = step?.context ?? runContext;
        const span = tracer.startSpan(`stepflow.tool ${call.tool}`, {
          kind: SpanKind.INTERNAL,
          attributes,
        }, parent);
        tools.set(call.callId, span);
        return;
      }
      const span = tools.get(call.callId);
      if (!span) return;
      if (call.decision) span.setAttribute(A.toolDecision, call.decision);
      if (call.decidedBy) span.setAttribute(A.toolDecidedBy, call.decidedBy);
      if (call.phase !== "finished") return;
      span.setAttributes({
        [A.toolIsError]: call.isError ?? false,
        [A.toolDurationMs]: call.durationMs ?? 0,
      });
      if (call.isError) {
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: (call.result ?? "").split("\n", 1)[0].slice(0, 200),
        });
      }
      span.end();
      tools.delete(call.callId);
    },
    onPlanEnd(_plan: unknown, ctx: RunContext) {
      endStep();
      const result = ctx.result as StepFlowResult | undefined;
      if (run && result) {
        run.setAttributes({
          [A.completionReason]: result.completionReason,
          [A.iterations]: result.iterations,
          [A.inputTokens]: result.usage.inputTokens,
          [A.outputTokens]: result.usage.outputTokens,
          [A.costUsd]: result.usage.costUsd,
          // The token counts are a lower bound when some calls reported no usage.
          [A.callsWithoutUsage]: result.usage.callsWithoutUsage ?? 0,
        });
        if (!result.success) {
          run.setStatus({
            code: SpanStatusCode.ERROR,
            message: result.error?.message ?? result.completionReason,
          });
          if (result.error?.code) run.setAttribute(A.errorCode, result.error.code);
        }
      }
      run?.end();
      run = undefined;
      remove();
    },
  };
  const remove = events.add(handlers);

  return {
    backend(backend: LlmBackend): LlmBackend {
      /** One span per model call (a plain call, or one turn of the tool loop). */
      const traced = <R extends { usage?: LlmResponse["usage"]; costUsd?: number }>(
        request: { kind?: string; stepId: string; iteration: number; model?: string },
        call: () => Promise<R>,
      ): Promise<R> => {
        const parent = step?.context ?? runContext;
        const kind = request.kind ?? "step";
        const attributes: Attributes = {
          [A.agent]: agent,
          [A.runId]: runId,
          [A.stepId]: request.stepId,
          [A.iteration]: request.iteration,
          [A.callKind]: kind,
          [A.backend]: backend.name,
        };
        if (request.model) attributes[A.model] = request.model;
        const span = tracer.startSpan(
          `stepflow.backend ${kind}`,
          { kind: SpanKind.CLIENT, attributes },
          parent,
        );
        const owner = step;
        return context.with(trace.setSpan(parent, span), async () => {
          try {
            const response = await call();
            if (response.usage) {
              span.setAttributes({
                [A.inputTokens]: response.usage.inputTokens,
                [A.outputTokens]: response.usage.outputTokens,
              });
              if (owner) {
                owner.input += response.usage.inputTokens;
                owner.output += response.usage.outputTokens;
              }
            }
            if (response.costUsd) span.setAttribute(A.costUsd, response.costUsd);
            return response;
          } catch (error) {
            recordError(span, error);
            throw error;
          } finally {
            span.end();
          }
        });
      };
      const wrapped: LlmBackend & Partial<ToolTurnBackend> = {
        name: backend.name,
        complete: (request, options) => traced(request, () => backend.complete(request, options)),
        ...(backend.reportsToolCalls ? { reportsToolCalls: true } : {}),
        ...(backend.walksModelChains ? { walksModelChains: true } : {}),
      };
      // A backend that runs tool turns keeps doing so through the wrapper (a span per turn).
      if (supportsToolTurns(backend)) {
        wrapped.toolTurn = (request, options) =>
          traced(request, () => backend.toolTurn(request, options));
      }
      return wrapped;
    },
    fail(error: unknown) {
      endTools();
      if (step) recordError(step.span, error);
      endStep();
      if (run) {
        recordError(run, error);
        run.end();
        run = undefined;
      }
      remove();
    },
  };
}

function recordError(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : new Error(errorMessage(error)));
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
  if (error instanceof StepflowError) span.setAttribute(A.errorCode, error.code);
}
