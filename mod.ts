/**
 * stepflow — run LLM agents as declarative step flows.
 *
 * This entry point holds what a program that runs agents needs: loading and checking agent
 * definitions, the runner and its options and result, the LLM backends (scripted for tests, the
 * real ones, and the contract to write your own), the event handlers' vocabulary, the run stores,
 * and the error classes. Tool plans, PlanSpec, QPlan, the CLIs and the workers have their own
 * entry points (`@stepflow/core/plan`, `/planspec`, `/qplan`, `/cli`, `/worker`).
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 *
 * const definition = await loadAgentDefinition("code-improver");
 * const runner = new StepFlowRunner(definition);
 * const result = await runner.run({ args: { topic: "Refactoring authentication module" }, cwd: Deno.cwd() });
 * console.log(result.success, result.finalStepId, result.completionReason);
 * ```
 *
 * @module
 */

// Errors: the base class with its stable `code` (one of the listed codes), and the helper that
// prints any thrown value.
export {
  errorMessage,
  type KnownCode,
  StepflowError,
  type StepflowErrorCode,
  UsageError,
} from "./src/errors.ts";
export { ERROR_CODES, type ErrorCodeOf, type ErrorModule } from "./src/error_codes.ts";

// Agent definitions: load, list, check, draw; the file formats and the loaded form.
export {
  type AgentConfig,
  type AgentDefinition,
  AgentDefinitionError,
  type AgentLimits,
  AgentNotFoundError,
  type AgentSummary,
  type C3lPromptRef,
  type C3lRef,
  type CheckDefinition,
  type CommandSpec,
  type CompletionCondition,
  type ErrorPolicy,
  type FlowGraphSource,
  type FlowStep,
  flowToMermaid,
  type FlowValidationInput,
  type FlowValidationOptions,
  type FlowValidationResult,
  GATE_INTENTS,
  type GateIntent,
  generateSchemas,
  type ItemErrorPolicy,
  JsonParseError,
  listAgents,
  loadAgentDefinition,
  type LoadAgentOptions,
  type ModelChainEntry,
  type ModelOnBackend,
  type ModelSetting,
  type OnErrorValue,
  type OnFail,
  type OnPass,
  type OutputSchemaRef,
  type ParameterDefinition,
  type PathPromptRef,
  type PathRef,
  type PromptRef,
  type PromptReference,
  SchemaResolutionError,
  type StepDefinition,
  type StepKind,
  type StepsRegistry,
  type StepValidation,
  type StepValidator,
  type StructuredGate,
  validateFlow,
  type WaitTimeout,
} from "./src/definition/mod.ts";

// Prompts: the errors a missing or unsafe prompt raises.
export { MissingVariablesError, PromptNotFoundError, PromptPathError } from "./src/prompt/mod.ts";

// The runner.
export {
  type AnswerOptions,
  type ChildRunLink,
  type CompletionReason,
  DEFAULT_MAX_AGENT_DEPTH,
  type FanOutMark,
  type HistoryEntry,
  type InStepMarker,
  MAX_HISTORY_TOOL_CALLS,
  metricsEnabled,
  type ParentRunLink,
  type PendingInput,
  type PermissionAnswer,
  type PermissionAsk,
  type PermissionGrant,
  type PermissionReply,
  type PermissionRequest,
  type RecordedAnswer,
  type RerunUnfinishedCallCheck,
  type RunHandle,
  type RunnerState,
  type RunOptions,
  type RunPermissionAsk,
  type RunUsage,
  SEMCONV_VERSION,
  SPAN_ATTRIBUTES,
  type StepFlowResult,
  StepFlowRunner,
  type StepFlowRunnerOptions,
  type ToolCallSummary,
  TRACER_NAME,
  tracingEnabled,
  type Transition,
} from "./src/flow/mod.ts";
// The paths a tool call reaches (in a permission ask).
export type { ReachedPath } from "./src/flow/mod.ts";

// LLM backends: the contract, the scripted backend, the real backends and the factory.
export {
  agentBackend,
  type AgentBackendOptions,
  type AgentBehaviorBackend,
  AnthropicBackend,
  type AnthropicBackendOptions,
  BACKEND_NAMES,
  type BackendChoice,
  BackendError,
  type BackendErrorCode,
  type BackendErrorDetails,
  type BackendName,
  type BackendSpec,
  ChatApiBackend,
  type ChatBackendOptions,
  type ChatExchangeRequest,
  type ChatExchangeResult,
  type ChatTurn,
  ClaudeCodeBackend,
  type ClaudeCodeBackendOptions,
  type ClaudePermissionMode,
  type ConversationLimits,
  ConversationStore,
  createBackend,
  DEFAULT_BACKEND,
  type FailureClass,
  type FailureHints,
  type LlmBackend,
  type LlmCallOptions,
  type LlmRequest,
  type LlmRequestKind,
  type LlmResponse,
  type LlmUsage,
  loadScriptFile,
  ModelChainBackend,
  modelChainFor,
  type ModelChainOptions,
  type ModelPricing,
  OpenAiBackend,
  type OpenAiBackendOptions,
  RateLimitYield,
  recordedBackendChoice,
  ReplayBackend,
  type ReplayCallRecord,
  type ReplayDrift,
  type ReplayMode,
  type ReplayOptions,
  type RetryInfo,
  type RetryListener,
  type RetryPolicy,
  ScriptedBackend,
  type ScriptedEntry,
  type ScriptedEntryObject,
  type ScriptedResponder,
  type ScriptedScript,
  type ScriptFileOptions,
  type SdkErrorClasses,
  type StructuredOutputMode,
} from "./src/llm/mod.ts";

// Reading an answer: backends return text (and an API's native structured output); the engine reads
// the JSON in it in one place, and so can a program that calls a backend itself.
export {
  type AnswerReading,
  type AnswerRejection,
  MAX_OUTPUT_DEPTH,
  readJsonAnswer,
} from "./src/engine/ask_structured.ts";

// Events: what a handler passed as `events` receives.
export {
  EVENT_NAMES,
  type EventName,
  type ExecutorEvents,
  type FallbackReason,
  type FanOutReport,
  type ModelFallbackEvent,
  type ModelRef,
  type RateLimitWaitEvent,
  type RunContext,
  type RunState,
  type StepInfo,
  type StepLogLevel,
  type ToolCallEvent,
} from "./src/events/mod.ts";

// Run stores: the contract, the three stores, choosing one, and printing recorded runs.
export {
  type AgentLoggingSource,
  type AgentStoreSource,
  type Durability,
  FileRunStore,
  type FileRunStoreOptions,
  type FormatOptions,
  formatRunHistory,
  formatRunList,
  type HistoryFormatOptions,
  MemoryRunStore,
  type PgConnectionOptions,
  PostgresRunStore,
  type PostgresRunStoreOptions,
  readLogFrom,
  RUN_STATUS_KINDS,
  RUN_STATUSES,
  type RunCheckpoint,
  type RunFiles,
  type RunLock,
  type RunLogEntry,
  type RunStatus,
  type RunStore,
  runStoreDirFor,
  runStoreFor,
  type RunSummary,
  selectRunStore,
  type SelectRunStoreOptions,
  SHOWN_STATUSES,
  type ShownStatus,
  shownStatus,
} from "./src/store/mod.ts";
