/**
 * Model fallback chains through the official SDK clients against local servers on 127.0.0.1: a
 * call falls through to the next entry on exactly the documented failure classes — rate limit or
 * overload after the retry policy, a 5xx after the retries, a context-length refusal — and on
 * nothing else (a refused key, a refusal by the model, a bad answer, a server that is down, a
 * request error). Across the switch the conversation, the tools, the structured output and the
 * prompt-cache breakpoints carry over in the other provider's format.
 */
import assert from "node:assert/strict";
import { BackendError } from "../../src/llm/backend_error.ts";
import {
  mergeBackendChoice,
  recordableChoice,
  recordedBackendChoice,
} from "../../src/llm/backend_choice.ts";
import { createBackend } from "../../src/llm/factory.ts";
import { fallbackReason } from "../../src/llm/fallback_class.ts";
import { ModelChainBackend } from "../../src/llm/model_chain.ts";
import type { ToolTurnBackend, ToolTurnMessage } from "../../src/llm/tool_turn.ts";
import type { LlmBackend, LlmResponse } from "../../src/llm/types.ts";
import type { ModelFallbackEvent } from "../../src/events/types.ts";
import {
  anthropicError,
  anthropicEvents,
  anthropicMessage,
  anthropicToolUse,
  type FakeReply,
  type FakeServer,
  openAiChunks,
  openAiCompletion,
  openAiError,
  openAiToolCalls,
  type SseEvent,
  startFakeServer,
  stepRequest,
  VERDICT_SCHEMA,
} from "./fake_server.ts";

type Protocol = "anthropic" | "openai";

const RETRY = { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 };

/** How each protocol answers, fails and is reached. */
const P = {
  anthropic: {
    model: "claude-sonnet-5-5",
    url: (server: FakeServer) => server.url,
    ok: (text: string) => anthropicMessage(text),
    error: (status: number, type: string, message: string, headers: Record<string, string> = {}) =>
      anthropicError(status, type, message, headers),
    events: (text: string) => anthropicEvents(anthropicMessage(text)),
    errorEvent: (type: string, message: string): SseEvent => ({
      event: "error",
      data: JSON.stringify({ type: "error", error: { type, message } }),
    }),
    overloadStatus: 529,
    contextLength: () =>
      anthropicError(
        400,
        "invalid_request_error",
        "prompt is too long: 210384 tokens > 200000 maximum",
      ),
    refusal: () => anthropicMessage("I can't help with that.", { stopReason: "refusal" }),
  },
  openai: {
    model: "gpt-5.4-mini",
    url: (server: FakeServer) => `${server.url}/v1`,
    ok: (text: string) => openAiCompletion(text),
    error: (status: number, type: string, message: string, headers: Record<string, string> = {}) =>
      openAiError(status, type, message, headers),
    events: (text: string) => openAiChunks(openAiCompletion(text), { includeUsage: true }),
    errorEvent: (type: string, message: string): SseEvent => ({
      data: JSON.stringify({ error: { message, type, param: null, code: null } }),
    }),
    overloadStatus: 503,
    contextLength: (): FakeReply => ({
      status: 400,
      json: {
        error: {
          message:
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.",
          type: "invalid_request_error",
          param: "messages",
          code: "context_length_exceeded",
        },
      },
    }),
    refusal: () => openAiCompletion(null, { refusal: "I can't help with that." }),
  },
} as const;

const other = (p: Protocol): Protocol => p === "anthropic" ? "openai" : "anthropic";

/** A chain built as the CLI builds it: the run's backend, then an entry on the other provider. */
async function chainOver(
  protocol: Protocol,
  primary: FakeServer | string,
  fallback: FakeServer,
  options: { stream?: boolean; fallbackModels?: string[] } = {},
): Promise<LlmBackend & ToolTurnBackend> {
  const to = other(protocol);
  const backend = await createBackend({
    name: protocol,
    model: P[protocol].model,
    baseUrl: typeof primary === "string" ? primary : P[protocol].url(primary),
    apiKey: "k",
    env: {},
    retry: RETRY,
    ...(options.stream === false ? { stream: false } : {}),
    fallbackModels: [
      ...(options.fallbackModels ?? []),
      { backend: to, model: P[to].model, baseUrl: P[to].url(fallback) },
    ],
  });
  assert.ok(backend instanceof ModelChainBackend);
  return backend as ModelChainBackend & ToolTurnBackend;
}

