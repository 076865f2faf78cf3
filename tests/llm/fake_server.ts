/**
 * A scripted HTTP server on 127.0.0.1 (Deno.serve, port 0) for the backend tests. It answers each
 * request with the next scripted reply and records every request (method, path, headers, JSON
 * body), so tests can drive the official SDK clients over a real socket and assert what they sent.
 *
 * Reply builders speak each API's wire format: {@linkcode anthropicMessage},
 * {@linkcode anthropicToolUse}, {@linkcode anthropicError}, {@linkcode openAiCompletion},
 * {@linkcode openAiToolCalls}, {@linkcode openAiError}.
 *
 * Streaming: a request with `"stream": true` gets its (successful JSON) reply as the API would
 * stream it — Messages API events (`message_start`, `content_block_*` with `text_delta` and
 * `input_json_delta` fragments, `message_delta` with the usage, `message_stop`) or chat-completion
 * chunks (`delta.content` pieces, `delta.tool_calls` pieces by index with `arguments` in fragments,
 * a usage chunk when `stream_options.include_usage`, `[DONE]`). Error replies stay JSON, as the
 * APIs send them before a stream. {@linkcode anthropicEvents} and {@linkcode openAiChunks} give
 * those events, so a test can script a broken stream: `{ sse: events.slice(0, 4), sseEnd: "cut" }`.
 */

import type { LlmRequest } from "../../src/llm/types.ts";

/** One scripted reply. */
export interface FakeReply {
  /** HTTP status (default 200). */
  status?: number;
  /** JSON body (serialized as application/json). */
  json?: unknown;
  /** Raw body text (sent with `contentType`, default application/json). */
  raw?: string;
  /** Content type of `raw` (default application/json) or `sse` (default text/event-stream). */
  contentType?: string;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** Wait before answering (ends early when the server closes). */
  delayMs?: number;
  /** Server-sent events to answer with (`text/event-stream`), in order. */
  sse?: SseEvent[];
  /**
   * How a `sse` answer ends after its events: `close` (default: the body ends), `cut` (the
   * connection is dropped mid-body) or `hang` (nothing more is sent until the client gives up or
   * the server closes).
   */
  sseEnd?: "close" | "cut" | "hang";
  /** Send the `sse` events one at a time, this many ms apart (a slow model writing). */
  sseIntervalMs?: number;
}

/** One server-sent event: `event: <event>` (when given) and `data: <data>`. */
export interface SseEvent {
  /** The event's name (Messages API: `message_start`, …; chat completions send none). */
  event?: string;
  /** The data line: JSON text, or `[DONE]`. */
  data: string;
}

/** A request the server received. */
export interface RecordedRequest {
  /** HTTP method. */
  method: string;
  /** URL path. */
  path: string;
  /** Request headers (lower-case names). */
  headers: Record<string, string>;
  /** Parsed JSON body. */
  body: Record<string, unknown>;
}

/** A running fake server. */
export interface FakeServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Requests received, in order. */
  requests: RecordedRequest[];
  /** Adds replies to the script. */
  push(...replies: FakeReply[]): void;
  /** Scripted replies not used yet. */
  remaining(): number;
  /** Stops the server. */
  close(): Promise<void>;
}

