/**
 * The names stepflow's telemetry uses: the OpenTelemetry GenAI semantic conventions (version
 * 1.41.0 — the last release of the semantic-conventions repository that holds them) for what they
 * cover (agent invocations, model calls, tool calls, token and duration metrics), and
 * `stepflow.*` names for stepflow's own facts (run, step, iteration, cost).
 *
 * @module
 */
import { StepflowError } from "../errors.ts";

/** The instrumentation scope (tracer and meter name) of stepflow's spans and metrics. */
export const TRACER_NAME = "@stepflow/core";

/** The version of the OpenTelemetry semantic conventions the names follow. */
export const SEMCONV_VERSION = "1.41.0";

/** The attribute keys stepflow puts on its spans (and, for the `gen_ai.*` ones, its metrics). */
export const SPAN_ATTRIBUTES: Readonly<{
  operation: "gen_ai.operation.name";
  provider: "gen_ai.provider.name";
  agentName: "gen_ai.agent.name";
  agentDescription: "gen_ai.agent.description";
  conversationId: "gen_ai.conversation.id";
  model: "gen_ai.request.model";
  responseModel: "gen_ai.response.model";
  finishReasons: "gen_ai.response.finish_reasons";
  outputType: "gen_ai.output.type";
  inputTokens: "gen_ai.usage.input_tokens";
  outputTokens: "gen_ai.usage.output_tokens";
  cacheReadTokens: "gen_ai.usage.cache_read.input_tokens";
  cacheWriteTokens: "gen_ai.usage.cache_creation.input_tokens";
  tokenType: "gen_ai.token.type";
  toolName: "gen_ai.tool.name";
  toolCallId: "gen_ai.tool.call.id";
  toolType: "gen_ai.tool.type";
  toolArguments: "gen_ai.tool.call.arguments";
  toolResult: "gen_ai.tool.call.result";
  systemInstructions: "gen_ai.system_instructions";
  inputMessages: "gen_ai.input.messages";
  outputMessages: "gen_ai.output.messages";
  errorType: "error.type";
  agent: "stepflow.agent";
  runId: "stepflow.run.id";
  runMode: "stepflow.run.mode";
  parentRunId: "stepflow.parent_run.id";
  stepId: "stepflow.step.id";
  iteration: "stepflow.iteration";
  intent: "stepflow.intent";
  transition: "stepflow.transition";
  nextStepId: "stepflow.next_step.id";
  checkResult: "stepflow.check.result";
  callKind: "stepflow.call.kind";
  backend: "stepflow.backend";
  completionReason: "stepflow.completion_reason";
  iterations: "stepflow.iterations";
  errorCode: "stepflow.error.code";
  costUsd: "stepflow.cost_usd";
  callsWithoutUsage: "stepflow.usage.calls_without_usage";
  toolDecision: "stepflow.tool.decision";
  toolDecidedBy: "stepflow.tool.decided_by";
  toolIsError: "stepflow.tool.is_error";
  toolDurationMs: "stepflow.tool.duration_ms";
}> = Object.freeze({
  operation: "gen_ai.operation.name",
  provider: "gen_ai.provider.name",
  agentName: "gen_ai.agent.name",
  agentDescription: "gen_ai.agent.description",
  conversationId: "gen_ai.conversation.id",
  model: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  finishReasons: "gen_ai.response.finish_reasons",
  outputType: "gen_ai.output.type",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  cacheReadTokens: "gen_ai.usage.cache_read.input_tokens",
  cacheWriteTokens: "gen_ai.usage.cache_creation.input_tokens",
  tokenType: "gen_ai.token.type",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  toolArguments: "gen_ai.tool.call.arguments",
  toolResult: "gen_ai.tool.call.result",
  systemInstructions: "gen_ai.system_instructions",
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  errorType: "error.type",
  agent: "stepflow.agent",
  runId: "stepflow.run.id",
  runMode: "stepflow.run.mode",
  parentRunId: "stepflow.parent_run.id",
  stepId: "stepflow.step.id",
  iteration: "stepflow.iteration",
  intent: "stepflow.intent",
  transition: "stepflow.transition",
  nextStepId: "stepflow.next_step.id",
  checkResult: "stepflow.check.result",
  callKind: "stepflow.call.kind",
  backend: "stepflow.backend",
  completionReason: "stepflow.completion_reason",
  iterations: "stepflow.iterations",
  errorCode: "stepflow.error.code",
  costUsd: "stepflow.cost_usd",
  callsWithoutUsage: "stepflow.usage.calls_without_usage",
  toolDecision: "stepflow.tool.decision",
  toolDecidedBy: "stepflow.tool.decided_by",
  toolIsError: "stepflow.tool.is_error",
  toolDurationMs: "stepflow.tool.duration_ms",
});

/** The GenAI client metrics stepflow records, with their units and bucket boundaries. */
export const GENAI_METRICS = {
  tokenUsage: {
    name: "gen_ai.client.token.usage",
    unit: "{token}",
    description: "Number of input and output tokens used.",
    buckets: [
      1,
      4,
      16,
      64,
      256,
      1024,
      4096,
      16384,
      65536,
      262144,
      1048576,
      4194304,
      16777216,
      67108864,
    ],
  },
  operationDuration: {
    name: "gen_ai.client.operation.duration",
    unit: "s",
    description: "GenAI operation duration.",
    buckets: [
      0.01,
      0.02,
      0.04,
      0.08,
      0.16,
      0.32,
      0.64,
      1.28,
      2.56,
      5.12,
      10.24,
      20.48,
      40.96,
      81.92,
    ],
  },
} as const;

/** How a backend's calls are named: the provider and the GenAI operation of one call. */
export interface BackendFlavour {
  /** `gen_ai.provider.name`. */
  provider: string;
  /** `gen_ai.operation.name` of one call: `chat`, or `invoke_agent` for a backend that is an agent. */
  operation: "chat" | "invoke_agent";
}

/**
 * The provider of each built-in backend, by the well-known values of `gen_ai.provider.name`:
 * `openai` for the OpenAI API and servers that speak it (the value names the API's telemetry
 * flavour, and `gen_ai.request.model` / `server` facts tell which server answered), `anthropic`
 * for the Messages API and for Claude Code (an agent of its own: its calls are `invoke_agent`).
 */
const BACKEND_FLAVOURS: ReadonlyMap<string, BackendFlavour> = new Map([
  ["openai", { provider: "openai", operation: "chat" }],
  ["anthropic", { provider: "anthropic", operation: "chat" }],
  ["claude-code", { provider: "anthropic", operation: "invoke_agent" }],
]);

/**
 * The provider and operation of a backend's calls; a backend of no known provider (`scripted`, a
 * replay, one of the application's) is its own provider, under its name.
 */
export function backendFlavour(backendName: string): BackendFlavour {
  return BACKEND_FLAVOURS.get(backendName) ?? { provider: backendName, operation: "chat" };
}

/** `error.type` of a tool call the model got an error for: refused, invalid, or failed. */
export function toolErrorType(call: { decision?: string }): string {
  if (call.decision === "deny") return "permission_denied";
  if (call.decision === "invalid") return "invalid_call";
  return "tool_error";
}

/**
 * `error.type` of a failure: a stepflow error's stable code (docs/errors.md lists them), else the
 * error's class name, else `_OTHER` — a low-cardinality value, never the message.
 */
export function errorType(error: unknown): string {
  if (error instanceof StepflowError) return error.code;
  if (error instanceof Error && error.name) return error.name;
  return "_OTHER";
}
