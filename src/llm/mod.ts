/**
 * LLM backends: the {@linkcode LlmBackend} contract, the scripted backend for tests, the real
 * backends (`claude-code`, `anthropic`, `openai`), the backend factory, and the types their
 * signatures use (retry policy, backend errors, the chat-backend base class's extension points).
 * No SDK is imported here: each real backend loads its SDK on its first call. How an engine asks a
 * backend for structured output, extracts JSON and retries is the engines' business and stays in
 * the files.
 *
 * @module
 */
export type {
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
// The base class of this module's errors.
export { StepflowError } from "../errors.ts";
