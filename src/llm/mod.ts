/**
 * `@stepflow/core/llm`: the LLM backends. The {@linkcode LlmBackend} contract (also in the root
 * entry point), the scripted backend for tests and demos, the replay of a recorded run, the real
 * backends (`claude-code`, `anthropic`, `openai` and any OpenAI-compatible server), the model
 * fallback chain, the backend factory the CLI uses, and the types their options use (retry policy,
 * backend errors, prices, the chat-backend base class's extension points). No SDK is imported here:
 * each real backend loads its SDK on its first call. How an engine asks a backend for structured
 * output and retries is the engines' business and stays in the files.
 *
 * @example Run an agent on scripted answers (no model, no key)
 * ```ts
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 * import { ScriptedBackend } from "jsr:@stepflow/core/llm";
 *
 * const definition = await loadAgentDefinition("haiku");
 * const backend = new ScriptedBackend({
 *   "draft.haiku": ["Red leaves on the path\nthe old gate creaks in the wind\nautumn walks us home"],
 *   "draft.haiku#check": [{ output: { result: "ok", message: "5-7-5" } }],
 * });
 * const result = await new StepFlowRunner(definition, { backend }).run({ args: { topic: "autumn" } });
 * console.log(result.completionReason);
 * ```
 *
 * @example A local OpenAI-compatible server (Ollama, vLLM, llama.cpp)
 * ```ts
 * import { OpenAiBackend } from "jsr:@stepflow/core/llm";
 *
 * const backend = new OpenAiBackend({ baseUrl: "http://127.0.0.1:11434/v1" });
 * console.log(backend.name);
 * ```
 *
 * @module
 */
export type {
  AttemptBound,
  AttemptMeter,
  LlmBackend,
  LlmCallOptions,
  LlmRequest,
  LlmRequestKind,
  LlmResponse,
  LlmUsage,
} from "./types.ts";
export {
  ScriptedBackend,
  type ScriptedEntry,
  type ScriptedEntryObject,
  type ScriptedResponder,
  type ScriptedScript,
  type ScriptedToolCall,
} from "./scripted.ts";
export {
  supportsToolTurns,
  type ToolCallRequest,
  type ToolResultMessage,
  type ToolSpec,
  type ToolTurnBackend,
  type ToolTurnMessage,
  type ToolTurnRequest,
  type ToolTurnResponse,
} from "./tool_turn.ts";
export { loadScriptFile, type ScriptFileOptions } from "./script_file.ts";
export {
  ReplayBackend,
  type ReplayCallRecord,
  type ReplayDrift,
  type ReplayMode,
  type ReplayOptions,
} from "./replay.ts";
export { BACKEND_NAMES, type BackendName, type BackendSpec, createBackend } from "./factory.ts";
export {
  agentBackend,
  type AgentBackendOptions,
  type AgentBehaviorBackend,
  DEFAULT_BACKEND,
} from "./agent_backend.ts";
export {
  type BackendChoice,
  mergeBackendChoice,
  recordableChoice,
  recordedBackendChoice,
  urlWithoutCredentials,
} from "./backend_choice.ts";
export { AnthropicBackend, type AnthropicBackendOptions } from "./anthropic.ts";
export { OpenAiBackend, type OpenAiBackendOptions } from "./openai.ts";
export {
  ClaudeCodeBackend,
  type ClaudeCodeBackendOptions,
  type ClaudePermissionMode,
} from "./claude_code.ts";
export {
  ChatApiBackend,
  type ChatBackendOptions,
  type ChatExchangeRequest,
  type ChatExchangeResult,
  type ModelPricing,
  type StructuredOutputMode,
} from "./chat_backend.ts";
export type { ChatHttpClient } from "./chat_fetch.ts";
export {
  BackendError,
  type BackendErrorCode,
  type BackendErrorDetails,
  type FailureHints,
} from "./backend_error.ts";
export { type ChatTurn, type ConversationLimits, ConversationStore } from "./conversation.ts";
export type {
  FailureClass,
  RetryInfo,
  RetryListener,
  RetryPolicy,
  SdkErrorClasses,
} from "./retry.ts";
export { RateLimitYield } from "./retry.ts";
export { ModelChainBackend, type ModelChainOptions } from "./model_chain.ts";
export { modelChainFor } from "./factory.ts";
export {
  BUILT_IN_PRICES_DATE,
  costOf,
  type FoundPrice,
  type PriceLayer,
  PriceTable,
  readPriceFile,
} from "./pricing.ts";
// The base class of this module's errors.
export { StepflowError } from "../errors.ts";