/** One failure of the primary server, and whether the chain must fall through on it. */
interface Case {
  name: string;
  replies: (p: Protocol) => FakeReply[];
  /** The class it falls through on; undefined: the chain stops with `code`. */
  reason?: ModelFallbackEvent["reason"];
  code?: string;
  stream?: boolean;
}

const CASES: Case[] = [
  {
    name: "429 on every attempt",
    replies: (p) =>
      [1, 2].map(() => P[p].error(429, "rate_limit_error", "slow down", { "retry-after-ms": "1" })),
    reason: "rate_limit",
  },
  {
    name: "429 with a reset beyond maxRateLimitWaitMs",
    replies: (p) => [P[p].error(429, "rate_limit_error", "daily limit", { "retry-after": "7200" })],
    reason: "rate_limit",
  },
  {
    name: "overloaded (529 / 503) on every attempt",
    replies: (p) =>
      [1, 2].map(() => P[p].error(P[p].overloadStatus, "overloaded_error", "Overloaded")),
    reason: "overload",
  },
  {
    name: "an overloaded_error event in the stream on every attempt",
    replies: (p) =>
      [1, 2].map(() => ({
        sse: [
          ...P[p].events("Partial text").slice(0, 3),
          P[p].errorEvent("overloaded_error", "Overloaded"),
        ],
      })),
    reason: "overload",
  },
  {
    name: "500 on every attempt",
    replies: (p) => [1, 2].map(() => P[p].error(500, "api_error", "Internal server error")),
    reason: "server_error",
  },
  {
    name: "502 from a proxy (an HTML page) on every attempt",
    replies: () =>
      [1, 2].map(() => ({
        status: 502,
        raw: "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
        contentType: "text/html",
      })),
    reason: "server_error",
  },
  {
    name: "a context-length refusal",
    replies: (p) => [P[p].contextLength()],
    reason: "context_length",
  },
  {
    name: "a context-length refusal of a llama.cpp server",
    replies: () => [{
      status: 400,
      json: {
        error: {
          code: 400,
          message: "the request exceeds the available context size, try increasing it",
          type: "exceed_context_size_error",
        },
      },
    }],
    reason: "context_length",
  },
  {
    name: "401 (a refused key)",
    replies: (p) => [P[p].error(401, "authentication_error", "invalid x-api-key")],
    code: "BACKEND_AUTH",
  },
  {
    name: "403",
    replies: (p) => [P[p].error(403, "permission_error", "not allowed")],
    code: "BACKEND_AUTH",
  },
  {
    name: "404 (an unknown model)",
    replies: (p) => [P[p].error(404, "not_found_error", "model: nope")],
    code: "BACKEND_HTTP_ERROR",
  },
  {
    name: "400 (another request error)",
    replies: (
      p,
    ) => [P[p].error(400, "invalid_request_error", "messages.0.content: Field required")],
    code: "BACKEND_HTTP_ERROR",
  },
  {
    name: "408 on every attempt (not a listed class)",
    replies: (p) => [1, 2].map(() => P[p].error(408, "timeout_error", "Request timeout")),
    code: "BACKEND_UNAVAILABLE",
  },
  {
    name: "a refusal by the model",
    replies: (p) => [P[p].refusal()],
    code: "BACKEND_REFUSED",
  },
  {
    name: "an answer that is not the API's format (a page with status 200)",
    replies: () => [{ raw: "<html><body>login</body></html>", contentType: "text/html" }],
    code: "BACKEND_BAD_RESPONSE",
    stream: false,
  },
  {
    name: "a stream cut without an error event on every attempt",
    replies: (p) =>
      [1, 2].map(() => ({ sse: P[p].events("Cut short").slice(0, 3), sseEnd: "cut" as const })),
    code: "BACKEND_STREAM_INTERRUPTED",
  },
  {
    name: "a request error event in the stream",
    replies: (p) => [{
      sse: [...P[p].events("x").slice(0, 2), P[p].errorEvent("invalid_request_error", "bad tool")],
    }],
    code: "BACKEND_STREAM_INTERRUPTED",
  },
];

