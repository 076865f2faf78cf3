/**
 * Reads a streamed Messages API answer (`stream: true`: `message_start`, `content_block_start`,
 * `content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`) into the message
 * the API would have answered without streaming, reporting each piece of text as it arrives.
 *
 * @module
 */
import { streamFailure, StreamInterrupted } from "./stream_failure.ts";

/** A Messages API answer, as this backend reads it (streamed or not). */
export interface AnthropicMessage {
  /** The model that answered, as the server names it. */
  model?: string;
  /** The content blocks: text and tool calls (a streamed call's `input` is its JSON text). */
  content?: { type: string; text?: string; id?: unknown; name?: unknown; input?: unknown }[];
  /** Why the answer ended (`end_turn`, `tool_use`, `max_tokens`, `refusal`). */
  stop_reason?: string | null;
  /** A refusal's category and explanation. */
  stop_details?: { category?: string | null; explanation?: string | null } | null;
  /** Token counts. */
  usage?: {
    input_tokens?: number | null;
    output_tokens?: number | null;
    cache_creation_input_tokens?: number | null;
    cache_read_input_tokens?: number | null;
  };
}

/** Content blocks one streamed answer may open; more is not an answer but a runaway server. */
const MAX_BLOCKS = 256;

interface OpenBlock {
  type: string;
  text: string;
  id?: unknown;
  name?: unknown;
  /** A tool call's input as the `input_json_delta` fragments spelled it. */
  json: string;
  /** A tool call's input given whole in `content_block_start` (no fragments followed). */
  input?: unknown;
}

/**
 * The message a stream of Messages API events spells. Each `text_delta` is given to `onText` as
 * it arrives. A tool call's input is parsed from its `input_json_delta` fragments once the stream
 * ended; input that is not JSON is kept as its text, so that the tool loop tells the model its
 * arguments were not JSON rather than the call failing.
 *
 * @throws {StreamInterrupted} when the stream ends before `message_stop`, carries an `error`
 *   event, or breaks off before `message_delta` gave the stop reason (retried by the retry policy
 *   unless the error says the request is wrong)
 * @throws the abort reason when `signal` fired (the SDK ends its iteration quietly on an abort)
 */
export async function readAnthropicStream(
  events: AsyncIterable<unknown>,
  signal: AbortSignal,
  onText?: (text: string) => void,
): Promise<AnthropicMessage> {
  const message: AnthropicMessage = {};
  const blocks = new Map<number, OpenBlock>();
  let received = 0;
  let stopped = false;
  try {
    for await (const raw of events) {
      const event = (raw ?? {}) as Record<string, unknown>;
      switch (event.type) {
        case "message_start": {
          const start = (event.message ?? {}) as AnthropicMessage;
          if (start.usage) message.usage = { ...start.usage };
          if (typeof start.model === "string" && start.model) message.model = start.model;
          break;
        }
        case "content_block_start": {
          const index = Number(event.index);
          const block = (event.content_block ?? {}) as Record<string, unknown>;
          if (!Number.isInteger(index) || blocks.size >= MAX_BLOCKS) break;
          const open: OpenBlock = {
            type: String(block.type),
            text: typeof block.text === "string" ? block.text : "",
            json: "",
          };
          if (block.type === "tool_use") {
            open.id = block.id;
            open.name = block.name;
            open.input = block.input;
          }
          blocks.set(index, open);
          if (open.text) {
            received += open.text.length;
            onText?.(open.text);
          }
          break;
        }
        case "content_block_delta": {
          const open = blocks.get(Number(event.index));
          const delta = (event.delta ?? {}) as Record<string, unknown>;
          if (!open) break;
          if (delta.type === "text_delta" && typeof delta.text === "string") {
            open.text += delta.text;
            received += delta.text.length;
            if (delta.text) onText?.(delta.text);
          } else if (delta.type === "input_json_delta" && typeof delta.partial_json === "string") {
            open.json += delta.partial_json;
          }
          break;
        }
        case "message_delta": {
          const delta = (event.delta ?? {}) as Record<string, unknown>;
          if (typeof delta.stop_reason === "string") message.stop_reason = delta.stop_reason;
          if (delta.stop_details && typeof delta.stop_details === "object") {
            message.stop_details = delta.stop_details as AnthropicMessage["stop_details"];
          }
          // The counts of message_delta are cumulative: they replace those of message_start.
          const usage = event.usage as AnthropicMessage["usage"] | undefined;
          if (usage && typeof usage === "object") {
            message.usage = { ...message.usage };
            for (const [key, value] of Object.entries(usage)) {
              if (typeof value === "number") {
                (message.usage as Record<string, number>)[key] = value;
              }
            }
          }
          break;
        }
        case "message_stop":
          stopped = true;
          break;
      }
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    // Cut after message_delta gave the stop reason: the answer is whole.
    if (message.stop_reason === undefined) throw streamFailure(error, received);
    stopped = true;
  }
  if (signal.aborted) throw signal.reason;
  if (!stopped) {
    throw new StreamInterrupted("the stream ended before message_stop", {
      receivedChars: received,
    });
  }
  message.content = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) => blockOf(b));
  return message;
}

/** A finished block as the API would have sent it without streaming. */
function blockOf(open: OpenBlock): NonNullable<AnthropicMessage["content"]>[number] {
  if (open.type !== "tool_use") return { type: open.type, text: open.text };
  return { type: "tool_use", id: open.id, name: open.name, input: toolInput(open) };
}

/** The input of a tool call: its fragments parsed, their text when they are not JSON. */
function toolInput(open: OpenBlock): unknown {
  if (open.json.trim() === "") return open.input ?? {};
  try {
    return JSON.parse(open.json);
  } catch {
    return open.json;
  }
}
