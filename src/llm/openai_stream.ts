/**
 * Reads a streamed chat completion (`stream: true`: `chat.completion.chunk` objects, usage in the
 * last one with `stream_options.include_usage`) into the completion the server would have answered
 * without streaming, reporting each piece of text as it arrives.
 *
 * @module
 */
import { readSseEvents } from "./sse_events.ts";
import { streamErrorEvent, streamFailure, StreamInterrupted } from "./stream_failure.ts";

/** A chat completion, as this backend reads it (streamed or not). */
export interface ChatCompletion {
  /** The model that answered, as the server names it. */
  model?: string;
  /** The answers (this backend reads the first). */
  choices?: {
    message?: { content?: string | null; refusal?: string | null; tool_calls?: unknown };
    finish_reason?: string | null;
  }[];
  /** Token counts, when the server reports them. */
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number | null } | null;
  } | null;
}

/** Tool calls one streamed answer may open (as many as a non-streamed answer is read for). */
const MAX_CALLS = 128;

interface OpenCall {
  id?: string;
  name: string;
  /**
   * The arguments' fragments as they came (joined once at the end: a string grown by `+=` is a
   * rope, and every later turn's `JSON.stringify` of the conversation is twice as slow over
   * ropes), or an object a server sent whole.
   */
  arguments: string[] | Record<string, unknown>;
}

/**
 * The completion a stream of chunks spells: the first choice's `delta.content` pieces (each given
 * to `onText`), its `delta.refusal`, its `delta.tool_calls` pieces assembled by `index` (the name
 * and id from the first piece, the `arguments` text from all of them, in order), the finish reason
 * and the usage. A server that sends a call without `index` continues the last call when the piece
 * has no name or id, else opens a new one; calls without an id get one from the tool loop.
 *
 * `body` is the response's server-sent events, read as the official client reads them: `[DONE]`
 * ends them, an event that is not JSON is a broken stream, and an `error` event (or a chunk with
 * an `error`) is the server's failure. Each chunk read touches `idle`.
 *
 * @throws {StreamInterrupted} when the stream ends before a `finish_reason`, carries an error, or
 *   breaks off before it (retried by the retry policy unless the error says the request is
 *   wrong); a stream that breaks off after the finish reason is a whole answer (its usage may be
 *   missing)
 * @throws the abort reason when `signal` fired
 */
export async function readOpenAiStream(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  onText?: (text: string) => void,
  idle?: { touch(): void },
): Promise<ChatCompletion> {
  const answer = new ChunkAssembler(onText);
  try {
    await readSseEvents(body, (event, data) => {
      if (data === "[DONE]") return true;
      if (event === "error") throw streamErrorEvent(errorOf(data), answer.contentChars);
      // An event without data (a bare `event:` line some servers send to keep alive) says nothing.
      if (data === "") return;
      const chunk = parseEventJson(data);
      if (chunk?.error) throw streamErrorEvent(chunk.error, answer.contentChars);
      answer.add(chunk);
    }, idle);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    // Cut after the finish: the answer is whole, only the usage chunk may be lost.
    if (answer.finish === undefined) throw streamFailure(error, answer.contentChars);
  }
  if (signal.aborted) throw signal.reason;
  return answer.completion();
}

/** What an `error` event says: its JSON's `error` (or the whole JSON), else its text. */
function errorOf(data: string): unknown {
  try {
    const body = JSON.parse(data);
    return body !== null && typeof body === "object" && body.error ? body.error : body;
  } catch {
    return data;
  }
}

/** The JSON of an event's data; a `SyntaxError` (not server-sent JSON) when it is not JSON. */
function parseEventJson(data: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new SyntaxError("an event's data is not JSON");
  }
  return value !== null && typeof value === "object" ? value as Record<string, unknown> : undefined;
}

/** The completion being assembled from the chunks of one streamed answer. */
class ChunkAssembler {
  /** The text's pieces, joined once at the end (see {@linkcode OpenCall}'s arguments). */
  readonly content: string[] = [];
  /** Characters of text received. */
  contentChars = 0;
  refusal = "";
  finish: string | undefined;
  usage: ChatCompletion["usage"];
  model: string | undefined;
  readonly calls: OpenCall[] = [];
  readonly byIndex = new Map<number, OpenCall>();
  readonly #onText?: (text: string) => void;

