/**
 * The narrow contract between the one tool loop (`src/engine/tool_loop.ts`) and the backends that
 * can call tools (`anthropic`, `openai`, `scripted`): one model turn that may ask for tool calls.
 * The loop owns the conversation of a step's tool calls; a backend only translates these neutral
 * messages to its wire format (tool_use/tool_result blocks, tool_calls/role `tool`) and back.
 *
 * @module
 */
import type { ModelChainEntry } from "../definition/schema.ts";
import type { ModelFallbackEvent } from "../events/types.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmRequestKind, LlmUsage } from "./types.ts";

/** A tool as offered to the model. */
export interface ToolSpec {
  /** The tool's name (`Read`, `mcp__github__create_issue`). */
  name: string;
  /** What it does. */
  description: string;
  /** JSON Schema of its arguments (an object schema). */
  inputSchema: Record<string, unknown>;
}

/** A tool call the model asked for, as received: untrusted. */
export interface ToolCallRequest {
  /** The call's id (a backend makes one up when the server sends none). */
  id: string;
  /** The tool's name, as the model wrote it. */
  name: string;
  /** The arguments: an object, or the raw text when the server sent a string (not parsed yet). */
  arguments: unknown;
}

/** The result of one call, as sent back to the model. */
export interface ToolResultMessage {
  /** The call's id. */
  id: string;
  /** The tool's name. */
  name: string;
  /** The result text, or the error the model can act on. */
  content: string;
  /** True when the call failed or was refused. */
  isError: boolean;
}

/** One message of a step's tool conversation. */
export type ToolTurnMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; text: string; toolCalls: ToolCallRequest[] }
  | { role: "tool"; results: ToolResultMessage[] };

/** One turn: the conversation so far and the tools on offer. */
export interface ToolTurnRequest {
  /** Why the model is called (a step, its check, a re-ask); default `step`. */
  kind?: LlmRequestKind;
  /** The agent (logs, scripts). */
  agent?: string;
  /** The run's working folder. */
  cwd?: string;
  /** The step (logs, errors). */
  stepId: string;
  /** 1-based iteration of the run. */
  iteration: number;
  /** Model override. */
  model?: string;
  /** The call's model chain (see `LlmRequest.modelChain`). */
  modelChain?: ModelChainEntry[];
  /** System prompt. */
  systemPrompt?: string;
  /** The run's conversation to continue (its earlier steps' turns come first). */
  sessionId?: string;
  /** This step's messages: the user prompt first, then assistant turns and tool results. */
  messages: ToolTurnMessage[];
  /** The tools offered. */
  tools: ToolSpec[];
  /** JSON Schema the final answer must match (asked natively where the backend can). */
  outputSchema?: Record<string, unknown>;
}

/** What one turn returned. */
export interface ToolTurnResponse {
  /** The model's text in this turn (the final answer when it asks for no tool). */
  text: string;
  /** The calls it asked for (empty: this is the final answer). */
  toolCalls: ToolCallRequest[];
  /** A final answer's structured output, when the backend has it natively (else it is read from `text`). */
  structuredOutput?: unknown;
  /** The conversation's id, to continue it. */
  sessionId?: string;
  /** Token usage of this turn, when reported. */
  usage?: LlmUsage;
  /** Cost of this turn, when known. */
  costUsd?: number;
  /** The model the server says answered (see `LlmResponse.responseModel`). */
  responseModel?: string;
  /** Why the turn ended, as the server said it (see `LlmResponse.finishReason`). */
  finishReason?: string;
  /** The model that answered, when a model chain chose it. */
  model?: string;
  /** The backend that answered, when a model chain chose it. */
  backend?: string;
  /** The model chain's fall-throughs before this turn's answer. */
  fallbacks?: ModelFallbackEvent[];
}

/** A backend that can run tool turns. */
export interface ToolTurnBackend {
  /** The backend's name. */
  readonly name: string;
  /**
   * Runs one turn. When the model asks for no tool, the turn's user prompt and final text join
   * the session's conversation (tool calls in between are not kept there).
   */
  toolTurn(request: ToolTurnRequest, options?: LlmCallOptions): Promise<ToolTurnResponse>;
}

/** True when `backend` runs tool turns itself through the one tool loop. */
export function supportsToolTurns(backend: LlmBackend): backend is LlmBackend & ToolTurnBackend {
  return typeof (backend as Partial<ToolTurnBackend>).toolTurn === "function";
}

/** An id for a call the server sent without one. */
export function generatedCallId(): string {
  return `call_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/**
 * A tool turn as the plain request of its call: the step's prompt (the turn's first user message),
 * the system prompt, model, session and schema — what a scripted or replayed backend keys and
 * checks its answers by.
 *
 * @example
 * ```ts
 * import { turnAsRequest } from "./tool_turn.ts";
 * turnAsRequest({ stepId: "s1", iteration: 1, messages: [{ role: "user", content: "Hi" }], tools: [] })
 *   .prompt; // "Hi"
 * ```
 */
export function turnAsRequest(req: ToolTurnRequest): LlmRequest {
  const first = req.messages[0];
  const request: LlmRequest = {
    kind: req.kind ?? "step",
    agent: req.agent ?? "",
    stepId: req.stepId,
    iteration: req.iteration,
    prompt: first?.role === "user" ? first.content : "",
    cwd: req.cwd ?? ".",
  };
  if (req.systemPrompt !== undefined) request.systemPrompt = req.systemPrompt;
  if (req.model !== undefined) request.model = req.model;
  if (req.modelChain !== undefined) request.modelChain = req.modelChain;
  if (req.sessionId !== undefined) request.sessionId = req.sessionId;
  if (req.outputSchema !== undefined) request.outputSchema = req.outputSchema;
  return request;
}