/** Starts a fake server answering from `replies` in order (a 599 once they run out). */
export function startFakeServer(replies: FakeReply[] = []): FakeServer {
  const queue = [...replies];
  const requests: RecordedRequest[] = [];
  // Aborted on close, so that replies still waiting out their delay end at once.
  const closing = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const text = await request.text();
      let body: Record<string, unknown> = {};
      try {
        body = text ? JSON.parse(text) : {};
      } catch {
        body = { unparsed: text };
      }
      requests.push({
        method: request.method,
        path: new URL(request.url).pathname,
        headers: Object.fromEntries(request.headers),
        body,
      });
      const reply = queue.shift();
      if (!reply) {
        return Response.json({ error: { message: "fake server: no scripted reply left" } }, {
          status: 599,
        });
      }
      if (reply.delayMs) await wait(reply.delayMs, closing.signal);
      const headers = new Headers(reply.headers);
      const sse = reply.sse ?? streamedForm(reply, body, new URL(request.url).pathname);
      if (sse) {
        headers.set("content-type", reply.contentType ?? "text/event-stream");
        return new Response(
          sseBody(sse, reply.sseEnd ?? "close", closing.signal, reply.sseIntervalMs ?? 0),
          {
            status: reply.status ?? 200,
            headers,
          },
        );
      }
      if (reply.raw !== undefined) {
        headers.set("content-type", reply.contentType ?? "application/json");
        return new Response(reply.raw, { status: reply.status ?? 200, headers });
      }
      headers.set("content-type", "application/json");
      return new Response(JSON.stringify(reply.json ?? {}), {
        status: reply.status ?? 200,
        headers,
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    push: (...more) => void queue.push(...more),
    remaining: () => queue.length,
    close: async () => {
      closing.abort();
      await server.shutdown();
    },
  };
}

/** The events of a successful JSON reply to a request that asked for a stream; else undefined. */
function streamedForm(
  reply: FakeReply,
  body: Record<string, unknown>,
  path: string,
): SseEvent[] | undefined {
  if (body.stream !== true || reply.raw !== undefined || (reply.status ?? 200) !== 200) {
    return undefined;
  }
  if (path.endsWith("/messages")) return anthropicEvents(reply);
  if (path.endsWith("/chat/completions")) {
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    return openAiChunks(reply, { includeUsage: options?.include_usage === true });
  }
  return undefined;
}

/** The body of an SSE answer: the events, then the end `end` asks for. */
function sseBody(
  events: SseEvent[],
  end: "close" | "cut" | "hang",
  closing: AbortSignal,
  intervalMs: number,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const text = events.map((e) => `${e.event ? `event: ${e.event}\n` : ""}data: ${e.data}\n\n`);
  let sent = false;
  let next = 0;
  return new ReadableStream({
    // Pulled when the server wants more: the events first; the end once they were taken, so a
    // cut comes after the events went out, not instead of them.
    async pull(controller) {
      if (intervalMs > 0 && next < text.length) {
        // One event per pull, after a pause (the first one at once).
        if (next > 0) await wait(intervalMs, closing);
        if (closing.aborted) return;
        controller.enqueue(encoder.encode(text[next++]));
        if (next === text.length) sent = true;
        if (sent && end === "close") controller.close();
        return;
      }
      if (!sent) {
        sent = true;
        if (text.length) controller.enqueue(encoder.encode(text.join("")));
        if (end === "close") controller.close();
        return;
      }
      if (end === "cut") {
        controller.error(new Error("fake server: connection cut"));
        return;
      }
      return new Promise<void>((resolve) => {
        const finish = () => {
          try {
            controller.close();
          } catch {
            // The client went away first.
          }
          resolve();
        };
        if (closing.aborted) finish();
        else closing.addEventListener("abort", finish, { once: true });
      });
    },
  }, { highWaterMark: 0 });
}

/** `text` in pieces of at most `size` characters (one empty piece for empty text). */
function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/**
 * The Messages API events that stream a `/v1/messages` JSON reply (see {@linkcode anthropicMessage},
 * {@linkcode anthropicToolUse}): text in `text_delta` pieces of 8 characters, each tool call's
 * input as `input_json_delta` fragments of 10 characters, the usage split between `message_start`
 * (input and cache counts) and `message_delta` (output), and a `ping` as the API sends one.
 */
export function anthropicEvents(reply: FakeReply): SseEvent[] {
  const message = reply.json as {
    content: { type: string; text?: string; id?: string; name?: string; input?: unknown }[];
    stop_reason: string;
    stop_details?: unknown;
    usage: Record<string, unknown>;
  };
  const event = (name: string, data: Record<string, unknown>): SseEvent => ({
    event: name,
    data: JSON.stringify({ type: name, ...data }),
  });
  const events: SseEvent[] = [
    event("message_start", {
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { ...message.usage, output_tokens: 1 },
      },
    }),
    event("ping", {}),
  ];
  for (const [index, block] of message.content.entries()) {
    if (block.type === "tool_use") {
      events.push(event("content_block_start", {
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      }));
      for (const part of pieces(JSON.stringify(block.input), 10)) {
        events.push(event("content_block_delta", {
          index,
          delta: { type: "input_json_delta", partial_json: part },
        }));
      }
    } else {
      events.push(
        event("content_block_start", { index, content_block: { type: "text", text: "" } }),
      );
      for (const part of pieces(block.text ?? "", 8)) {
        events.push(
          event("content_block_delta", { index, delta: { type: "text_delta", text: part } }),
        );
      }
    }
    events.push(event("content_block_stop", { index }));
  }
  events.push(
    event("message_delta", {
      delta: {
        stop_reason: message.stop_reason,
        stop_sequence: null,
        ...(message.stop_details ? { stop_details: message.stop_details } : {}),
      },
      usage: { output_tokens: message.usage.output_tokens },
    }),
    event("message_stop", {}),
  );
  return events;
}

