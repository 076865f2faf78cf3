/**
 * A scripted HTTP server on 127.0.0.1 (Deno.serve, port 0) for the backend tests. It answers each
 * request with the next scripted reply and records every request (method, path, headers, JSON
 * body), so tests can drive the official SDK clients over a real socket and assert what they sent.
 *
 * Reply builders speak each API's wire format: {@linkcode anthropicMessage},
 * {@linkcode anthropicToolUse}, {@linkcode anthropicError}, {@linkcode openAiCompletion},
 * {@linkcode openAiToolCalls}, {@linkcode openAiError}.
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
  /** Content type of `raw`. */
  contentType?: string;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** Wait before answering (ends early when the server closes). */
  delayMs?: number;
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
