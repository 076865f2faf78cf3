/**
 * Reads a streamed chat completion (`stream: true`: `chat.completion.chunk` objects, usage in the
 * last one with `stream_options.include_usage`) into the completion the server would have answered
 * without streaming, reporting each piece of text as it arrives.
 *
 * @module
 */
import { streamFailure, StreamInterrupted } from "./stream_failure.ts";

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
  /** The arguments as their fragments spelled them, or an object a server sent whole. */
  arguments: string | Record<string, unknown>;
}

/**
 * The completion a stream of chunks spells: the first choice's `delta.content` pieces (each given
 * to `onText`), its `delta.refusal`, its `delta.tool_calls` pieces assembled by `index` (the name
 * and id from the first piece, the `arguments` text from all of them, in order), the finish reason
 * and the usage. A server that sends a call without `index` continues the last call when the piece
 * has no name or id, else opens a new one; calls without an id get one from the tool loop.
 *
 * @throws {StreamInterrupted} when the stream ends before a `finish_reason`, carries an error, or
 *   breaks off before it (retried by the retry policy unless the error says the request is
 *   wrong); a stream that breaks off after the finish reason is a whole answer (its usage may be
 *   missing)
 * @throws the abort reason when `signal` fired (the SDK ends its iteration quietly on an abort)
 */
export async function readOpenAiStream(
  chunks: AsyncIterable<unknown>,
  signal: AbortSignal,
  onText?: (text: string) => void,
): Promise<ChatCompletion> {
  let content = "";
  let refusal = "";
  let finish: string | undefined;
  let usage: ChatCompletion["usage"];
  let model: string | undefined;
  const calls: OpenCall[] = [];
  const byIndex = new Map<number, OpenCall>();
  try {
    for await (const raw of chunks) {
      const chunk = (raw ?? {}) as { choices?: unknown; usage?: unknown; model?: unknown };
      if (typeof chunk.model === "string" && chunk.model) model = chunk.model;
      if (chunk.usage && typeof chunk.usage === "object") {
        usage = chunk.usage as ChatCompletion["usage"];
      }
      // The first choice (the only one asked for); servers that send no index mean it too.
      const choice = (Array.isArray(chunk.choices) ? chunk.choices : []).find((c) =>
        c !== null && typeof c === "object" &&
        ((c as { index?: unknown }).index ?? 0) === 0
      ) as { delta?: Record<string, unknown>; finish_reason?: unknown } | undefined;
      if (!choice) continue;
      const delta = choice.delta ?? {};
      if (typeof delta.content === "string" && delta.content) {
        content += delta.content;
        onText?.(delta.content);
      }
      if (typeof delta.refusal === "string") refusal += delta.refusal;
      if (Array.isArray(delta.tool_calls)) addCallPieces(delta.tool_calls, calls, byIndex);
      if (typeof choice.finish_reason === "string" && choice.finish_reason) {
        finish = choice.finish_reason;
      }
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    // Cut after the finish: the answer is whole, only the usage chunk may be lost.
    if (finish === undefined) throw streamFailure(error, content.length);
  }
  if (signal.aborted) throw signal.reason;
  if (finish === undefined) {
    throw new StreamInterrupted("the stream ended before a finish_reason", {
      receivedChars: content.length,
    });
  }
  const message: NonNullable<ChatCompletion["choices"]>[number]["message"] = { content };
  if (refusal) message.refusal = refusal;
  if (calls.length) {
    message.tool_calls = calls.map((c) => ({
      ...(c.id ? { id: c.id } : {}),
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return {
    choices: [{ message, finish_reason: finish }],
    ...(usage ? { usage } : {}),
    ...(model ? { model } : {}),
  };
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
        call = { name: "", arguments: "" };
        byIndex.set(piece.index, call);
        calls.push(call);
      }
    } else {
      const last = calls.at(-1);
      const continues = last && !name && (id === undefined || id === last.id);
      if (continues) call = last;
      else if (calls.length < MAX_CALLS) {
        call = { name: "", arguments: "" };
        calls.push(call);
      }
    }
    if (!call) continue;
    if (id && !call.id) call.id = id;
    // Servers that repeat the name in every piece must not spell it twice.
    if (name && !call.name.endsWith(name)) call.name += name;
    const args = piece.function?.arguments;
    if (typeof args === "string") {
      if (typeof call.arguments === "string") call.arguments += args;
    } else if (args !== null && typeof args === "object" && !Array.isArray(args)) {
      call.arguments = args as Record<string, unknown>;
    }
  }
}