/**
 * The chunks that stream a `/chat/completions` JSON reply (see {@linkcode openAiCompletion},
 * {@linkcode openAiToolCalls}): a role chunk, the content in pieces of 8 characters, each tool call
 * as a first piece (index, id when the reply has one, name) and its `arguments` in fragments of 10
 * characters (an object sent whole), the finish reason, the usage chunk when `includeUsage`, then
 * `[DONE]`.
 */
export function openAiChunks(
  reply: FakeReply,
  options: { includeUsage?: boolean } = {},
): SseEvent[] {
  const completion = reply.json as {
    id: string;
    model: string;
    created: number;
    choices: {
      message: { content: string | null; refusal?: string | null; tool_calls?: unknown[] };
      finish_reason: string;
    }[];
    usage?: unknown;
  };
  const choice = completion.choices[0];
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
    data: JSON.stringify({
      id: completion.id,
      object: "chat.completion.chunk",
      created: completion.created,
      model: completion.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    }),
  });
  const chunks: SseEvent[] = [chunk({ role: "assistant", content: "" })];
  for (const part of pieces(choice.message.content ?? "", 8)) chunks.push(chunk({ content: part }));
  if (choice.message.refusal) chunks.push(chunk({ refusal: choice.message.refusal }));
  for (const [index, raw] of (choice.message.tool_calls ?? []).entries()) {
    const call = raw as { id?: string; function: { name: string; arguments: unknown } };
    const args = call.function.arguments;
    chunks.push(chunk({
      tool_calls: [{
        index,
        ...(call.id !== undefined ? { id: call.id } : {}),
        type: "function",
        function: { name: call.function.name, arguments: typeof args === "string" ? "" : args },
      }],
    }));
    if (typeof args !== "string") continue;
    for (const part of pieces(args, 10)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
    }
  }
  chunks.push(chunk({}, choice.finish_reason));
  if (options.includeUsage && completion.usage) {
    chunks.push({
      data: JSON.stringify({
        id: completion.id,
        object: "chat.completion.chunk",
        created: completion.created,
        model: completion.model,
        choices: [],
        usage: completion.usage,
      }),
    });
  }
  chunks.push({ data: "[DONE]" });
  return chunks;
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** A successful Messages API reply (`POST /v1/messages`) whose text is `text`. */
export function anthropicMessage(
  text: string,
  options: {
    inputTokens?: number;
    outputTokens?: number;
    stopReason?: string;
    model?: string;
    cacheReadTokens?: number;
    cacheWriteTokens?: number;
  } = {},
): FakeReply {
  return {
    json: {
      id: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
      type: "message",
      role: "assistant",
      model: options.model ?? "claude-sonnet-5-5",
      content: [{ type: "text", text }],
      stop_reason: options.stopReason ?? "end_turn",
      stop_sequence: null,
      usage: {
        input_tokens: options.inputTokens ?? 12,
        output_tokens: options.outputTokens ?? 7,
        cache_creation_input_tokens: options.cacheWriteTokens ?? null,
        cache_read_input_tokens: options.cacheReadTokens ?? null,
      },
    },
    headers: { "request-id": `req_${crypto.randomUUID()}` },
  };
}