  constructor(onText?: (text: string) => void) {
    this.#onText = onText;
  }

  /** Adds one chunk (`chat.completion.chunk`). */
  add(raw: Record<string, unknown> | undefined): void {
    const chunk = (raw ?? {}) as { choices?: unknown; usage?: unknown; model?: unknown };
    if (typeof chunk.model === "string" && chunk.model) this.model = chunk.model;
    if (chunk.usage && typeof chunk.usage === "object") {
      this.usage = chunk.usage as ChatCompletion["usage"];
    }
    // The first choice (the only one asked for); servers that send no index mean it too.
    const choice = (Array.isArray(chunk.choices) ? chunk.choices : []).find((c) =>
      c !== null && typeof c === "object" &&
      ((c as { index?: unknown }).index ?? 0) === 0
    ) as { delta?: Record<string, unknown>; finish_reason?: unknown } | undefined;
    if (!choice) return;
    const delta = choice.delta ?? {};
    if (typeof delta.content === "string" && delta.content) {
      this.content.push(delta.content);
      this.contentChars += delta.content.length;
      this.#onText?.(delta.content);
    }
    if (typeof delta.refusal === "string") this.refusal += delta.refusal;
    if (Array.isArray(delta.tool_calls)) addCallPieces(delta.tool_calls, this.calls, this.byIndex);
    if (typeof choice.finish_reason === "string" && choice.finish_reason) {
      this.finish = choice.finish_reason;
    }
  }

  /** The completion, once the stream ended. */
  completion(): ChatCompletion {
    if (this.finish === undefined) {
      throw new StreamInterrupted("the stream ended before a finish_reason", {
        receivedChars: this.contentChars,
      });
    }
    const message: NonNullable<ChatCompletion["choices"]>[number]["message"] = {
      content: this.content.join(""),
    };
    if (this.refusal) message.refusal = this.refusal;
    if (this.calls.length) {
      message.tool_calls = this.calls.map((c) => ({
        ...(c.id ? { id: c.id } : {}),
        type: "function",
        function: {
          name: c.name,
          arguments: Array.isArray(c.arguments) ? c.arguments.join("") : c.arguments,
        },
      }));
    }
    return {
      choices: [{ message, finish_reason: this.finish }],
      ...(this.usage ? { usage: this.usage } : {}),
      ...(this.model ? { model: this.model } : {}),
    };
  }
}

/** Adds the `delta.tool_calls` pieces of one chunk to the calls being assembled. */
function addCallPieces(pieces: unknown[], calls: OpenCall[], byIndex: Map<number, OpenCall>): void {
  for (const raw of pieces) {
    const piece = (raw ?? {}) as {
      index?: unknown;
      id?: unknown;
      function?: { name?: unknown; arguments?: unknown };
    };
    const name = typeof piece.function?.name === "string" ? piece.function.name : "";
    const id = typeof piece.id === "string" && piece.id ? piece.id : undefined;
    let call: OpenCall | undefined;
    if (typeof piece.index === "number" && Number.isInteger(piece.index)) {
      call = byIndex.get(piece.index);
      if (!call && calls.length < MAX_CALLS) {
        call = { name: "", arguments: [] };
        byIndex.set(piece.index, call);
        calls.push(call);
      }
    } else {
      const last = calls.at(-1);
      const continues = last && !name && (id === undefined || id === last.id);
      if (continues) call = last;
      else if (calls.length < MAX_CALLS) {
        call = { name: "", arguments: [] };
        calls.push(call);
      }
    }
    if (!call) continue;
    if (id && !call.id) call.id = id;
    // Servers that repeat the name in every piece must not spell it twice.
    if (name && !call.name.endsWith(name)) call.name += name;
    const args = piece.function?.arguments;
    if (typeof args === "string") {
      if (Array.isArray(call.arguments)) call.arguments.push(args);
    } else if (args !== null && typeof args === "object" && !Array.isArray(args)) {
      call.arguments = args as Record<string, unknown>;
    }
  }
}