for (const protocol of ["anthropic", "openai"] as const) {
  for (const c of CASES) {
    const verdict = c.reason ? `falls through (${c.reason})` : `stops (${c.code})`;
    Deno.test(`chain from ${protocol}: ${c.name} ${verdict}`, async () => {
      const a = startFakeServer(c.replies(protocol));
      const b = startFakeServer([P[other(protocol)].ok("The fallback answered.")]);
      try {
        const chain = await chainOver(protocol, a, b, { stream: c.stream });
        const fallbacks: ModelFallbackEvent[] = [];
        const outcome = await chain.complete(stepRequest(), {
          onFallback: (f) => fallbacks.push(f),
        })
          .then((r) => ({ answer: r }), (error) => ({ error }));
        assert.equal(a.remaining(), 0, "the primary got every attempt its replies script");
        if (c.reason) {
          assert.ok("answer" in outcome, String((outcome as { error: unknown }).error));
          const { answer } = outcome as { answer: LlmResponse };
          assert.equal(answer.text, "The fallback answered.");
          assert.equal(answer.backend, other(protocol));
          assert.equal(answer.model, P[other(protocol)].model);
          assert.equal(b.requests.length, 1);
          assert.equal(fallbacks.length, 1);
          assert.equal(fallbacks[0].reason, c.reason);
          assert.deepEqual(fallbacks[0].from, { backend: protocol, model: P[protocol].model });
          assert.equal(fallbacks[0].to.backend, other(protocol));
          assert.deepEqual(answer.fallbacks, fallbacks);
        } else {
          assert.ok("error" in outcome, "the call failed");
          const { error } = outcome as { error: unknown };
          assert.ok(error instanceof BackendError, String(error));
          assert.equal(error.code, c.code);
          assert.equal(fallbackReason(error), undefined);
          assert.equal(b.requests.length, 0, "nothing was sent to the fallback");
          assert.deepEqual(fallbacks, []);
        }
      } finally {
        await a.close();
        await b.close();
      }
    });
  }

  Deno.test(`chain from ${protocol}: a server that is down (connection refused) stops the chain`, async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const b = startFakeServer([P[other(protocol)].ok("unused")]);
    try {
      const url = protocol === "openai"
        ? `http://127.0.0.1:${port}/v1`
        : `http://127.0.0.1:${port}`;
      const chain = await chainOver(protocol, url, b);
      const error = await chain.complete(stepRequest()).then(() => undefined, (e) => e);
      assert.equal((error as BackendError).code, "BACKEND_NETWORK");
      assert.equal(b.requests.length, 0);
    } finally {
      await b.close();
    }
  });

  Deno.test(`chain from ${protocol}: a bad answer (not JSON for a schema) is the answer; no fallback`, async () => {
    const a = startFakeServer([P[protocol].ok("Sure! Here is some prose, not JSON.")]);
    const b = startFakeServer([P[other(protocol)].ok("unused")]);
    try {
      const chain = await chainOver(protocol, a, b);
      const answer = await chain.complete(stepRequest({ outputSchema: VERDICT_SCHEMA }));
      assert.equal(answer.text, "Sure! Here is some prose, not JSON.");
      assert.equal(answer.model, P[protocol].model);
      assert.equal(answer.fallbacks, undefined);
      assert.equal(b.requests.length, 0);
    } finally {
      await a.close();
      await b.close();
    }
  });
}