/** A Messages API reply that calls tools: `tool_use` blocks (with optional text before them). */
export function anthropicToolUse(
  calls: { id?: string; name: string; input: unknown }[],
  options: {
    text?: string;
    inputTokens?: number;
    outputTokens?: number;
    cacheReadTokens?: number;
    cacheWriteTokens?: number;
  } = {},
): FakeReply {
  const content: unknown[] = options.text ? [{ type: "text", text: options.text }] : [];
  for (const [i, call] of calls.entries()) {
    content.push({
      type: "tool_use",
      id: call.id ?? `toolu_${i + 1}`,
      name: call.name,
      input: call.input,
    });
  }
  return {
    json: {
      id: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
      type: "message",
      role: "assistant",
      model: "claude-sonnet-5-5",
      content,
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: {
        input_tokens: options.inputTokens ?? 12,
        output_tokens: options.outputTokens ?? 7,
        cache_creation_input_tokens: options.cacheWriteTokens ?? null,
        cache_read_input_tokens: options.cacheReadTokens ?? null,
      },
    },
  };
}

/** A Messages API error reply (`{ type: "error", error: { type, message } }`). */
export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): FakeReply {
  return {
    status,
    json: { type: "error", error: { type, message }, request_id: `req_${crypto.randomUUID()}` },
    headers,
  };
}

/** A successful chat-completions reply (`POST /v1/chat/completions`). */
export function openAiCompletion(
  content: string | null,
  options: {
    promptTokens?: number;
    completionTokens?: number;
    finishReason?: string;
    refusal?: string;
    model?: string;
    cachedTokens?: number;
  } = {},
): FakeReply {
  return {
    json: {
      id: `chatcmpl-${crypto.randomUUID()}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: options.model ?? "gpt-5.4-mini",
      choices: [{
        index: 0,
        message: { role: "assistant", content, refusal: options.refusal ?? null },
        logprobs: null,
        finish_reason: options.finishReason ?? "stop",
      }],
      usage: {
        prompt_tokens: options.promptTokens ?? 20,
        completion_tokens: options.completionTokens ?? 9,
        total_tokens: (options.promptTokens ?? 20) + (options.completionTokens ?? 9),
        ...(options.cachedTokens !== undefined
          ? { prompt_tokens_details: { cached_tokens: options.cachedTokens } }
          : {}),
      },
    },
  };
}

/**
 * A chat-completions reply that calls tools. `arguments` is sent as given: a string (OpenAI) or an
 * object (as some compatible servers do); a call without `id` is sent without one.
 */
export function openAiToolCalls(
  calls: { id?: string; name: string; arguments: unknown }[],
  options: {
    content?: string | null;
    promptTokens?: number;
    completionTokens?: number;
    cachedTokens?: number;
  } = {},
): FakeReply {
  return {
    json: {
      id: `chatcmpl-${crypto.randomUUID()}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "gpt-5.4-mini",
      choices: [{
        index: 0,
        message: {
          role: "assistant",
          content: options.content ?? null,
          refusal: null,
          tool_calls: calls.map((c) => ({
            ...(c.id !== undefined ? { id: c.id } : {}),
            type: "function",
            function: { name: c.name, arguments: c.arguments },
          })),
        },
        logprobs: null,
        finish_reason: "tool_calls",
      }],
      usage: {
        prompt_tokens: options.promptTokens ?? 20,
        completion_tokens: options.completionTokens ?? 9,
        total_tokens: (options.promptTokens ?? 20) + (options.completionTokens ?? 9),
        ...(options.cachedTokens !== undefined
          ? { prompt_tokens_details: { cached_tokens: options.cachedTokens } }
          : {}),
      },
    },
  };
}

/** A chat-completions error reply (`{ error: { message, type, param, code } }`). */
export function openAiError(
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
): FakeReply {
  return { status, json: { error: { message, type, param: null, code: null } }, headers };
}

/** A step request with sensible defaults, for backend tests. */
export function stepRequest(overrides: Partial<LlmRequest> = {}): LlmRequest {
  return {
    kind: "step",
    agent: "tester",
    stepId: "initial.issue",
    iteration: 1,
    prompt: "Fix the flaky login test.",
    cwd: Deno.cwd(),
    ...overrides,
  };
}

/** A small output schema used across the backend tests. */
export const VERDICT_SCHEMA: Record<string, unknown> = {
  type: "object",
  properties: {
    verdict: { type: "string", enum: ["ok", "ng"] },
    reason: { type: "string" },
  },
  required: ["verdict"],
};
