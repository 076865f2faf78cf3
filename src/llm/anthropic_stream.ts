/**
 * Reads a streamed Messages API answer (`stream: true`: `message_start`, `content_block_start`,
 * `content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`) into the message
 * the API would have answered without streaming, reporting each piece of text as it arrives.
 *
 * @module
 */
import { readSseEvents } from "./sse_events.ts";
import { streamErrorEvent, streamFailure, StreamInterrupted } from "./stream_failure.ts";

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
  /** The text's pieces, joined once at the end: a string grown by `+=` is a rope, slower to serialise on every later turn. */
  text: string[];
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
 * `body` is the response's server-sent events, read as the official client reads them: `ping`
 * and unnamed events are skipped, an `error` event is the server's failure, and data that is not
 * JSON is a broken stream. Each chunk read touches `idle`.
 *
 * @throws {StreamInterrupted} when the stream ends before `message_stop`, carries an `error`
 *   event, or breaks off before `message_delta` gave the stop reason (retried by the retry policy
 *   unless the error says the request is wrong)
 * @throws the abort reason when `signal` fired
 */
export async function readAnthropicStream(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  onText?: (text: string) => void,
  idle?: { touch(): void },
): Promise<AnthropicMessage> {
  const answer = new EventAssembler(onText);
  try {
    await readSseEvents(body, (name, data) => {
      if (name === undefined || name === "ping") return;
      if (name === "error") {
        throw streamErrorEvent(parsedOrText(data), answer.received);
      }
      if (!data) return;
      let event: unknown;
      try {
        event = JSON.parse(data);
      } catch {
        throw new SyntaxError(`the data of a "${name.slice(0, 40)}" event is not JSON`);
      }
      // Nothing the server sends after message_stop belongs to the answer.
      return answer.add(event);
    }, idle);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    // Cut after message_delta gave the stop reason: the answer is whole.
    if (answer.message.stop_reason === undefined) throw streamFailure(error, answer.received);
    answer.stopped = true;
  }
  if (signal.aborted) throw signal.reason;
  if (!answer.stopped) {
    throw new StreamInterrupted("the stream ended before message_stop", {
      receivedChars: answer.received,
    });
  }
  const message = answer.message;
  message.content = [...answer.blocks.entries()].sort(([a], [b]) => a - b).map(([, b]) =>
    blockOf(b)
  );
  return message;
}

/** An `error` event's data: its JSON, or its text when it is not JSON. */
function parsedOrText(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

/** The message being assembled from the events of one streamed answer. */
class EventAssembler {
  readonly message: AnthropicMessage = {};
  readonly blocks = new Map<number, OpenBlock>();
  /** Characters of text received. */
  received = 0;
  /** `message_stop` came. */
  stopped = false;
  readonly #onText?: (text: string) => void;

  constructor(onText?: (text: string) => void) {
    this.#onText = onText;
  }

  /** Adds one event; true once it was `message_stop`. */
  add(raw: unknown): boolean {
    const event = (raw ?? {}) as Record<string, unknown>;
    const message = this.message;
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
        if (!Number.isInteger(index) || this.blocks.size >= MAX_BLOCKS) break;
        const open: OpenBlock = {
          type: String(block.type),
          text: typeof block.text === "string" && block.text ? [block.text] : [],
          json: "",
        };
        if (block.type === "tool_use") {
          open.id = block.id;
          open.name = block.name;
          open.input = block.input;
        }
        this.blocks.set(index, open);
        if (open.text.length > 0) {
          this.received += open.text[0].length;
          this.#onText?.(open.text[0]);
        }
        break;
      }
      case "content_block_delta": {
        const open = this.blocks.get(Number(event.index));
        const delta = (event.delta ?? {}) as Record<string, unknown>;
        if (!open) break;
        if (delta.type === "text_delta" && typeof delta.text === "string") {
          open.text.push(delta.text);
          this.received += delta.text.length;
          if (delta.text) this.#onText?.(delta.text);
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
        this.stopped = true;
        return true;
    }
    return false;
  }
}

/** A finished block as the API would have sent it without streaming. */
function blockOf(open: OpenBlock): NonNullable<AnthropicMessage["content"]>[number] {
  if (open.type !== "tool_use") return { type: open.type, text: open.text.join("") };
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