Deno.test("chain: when every entry fails, the last error keeps its code and names the entries tried", async () => {
  const a = startFakeServer([
    anthropicError(429, "rate_limit_error", "limit", { "retry-after": "9999" }),
  ]);
  const b = startFakeServer([1, 2].map(() => openAiError(503, "server_error", "busy")));
  try {
    const chain = await chainOver("anthropic", a, b);
    const error = await chain.complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError);
    assert.equal(error.code, "BACKEND_UNAVAILABLE");
    assert.equal(error.details.backend, "openai");
    assert.match(
      error.message,
      /The model chain fell through anthropic claude-sonnet-5-5 \(rate limit\) before this entry\.$/,
    );
  } finally {
    await a.close();
    await b.close();
  }
});

Deno.test("chain: --fallback-model names are models of the same backend and server, tried in order", async () => {
  const a = startFakeServer([
    openAiError(429, "rate_limit_exceeded", "limit", { "retry-after": "9999" }),
    openAiError(
      400,
      "invalid_request_error",
      "This model's maximum context length is 8192 tokens.",
    ),
    openAiCompletion("The third model answered."),
  ]);
  const b = startFakeServer();
  try {
    const chain = await chainOver("openai", a, b, { fallbackModels: ["gpt-5.4-nano", "gpt-5.4"] });
    const fallbacks: ModelFallbackEvent[] = [];
    const answer = await chain.complete(stepRequest(), { onFallback: (f) => fallbacks.push(f) });
    assert.equal(answer.text, "The third model answered.");
    assert.deepEqual(a.requests.map((r) => r.body.model), [
      "gpt-5.4-mini",
      "gpt-5.4-nano",
      "gpt-5.4",
    ]);
    assert.deepEqual(fallbacks.map((f) => [f.from.model, f.to.model, f.reason]), [
      ["gpt-5.4-mini", "gpt-5.4-nano", "rate_limit"],
      ["gpt-5.4-nano", "gpt-5.4", "context_length"],
    ]);
    // The request's own chain comes first; an entry given twice is tried once.
    a.push(openAiError(503, "server_error", "busy"), openAiError(503, "server_error", "busy"));
    a.push(openAiCompletion("From the step's own second model."));
    const own = await chain.complete(
      stepRequest({ model: "m1", modelChain: ["m1", "gpt-5.4-nano"] }),
    );
    assert.equal(own.text, "From the step's own second model.");
    assert.deepEqual(a.requests.slice(3).map((r) => r.body.model), ["m1", "m1", "gpt-5.4-nano"]);
  } finally {
    await a.close();
    await b.close();
  }
});

