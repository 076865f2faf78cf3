/**
 * Prompt and answer content on spans, only when the user opts in: the GenAI semantic conventions'
 * `gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`,
 * `gen_ai.tool.call.arguments` and `gen_ai.tool.call.result`, written as the JSON text of the
 * conventions' message schemas (spans hold no structured attribute values).
 *
 * The switch is the variable the OpenTelemetry GenAI instrumentations read,
 * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`: `true`, `SPAN_ONLY` or `SPAN_AND_EVENT`
 * (any case) record content on spans; anything else, or nothing, records none.
 *
 * @module
 */
import type { ToolTurnMessage, ToolTurnRequest } from "../llm/tool_turn.ts";
import type { LlmRequest } from "../llm/types.ts";

/** The environment variable that turns content capture on. */
export const CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

const CAPTURE_VALUES = new Set(["true", "span_only", "span_and_event"]);

/** True when `value` (of {@linkcode CAPTURE_CONTENT_ENV}) asks for content on spans. */
export function capturesContent(value: string | undefined): boolean {
  return value !== undefined && CAPTURE_VALUES.has(value.trim().toLowerCase());
}

/** Reads {@linkcode CAPTURE_CONTENT_ENV} from the process (off without permission to read it). */
export function contentCaptureFromEnv(): boolean {
  try {
    return capturesContent(Deno.env.get(CAPTURE_CONTENT_ENV));
  } catch {
    return false;
  }
}

type Part =
  | { type: "text"; content: string }
  | { type: "tool_call"; id: string; name: string; arguments: unknown }
  | { type: "tool_call_response"; id: string; response: string };

interface Message {
  role: "user" | "assistant" | "tool";
  parts: Part[];
}

/** `gen_ai.system_instructions` of a call with a system prompt. */
export function systemInstructions(systemPrompt: string): string {
  return JSON.stringify([{ type: "text", content: systemPrompt }]);
}

/**
 * `gen_ai.input.messages` of a call: the prompt of a plain call, or a tool turn's messages (the
 * prompt, the model's tool calls and their results) in the order they are sent. Turns of earlier
 * steps that the backend carries in its session are not repeated here.
 */
export function inputMessages(request: LlmRequest | ToolTurnRequest): string {
  const messages: Message[] = "messages" in request
    ? request.messages.map(turnMessage)
    : [{ role: "user", parts: [{ type: "text", content: request.prompt }] }];
  return JSON.stringify(messages);
}

function turnMessage(message: ToolTurnMessage): Message {
  switch (message.role) {
    case "user":
      return { role: "user", parts: [{ type: "text", content: message.content }] };
    case "assistant":
      return {
        role: "assistant",
        parts: [
          ...(message.text ? [{ type: "text" as const, content: message.text }] : []),
          ...message.toolCalls.map((c) => ({
            type: "tool_call" as const,
            id: c.id,
            name: c.name,
            arguments: c.arguments,
          })),
        ],
      };
    case "tool":
      return {
        role: "tool",
        parts: message.results.map((r) => ({
          type: "tool_call_response" as const,
          id: r.id,
          response: r.content,
        })),
      };
  }
}

/**
 * The conventions' finish reasons (`stop`, `length`, `content_filter`, `tool_call`) of the
 * providers' own (`end_turn`, `max_tokens`, `tool_calls`, …); a reason of no known meaning stays
 * as the server said it.
 */
const FINISH_REASONS: ReadonlyMap<string, string> = new Map([
  ["stop", "stop"],
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["pause_turn", "stop"],
  ["length", "length"],
  ["max_tokens", "length"],
  ["model_context_window_exceeded", "length"],
  ["content_filter", "content_filter"],
  ["refusal", "content_filter"],
  ["tool_calls", "tool_call"],
  ["function_call", "tool_call"],
  ["tool_use", "tool_call"],
]);

/**
 * `gen_ai.output.messages` of an answer: its text and the tool calls it asked for, with the finish
 * reason (`tool_call` when it asked for tools, `stop` when the server said none).
 */
export function outputMessages(answer: {
  text: string;
  toolCalls?: readonly { id: string; name: string; arguments: unknown }[];
  finishReason?: string;
}): string {
  const calls = answer.toolCalls ?? [];
  const said = answer.finishReason;
  const finish = said !== undefined
    ? FINISH_REASONS.get(said) ?? said
    : calls.length > 0
    ? "tool_call"
    : "stop";
  const parts: Part[] = [
    ...(answer.text ? [{ type: "text" as const, content: answer.text }] : []),
    ...calls.map((c) => ({
      type: "tool_call" as const,
      id: c.id,
      name: c.name,
      arguments: c.arguments,
    })),
  ];
  return JSON.stringify([{ role: "assistant", parts, finish_reason: finish }]);
}

/** `gen_ai.tool.call.arguments`: the arguments as JSON text. */
export function toolArguments(args: Record<string, unknown> | undefined): string {
  return JSON.stringify(args ?? {});
}
