/**
 * LLM backends: the interface, the scripted backend, the real backends (`claude-code`,
 * `anthropic`, `openai`), the backend factory, the shared retry policy, and structured-output
 * extraction (the re-ask path that uses it is the engine kit's, `src/engine/`). No SDK is
 * imported here: each real backend loads its SDK on its first call.
 *
 * @module
 */
export * from "./types.ts";
export * from "./scripted.ts";
export * from "./structured_output.ts";
export * from "./script_file.ts";
// -- real backends --
export {
  BACKEND_ENV_VARS,
  BACKEND_NAMES,
  type BackendName,
  type BackendSpec,
  createBackend,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_OPENAI_MODEL,
  OLLAMA_BASE_URL,
} from "./factory.ts";
export {
  AnthropicBackend,
  type AnthropicBackendOptions,
  DEFAULT_ANTHROPIC_MAX_TOKENS,
} from "./anthropic.ts";
export { OPENAI_DEFAULT_BASE_URL, OpenAiBackend, type OpenAiBackendOptions } from "./openai.ts";
export {
  CLAUDE_PERMISSION_MODES,
  ClaudeCodeBackend,
  type ClaudeCodeBackendOptions,
  type ClaudePermissionMode,
  DEFAULT_CLAUDE_CODE_TIMEOUT_MS,
} from "./claude_code.ts";
export {
  ChatApiBackend,
  type ChatBackendOptions,
  type ChatExchangeRequest,
  type ChatExchangeResult,
  DEFAULT_CHAT_TIMEOUT_MS,
  type ModelPricing,
  type StructuredOutputMode,
} from "./chat_backend.ts";
export {
  BackendError,
  type BackendErrorCode,
  type BackendErrorDetails,
  type FailureHints,
} from "./backend_error.ts";
export {
  type ChatTurn,
  type ConversationLimits,
  ConversationStore,
  DEFAULT_CONVERSATION_MAX_CHARS,
} from "./conversation.ts";
export {
  DEFAULT_RETRY_POLICY,
  type FailureClass,
  type HeadersLike,
  isRetryableStatus,
  jitteredBackoff,
  parseRetryAfter,
  resolveRetryPolicy,
  type RetryInfo,
  type RetryListener,
  type RetryPolicy,
  type SdkErrorClasses,
} from "./retry.ts";