for (const protocol of ["anthropic", "openai"] as const) {
  const to = other(protocol);
  Deno.test(`chain: the conversation, the schema and the cache breakpoints carry over from ${protocol} to ${to} and back`, async () => {
    const a = startFakeServer([
      P[protocol].ok("First answer, from the primary."),
      P[protocol].error(429, "rate_limit_error", "limit", { "retry-after": "9999" }),
      P[protocol].ok("Third answer, the primary again."),
    ]);
    const b = startFakeServer([P[to].ok('{"verdict":"ok"}')]);
    try {
      const chain = await chainOver(protocol, a, b);
      const system = "You are a careful reviewer.";
      const first = await chain.complete(
        stepRequest({ prompt: "Question one.", systemPrompt: system }),
      );
      const session = first.sessionId!;
      const second = await chain.complete(
        stepRequest({
          prompt: "Question two.",
          systemPrompt: system,
          sessionId: session,
          outputSchema: VERDICT_SCHEMA,
        }),
      );
      assert.equal(second.text, '{"verdict":"ok"}');
      assert.equal(second.sessionId, session);
      await chain.complete(
        stepRequest({ prompt: "Question three.", systemPrompt: system, sessionId: session }),
      );

      // The fallback got the conversation so far, in its own format, with the schema natively.
      const body = b.requests[0].body;
      if (to === "openai") {
        assert.deepEqual(
          (body.messages as { role: string; content: string }[]).map((m) => [m.role, m.content]),
          [
            ["system", system],
            ["user", "Question one."],
            ["assistant", "First answer, from the primary."],
            ["user", "Question two."],
          ],
        );
        assert.deepEqual(
          (body.response_format as { json_schema: { schema: unknown } }).json_schema.schema,
          VERDICT_SCHEMA,
        );
      } else {
        const messages = body.messages as { role: string; content: unknown }[];
        assert.equal(messages.length, 3);
        assert.deepEqual(messages.slice(0, 2), [
          { role: "user", content: "Question one." },
          { role: "assistant", content: "First answer, from the primary." },
        ]);
        assert.equal(messages[2].role, "user");
        assert.deepEqual(messages[2].content, [
          { type: "text", text: "Question two.", cache_control: { type: "ephemeral" } },
        ]);
        assert.deepEqual(body.system, [
          { type: "text", text: system, cache_control: { type: "ephemeral" } },
        ]);
        assert.deepEqual(
          (body.output_config as { format: { schema: unknown } }).format.schema,
          VERDICT_SCHEMA,
        );
      }
      // Back on the primary, the fallback's answer is part of the conversation.
      const third = a.requests[2].body.messages as { role: string; content: unknown }[];
      const texts = third.map((m) =>
        typeof m.content === "string"
          ? m.content
          : (m.content as { text?: string }[]).map((x) => x.text ?? "").join("")
      ).filter((t) => t !== system);
      assert.deepEqual(texts, [
        "Question one.",
        "First answer, from the primary.",
        "Question two.",
        '{"verdict":"ok"}',
        "Question three.",
      ]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  Deno.test(`chain: a tool loop that falls from ${protocol} to ${to} mid-way carries its tool calls and results over`, async () => {
    const toolCall = protocol === "anthropic"
      ? anthropicToolUse([{ id: "toolu_01", name: "Read", input: { file_path: "notes.txt" } }])
      : openAiToolCalls([{ id: "call_01", name: "Read", arguments: '{"file_path":"notes.txt"}' }]);
    const callId = protocol === "anthropic" ? "toolu_01" : "call_01";
    const a = startFakeServer([
      toolCall,
      P[protocol].error(P[protocol].overloadStatus, "overloaded_error", "Overloaded"),
      P[protocol].error(P[protocol].overloadStatus, "overloaded_error", "Overloaded"),
    ]);
    const b = startFakeServer([P[to].ok('{"verdict":"ok","reason":"notes read"}')]);
    try {
      const chain = await chainOver(protocol, a, b);
      const tools = [{
        name: "Read",
        description: "Reads a file",
        inputSchema: { type: "object", properties: { file_path: { type: "string" } } },
      }];
      const base = {
        stepId: "review",
        iteration: 1,
        systemPrompt: "Review.",
        tools,
        outputSchema: VERDICT_SCHEMA,
      };
      const messages: ToolTurnMessage[] = [{
        role: "user",
        content: "Read notes.txt and judge it.",
      }];
      const turn1 = await chain.toolTurn!({ ...base, messages });
      assert.equal(turn1.toolCalls[0].id, callId);
      messages.push({ role: "assistant", text: turn1.text, toolCalls: turn1.toolCalls });
      messages.push({
        role: "tool",
        results: [{ id: callId, name: "Read", content: "all good", isError: false }],
      });
      const turn2 = await chain.toolTurn!({ ...base, sessionId: turn1.sessionId, messages });
      assert.equal(turn2.text, '{"verdict":"ok","reason":"notes read"}');
      assert.equal(turn2.backend, to);
      assert.equal(turn2.fallbacks?.[0].reason, "overload");

      const body = b.requests[0].body;
      if (to === "openai") {
        const sent = body.messages as Record<string, unknown>[];
        assert.deepEqual(sent.slice(1), [
          { role: "user", content: "Read notes.txt and judge it." },
          {
            role: "assistant",
            content: null,
            tool_calls: [{
              id: callId,
              type: "function",
              function: { name: "Read", arguments: '{"file_path":"notes.txt"}' },
            }],
          },
          { role: "tool", tool_call_id: callId, content: "all good" },
        ]);
        assert.equal((body.tools as { function: { name: string } }[])[0].function.name, "Read");
        assert.ok(body.response_format);
      } else {
        const sent = body.messages as { role: string; content: unknown }[];
        assert.deepEqual(sent[1], {
          role: "assistant",
          content: [{
            type: "tool_use",
            id: callId,
            name: "Read",
            input: { file_path: "notes.txt" },
          }],
        });
        assert.deepEqual(sent[2], {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: callId,
            content: "all good",
            cache_control: { type: "ephemeral" },
          }],
        });
        const sentTools = body.tools as { name: string; cache_control?: unknown }[];
        assert.equal(sentTools[0].name, "Read");
        assert.deepEqual(
          sentTools[0].cache_control,
          { type: "ephemeral" },
          "the cache breakpoint on the tools",
        );
        assert.ok(body.output_config);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });
}

Deno.test("chain: an entry on another backend cannot take a call whose tools a claude-code-like backend runs", async () => {
  const runsOwnTools: LlmBackend = {
    name: "own-tools",
    reportsToolCalls: true,
    complete: () =>
      Promise.reject(
        new BackendError("BACKEND_UNAVAILABLE", "overloaded", {
          backend: "own-tools",
          status: 529,
        }),
      ),
  };
  const built: string[] = [];
  const chain = new ModelChainBackend(runsOwnTools, {
    build: (entry) => {
      built.push(entry.backend);
      return Promise.resolve({
        name: entry.backend,
        complete: () => Promise.resolve({ text: "x" }),
      });
    },
  });
  const withTools = stepRequest({
    allowedTools: ["Read"],
    model: "opus",
    modelChain: ["opus", { backend: "openai", model: "gpt-5.4" }],
  });
  // The entry elsewhere is skipped: the call's own error stands.
  const error = await chain.complete(withTools).then(() => undefined, (e) => e);
  assert.equal((error as BackendError).code, "BACKEND_UNAVAILABLE");
  // Without tools it is taken.
  const { allowedTools: _tools, ...plain } = withTools;
  const answer = await chain.complete(plain);
  assert.equal(answer.backend, "openai");
  assert.deepEqual(built, ["openai"]);
});

Deno.test("chain: one model is no chain — the call goes to the backend as it is", async () => {
  const seen: unknown[] = [];
  const backend: LlmBackend = {
    name: "plain",
    complete: (req) => {
      seen.push(req);
      return Promise.resolve({ text: "ok" });
    },
  };
  const chain = new ModelChainBackend(backend, {
    build: () => Promise.reject(new Error("unused")),
  });
  const answer = await chain.complete(stepRequest({ model: "m" }));
  assert.deepEqual(answer, { text: "ok" });
  assert.equal((seen[0] as { modelChain?: unknown }).modelChain, undefined);
});

Deno.test("backend choice: --fallback-model names are recorded, kept on resume, replaced when given, dropped with the backend", () => {
  const recorded = recordableChoice({
    backend: "openai",
    model: "gpt-5.4-mini",
    baseUrl: "http://u:secret@127.0.0.1:8000/v1",
    fallbackModels: ["gpt-5.4-nano"],
  });
  assert.deepEqual(recorded, {
    backend: "openai",
    model: "gpt-5.4-mini",
    baseUrl: "http://127.0.0.1:8000/v1",
    fallbackModels: ["gpt-5.4-nano"],
  });
  assert.deepEqual(recordedBackendChoice({ backendChoice: recorded }), recorded);
  assert.deepEqual(mergeBackendChoice(recorded, {}).fallbackModels, ["gpt-5.4-nano"]);
  assert.deepEqual(
    mergeBackendChoice(recorded, { fallbackModels: ["gpt-5.4"] }).fallbackModels,
    ["gpt-5.4"],
  );
  assert.equal(mergeBackendChoice(recorded, { backend: "anthropic" }).fallbackModels, undefined);
  // A record with a bad list is not a choice (untrusted JSON from a checkpoint).
  assert.equal(
    recordedBackendChoice({ backendChoice: { backend: "openai", fallbackModels: [""] } }),
    undefined,
  );
});
