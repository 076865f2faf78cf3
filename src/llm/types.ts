/**
 * The small interface every LLM backend implements (docs/backends.md). The core only ever talks to
 * this interface; real SDKs live in adapters that are imported lazily.
 *
 * @module
 */
import type { ModelChainEntry } from "../definition/schema.ts";
import type { ModelFallbackEvent, ToolCallEvent } from "../events/types.ts";
import type { RetryInfo } from "./retry.ts";

/** Why the backend is being called. */
export type LlmRequestKind = "step" | "check" | "reask";

/** One call to a backend. */
export interface LlmRequest {
  /** `step` runs a step prompt, `check` runs a check prompt, `reask` repeats a call after invalid output. */
  kind: LlmRequestKind;
  /** The agent's name (or the executor's name for non-agent callers such as `plan`). */
  agent: string;
  /** The step being executed. */
  stepId: string;
  /** 1-based iteration of the run. */
  iteration: number;
  /** System prompt, when the agent has one. */
  systemPrompt?: string;
  /** The fully resolved user prompt. */
  prompt: string;
  /** JSON Schema the answer must match; backends that support it should request native structured output. */
  outputSchema?: Record<string, unknown>;
  /** Model override for this call (with `modelChain`: its first entry's model). */
  model?: string;
  /**
   * The call's model chain when the step or agent gives one (agent.json `model` as an array): the
   * entries tried in order, each on a documented failure of the one before (docs/backends.md,
   * "Model fallback chains"). The runner walks it through a `ModelChainBackend`; a backend that
   * gets it directly reads `model` only.
   */
  modelChain?: ModelChainEntry[];
  /** Tools the model may use (agentic backends). */
  allowedTools?: string[];
  /** Tool rules that are refused whatever else allows them (`Bash(rm:*)`, `mcp__db`). */
  disallowedTools?: string[];
  /** Permission mode (agentic backends). */
  permissionMode?: string;
  /** MCP servers whose tools the call may use (agent.json `behavior.mcpServers`, unparsed). */
  mcpServers?: Record<string, unknown>;
  /** Working directory of the run. */
  cwd: string;
  /** Conversation/session id to continue, when the backend returned one earlier in the run. */
  sessionId?: string;
}

/** Token usage of one call. */
export interface LlmUsage {
  /** Prompt tokens, all of them: those read from or written to the prompt cache included. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Of `inputTokens`, those read from the server's prompt cache (cheaper), when reported. */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the server's prompt cache (dearer), when reported. */
  cacheWriteTokens?: number;
}

/** The answer of one call. */
export interface LlmResponse {
  /** The raw text of the answer. */
  text: string;
  /**
   * The API's native structured output, when it returns one apart from the text (Claude Code's
   * `structured_output`). A backend never parses JSON out of its text: the engine reads an answer's
   * JSON in one place (`readJsonAnswer`: this field, else the JSON in `text`).
   */
  structuredOutput?: unknown;
  /** Session id to pass back on the next call to continue the conversation. */
  sessionId?: string;
  /**
   * Token usage, when the backend (or its server) reported it. Leave it out rather than sending
   * zeros: the runner counts a call without usage as unknown (`callsWithoutUsage`), never as 0 tokens.
   */
  usage?: LlmUsage;
  /** Cost in US dollars, when the backend knows it. */
  costUsd?: number;
  /**
   * The model the server says answered (OpenAI's `model`, Anthropic's `message.model`: often a
   * dated name, `gpt-4o-2024-08-06` for `gpt-4o`), when it says. Telemetry reports it as
   * `gen_ai.response.model`.
   */
  responseModel?: string;
  /** Why the answer ended, as the server said it (`stop`, `end_turn`, `length`, `tool_calls`, …). */
  finishReason?: string;
  /**
   * The model that answered, when a model chain chose it (`ModelChainBackend`); otherwise the
   * request's model (or the backend's) answered.
   */
  model?: string;
  /** The backend that answered, when a model chain chose it. */
  backend?: string;
  /** The fall-throughs of the model chain before this answer, in order (absent: none). */
  fallbacks?: ModelFallbackEvent[];
}

/** Per-call options. */
export interface LlmCallOptions {
  /** Cancels the call. Backends must reject promptly with an `AbortError` when it fires. */
  signal?: AbortSignal;
  /**
   * Called before the backend retries a failed attempt of this call (HTTP 429/5xx, network errors).
   * The runner forwards it as an `onStepRetry` event, so every retry is visible.
   */
  onRetry?: (info: RetryInfo) => void;
  /**
   * Called with each piece of the model's text as it arrives, on backends that stream. The pieces
   * are what the answer's `text` is made of; a retried attempt starts its text again, and the
   * retry is reported to `onRetry` before its first piece (a display clears what it showed). The
   * `anthropic` and `openai` backends stream unless their `stream` option is false.
   */
  onText?: (text: string) => void;
  /**
   * Called as each tool call the backend runs itself moves on — `requested`, `decided`,
   * `finished`, in that order — on backends that run their own tools (`claude-code`: Claude Code
   * decides and runs them). Calls of stepflow's tool loop are reported by the loop, not here.
   */
  onToolCallEvent?: (event: ToolCallEvent) => void | Promise<void>;
  /**
   * Called when the call falls through to the next entry of its model chain (before that entry is
   * asked). The runner forwards it as an `onModelFallback` event and a `model_fallback` log line.
   */
  onFallback?: (fallback: ModelFallbackEvent) => void;
  /**
   * A wait the server asks for (its `Retry-After` or rate-limit reset) that is at least this long
   * (ms) is not slept in the call: the call ends with `RateLimitYield` so that its run can give
   * its slot back and continue at the reset (a worker's runs). Unset: such waits are slept.
   */
  yieldWaitsFromMs?: number;
}

/**
 * An LLM backend.
 *
 * @example
 * ```ts
 * import type { LlmBackend } from "./types.ts";
 * const echo: LlmBackend = {
 *   name: "echo",
 *   complete: (req) => Promise.resolve({ text: req.prompt }),
 * };
 * ```
 */
export interface LlmBackend {
  /** Short name used in logs and errors (`scripted`, `anthropic`, …). */
  readonly name: string;
  /** Runs one call. */
  complete(req: LlmRequest, opts?: LlmCallOptions): Promise<LlmResponse>;
  /**
   * True on a backend that runs its own tools and reports every call it makes through
   * `LlmCallOptions.onToolCallEvent` (`claude-code`), so a run on it knows which tools ran.
   */
  readonly reportsToolCalls?: boolean;
  /**
   * True on a backend that walks `LlmRequest.modelChain` itself (`ModelChainBackend`, and wrappers
   * that forward to one); the runner wraps any other backend in a `ModelChainBackend` for a call
   * that has a chain.
   */
  readonly walksModelChains?: boolean;
}
