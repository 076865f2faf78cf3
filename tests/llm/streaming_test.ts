/**
 * Streamed answers of the chat backends through the official SDK clients against local servers
 * speaking each API's server-sent events: text reported as it arrives, tool calls assembled from
 * fragments, usage, and the ways a stream fails (cut mid-way, an `error` event, broken tool-call
 * JSON, a hang after the first chunk, a 500 before the stream).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { completeStepCall } from "../../src/flow/step_tools.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import { createBackend } from "../../src/llm/factory.ts";
import { http1Counters } from "../../src/llm/http1_fetch.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import type { RetryInfo } from "../../src/llm/retry.ts";
import { UsageError } from "../../src/errors.ts";
import {
  anthropicError,
  anthropicEvents,
  anthropicMessage,
  anthropicToolUse,
  type FakeServer,
  openAiChunks,
  openAiCompletion,
  openAiError,
  openAiToolCalls,
  type SseEvent,
  startFakeServer,
  stepRequest,
} from "./fake_server.ts";

const FAST_RETRY = { initialDelayMs: 1, maxDelayMs: 5 };

/** What each protocol needs in these tests: the backend, a text answer, its events, an error. */
const PROTOCOLS = {
  anthropic: {
    backend: (server: FakeServer, options: Record<string, unknown> = {}) =>
      new AnthropicBackend({
        baseUrl: server.url,
        apiKey: "k",
        model: "claude-sonnet-5-5",
        retry: FAST_RETRY,
        ...options,
      }),
    text: (text: string) => anthropicMessage(text),
    events: (text: string) => anthropicEvents(anthropicMessage(text)),
    errorEvent: (type: string, message: string): SseEvent => ({
      event: "error",
      data: JSON.stringify({ type: "error", error: { type, message } }),
    }),
    http500: () => anthropicError(500, "api_error", "Internal server error"),
  },
  openai: {
    backend: (server: FakeServer, options: Record<string, unknown> = {}) =>
      new OpenAiBackend({
        baseUrl: `${server.url}/v1`,
        model: "qwen3",
        retry: FAST_RETRY,
        ...options,
      }),
    text: (text: string) => openAiCompletion(text),
    events: (text: string) => openAiChunks(openAiCompletion(text), { includeUsage: true }),
    errorEvent: (type: string, message: string): SseEvent => ({
      data: JSON.stringify({ error: { message, type, param: null, code: null } }),
    }),
    http500: () => openAiError(500, "server_error", "Internal server error"),
  },
} as const;

async function withServer(fn: (server: FakeServer) => Promise<void>): Promise<void> {
  const server = startFakeServer();
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

Deno.test("anthropic: a streamed answer reports its text piece by piece, with usage and cache counts", async () => {
  await withServer(async (server) => {
    server.push(anthropicMessage("The flaky test waits on a timer.", {
      inputTokens: 10,
      outputTokens: 8,
      cacheReadTokens: 100,
      cacheWriteTokens: 20,
    }));
    const pieces: string[] = [];
    const res = await PROTOCOLS.anthropic.backend(server).complete(stepRequest(), {
      onText: (t) => pieces.push(t),
    });
    assert.equal(res.text, "The flaky test waits on a timer.");
    assert.ok(pieces.length > 1, `streamed in pieces, got ${pieces.length}`);
    assert.equal(pieces.join(""), res.text);
    assert.deepEqual(res.usage, {
      inputTokens: 130,
      outputTokens: 8,
      cacheReadTokens: 100,
      cacheWriteTokens: 20,
    });
    assert.equal(server.requests[0].body.stream, true);
  });
});

Deno.test("openai: a streamed answer reports its text piece by piece and asks for the usage chunk", async () => {
  await withServer(async (server) => {
    server.push(openAiCompletion("Use fake timers in the login test.", {
      promptTokens: 30,
      completionTokens: 9,
      cachedTokens: 12,
    }));
    const pieces: string[] = [];
    const res = await PROTOCOLS.openai.backend(server).complete(stepRequest(), {
      onText: (t) => pieces.push(t),
    });
    assert.equal(res.text, "Use fake timers in the login test.");
    assert.ok(pieces.length > 1);
    assert.equal(pieces.join(""), res.text);
    assert.deepEqual(res.usage, { inputTokens: 30, outputTokens: 9, cacheReadTokens: 12 });
    assert.equal(server.requests[0].body.stream, true);
    assert.deepEqual(server.requests[0].body.stream_options, { include_usage: true });
  });
});

Deno.test("openai: a stream without a usage chunk (a local server) has usage unknown, not zero", async () => {
  await withServer(async (server) => {
    server.push({ sse: openAiChunks(openAiCompletion("hi"), { includeUsage: false }) });
    const res = await PROTOCOLS.openai.backend(server).complete(stepRequest());
    assert.equal(res.text, "hi");
    assert.equal(res.usage, undefined);
  });
});

for (const protocol of ["anthropic", "openai"] as const) {
  const p = PROTOCOLS[protocol];

  Deno.test(`${protocol}: stream: false sends plain requests and reports no text pieces`, async () => {
    await withServer(async (server) => {
      server.push(p.text("plain"));
      const pieces: string[] = [];
      const res = await p.backend(server, { stream: false }).complete(stepRequest(), {
        onText: (t) => pieces.push(t),
      });
      assert.equal(res.text, "plain");
      assert.deepEqual(pieces, []);
      assert.equal(server.requests[0].body.stream, undefined);
      assert.equal(server.requests[0].body.stream_options, undefined);
    });
  });

  Deno.test(`${protocol}: a stream cut mid-way is sent again; the retry is reported before the new text`, async () => {
    await withServer(async (server) => {
      const events = p.events("First attempt text that breaks off.");
      server.push({ sse: events.slice(0, 5), sseEnd: "cut" }, p.text("Second attempt."));
      const seen: string[] = [];
      const res = await p.backend(server).complete(stepRequest(), {
        onText: (t) => seen.push(`text:${t}`),
        onRetry: (r: RetryInfo) => seen.push(`retry:${r.reason}`),
      });
      assert.equal(res.text, "Second attempt.", "only the finished attempt's text is the answer");
      const retryAt = seen.findIndex((s) => s.startsWith("retry:"));
      assert.ok(retryAt > 0, `text before the retry: ${JSON.stringify(seen)}`);
      assert.match(seen[retryAt], /stream/);
      const after = seen.slice(retryAt + 1).map((s) => s.slice("text:".length)).join("");
      assert.equal(after, "Second attempt.", "the retried attempt starts its text again");
      assert.equal(server.requests.length, 2);
    });
  });

  Deno.test(`${protocol}: a stream that ends early on every attempt is BACKEND_STREAM_INTERRUPTED`, async () => {
    await withServer(async (server) => {
      const events = p.events("This answer is never finished by the server.");
      for (let i = 0; i < 3; i++) server.push({ sse: events.slice(0, 4) });
      const error = await p.backend(server).complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_STREAM_INTERRUPTED");
      assert.match(error.message, /ended before|broke off/);
      assert.match(error.message, /after 3 attempts/);
      assert.match(error.message, /--no-stream/);
      assert.equal(server.requests.length, 3);
    });
  });

  Deno.test(`${protocol}: an overloaded error event mid-stream is retried; a request error is not`, async () => {
    await withServer(async (server) => {
      const events = p.events("Some text first, and much more text that never arrives.");
      const overloaded = protocol === "anthropic" ? "overloaded_error" : "server_error";
      server.push(
        { sse: [...events.slice(0, 4), p.errorEvent(overloaded, "Overloaded")] },
        p.text("Recovered."),
      );
      const retries: RetryInfo[] = [];
      const res = await p.backend(server).complete(stepRequest(), {
        onRetry: (r) => retries.push(r),
      });
      assert.equal(res.text, "Recovered.");
      assert.equal(retries.length, 1);
      assert.match(retries[0].reason, new RegExp(`error in the stream: ${overloaded}: Overloaded`));

      server.push({
        sse: [...events.slice(0, 3), p.errorEvent("invalid_request_error", "Bad tool schema")],
      });
      const error = await p.backend(server).complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_STREAM_INTERRUPTED");
      assert.match(error.message, /invalid_request_error: Bad tool schema/);
      assert.equal(server.requests.length, 3, "the request error was not retried");
    });
  });

  Deno.test(`${protocol}: a 500 before the stream is retried, then the stream is read`, async () => {
    await withServer(async (server) => {
      server.push(p.http500(), p.text("After the 500."));
      const pieces: string[] = [];
      const res = await p.backend(server).complete(stepRequest(), {
        onText: (t) => pieces.push(t),
      });
      assert.equal(res.text, "After the 500.");
      assert.equal(pieces.join(""), "After the 500.");
      assert.equal(server.requests.length, 2);
    });
  });

  Deno.test(`${protocol}: a stream that hangs after its first chunk is ended by the per-call timeout`, async () => {
    await withServer(async (server) => {
      const events = p.events("Hanging answer.");
      server.push({ sse: events.slice(0, 4), sseEnd: "hang" });
      const started = performance.now();
      const error = await p.backend(server, { timeoutMs: 300, retry: { maxAttempts: 1 } })
        .complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_TIMEOUT");
      assert.ok(performance.now() - started < 5000);
    });
  });

  Deno.test(`${protocol}: a stream that hangs after its first chunk ends when the caller's signal fires`, async () => {
    await withServer(async (server) => {
      const events = p.events("Hanging answer.");
      server.push({ sse: events.slice(0, 4), sseEnd: "hang" });
      const controller = new AbortController();
      const pieces: string[] = [];
      const error = await p.backend(server).complete(stepRequest(), {
        signal: controller.signal,
        // The first text arrived: the hang is after it. Then the step's timeout fires.
        onText: (t) => {
          pieces.push(t);
          controller.abort(new DOMException("step timed out", "TimeoutError"));
        },
      }).then(() => undefined, (e) => e);
      assert.ok(pieces.length >= 1);
      assert.equal((error as Error).name, "TimeoutError");
      assert.equal((error as Error).message, "step timed out");
    });
  });

  Deno.test(`${protocol}: a JSON answer to a streamed request is BACKEND_BAD_RESPONSE naming --no-stream`, async () => {
    await withServer(async (server) => {
      server.push({ raw: JSON.stringify(p.text("not streamed").json) });
      const error = await p.backend(server).complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_BAD_RESPONSE");
      assert.match(error.message, /application\/json instead of server-sent events.*--no-stream/);
      assert.equal(server.requests.length, 1, "not retried");
    });
  });
}

async function project(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "stepflow_stream_tools_" });
  await Deno.writeTextFile(join(root, "app.ts"), "export const answer = 41;\n");
  return root;
}

Deno.test("anthropic: tool calls stream as input_json_delta fragments; a broken one goes back to the model as an error", async () => {
  const cwd = await project();
  await withServer(async (server) => {
    const events = anthropicEvents(
      anthropicToolUse([{ id: "toolu_bad", name: "Read", input: { file_path: "app.ts" } }], {
        text: "Reading.",
      }),
    );
    // The last fragment of the call's JSON goes missing: `{"file_path":"app.ts` is not JSON.
    const lastFragment = events.findLastIndex((e) => e.data.includes("input_json_delta"));
    const broken = events.filter((_, i) => i !== lastFragment);
    server.push(
      { sse: broken },
      anthropicToolUse([{ id: "toolu_ok", name: "Read", input: { file_path: "app.ts" } }]),
      anthropicMessage("The answer is 41."),
    );
    const pieces: string[] = [];
    const answer = await completeStepCall(
      PROTOCOLS.anthropic.backend(server),
      stepRequest({ cwd, allowedTools: ["Read"] }),
      { onText: (t) => pieces.push(t) },
    );
    assert.equal(answer.text, "The answer is 41.");
    assert.equal(pieces.join(""), "Reading.The answer is 41.");
    const second = server.requests[1].body.messages as { role: string; content: unknown }[];
    const results = second.at(-1)!.content as {
      tool_use_id: string;
      content: string;
      is_error?: boolean;
    }[];
    assert.equal(results[0].tool_use_id, "toolu_bad");
    assert.equal(results[0].is_error, true);
    assert.match(results[0].content, /not valid JSON/);
    // The broken call goes back as a tool_use with an object input, as the API requires.
    const call = (second.at(-2)!.content as { type: string; input?: unknown }[]).find((b) =>
      b.type === "tool_use"
    );
    assert.deepEqual(call?.input, {});
    const third = server.requests[2].body.messages as { role: string; content: unknown }[];
    const ok = third.at(-1)!.content as { content: string; is_error?: boolean }[];
    assert.equal(ok[0].is_error, undefined);
    assert.match(ok[0].content, /answer = 41/);
  });
});

Deno.test("openai: streamed tool calls are assembled by index from fragments; missing ids are made up", async () => {
  const cwd = await project();
  await withServer(async (server) => {
    server.push(
      openAiToolCalls([
        { name: "Read", arguments: '{"file_path":"app.ts"}' },
        { name: "Glob", arguments: '{"pattern":"*.ts"}' },
        { name: "Read", arguments: '{"file_path": "app.ts"' },
      ], { content: "Looking." }),
      openAiCompletion("Done: 41."),
    );
    const answer = await completeStepCall(
      PROTOCOLS.openai.backend(server),
      stepRequest({ cwd, allowedTools: ["Read", "Glob"] }),
      {},
    );
    assert.equal(answer.text, "Done: 41.");
    const messages = server.requests[1].body.messages as {
      role: string;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
      tool_call_id?: string;
      content?: string;
    }[];
    const assistant = messages.find((m) => m.role === "assistant")!;
    assert.deepEqual(assistant.tool_calls!.map((c) => c.function.name), ["Read", "Glob", "Read"]);
    assert.equal(assistant.tool_calls![1].function.arguments, '{"pattern":"*.ts"}');
    const ids = assistant.tool_calls!.map((c) => c.id);
    assert.equal(new Set(ids).size, 3, "each call has its own id");
    const results = messages.filter((m) => m.role === "tool");
    assert.deepEqual(results.map((r) => r.tool_call_id), ids);
    assert.match(results[0].content!, /answer = 41/);
    assert.match(results[1].content!, /app\.ts/);
    assert.match(results[2].content!, /not valid JSON/);
  });
});

Deno.test("openai: tool-call pieces without an index (some local servers) still make whole calls", async () => {
  const cwd = await project();
  await withServer(async (server) => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseEvent => ({
      data: JSON.stringify({ choices: [{ delta, finish_reason: finish }] }),
    });
    server.push(
      {
        sse: [
          chunk({ role: "assistant" }),
          chunk({ tool_calls: [{ function: { name: "Read", arguments: '{"file_' } }] }),
          chunk({ tool_calls: [{ function: { arguments: 'path":"app.ts"}' } }] }),
          chunk({
            tool_calls: [null, { function: { name: "Glob", arguments: { pattern: "*.ts" } } }],
          }),
          chunk({}, "tool_calls"),
          { data: "[DONE]" },
        ],
      },
      openAiCompletion("ok"),
    );
    await completeStepCall(
      PROTOCOLS.openai.backend(server),
      stepRequest({ cwd, allowedTools: ["Read", "Glob"] }),
      {},
    );
    const messages = server.requests[1].body.messages as {
      role: string;
      tool_calls?: { function: { name: string; arguments: string } }[];
      content?: string;
    }[];
    const calls = messages.find((m) => m.role === "assistant")!.tool_calls!;
    assert.deepEqual(calls.map((c) => [c.function.name, c.function.arguments]), [
      ["Read", '{"file_path":"app.ts"}'],
      ["Glob", '{"pattern":"*.ts"}'],
    ], "a null piece adds nothing; an object of arguments is sent as JSON text");
    const results = messages.filter((m) => m.role === "tool").map((m) => m.content!);
    assert.match(results[0], /answer = 41/);
    assert.match(results[1], /app\.ts/);
  });
});

Deno.test("a stream cut after its stop reason is a whole answer, not retried", async () => {
  await withServer(async (server) => {
    const anthropic = anthropicEvents(anthropicMessage("whole"));
    server.push({ sse: anthropic.slice(0, -1), sseEnd: "cut" }); // all but message_stop
    const a = await PROTOCOLS.anthropic.backend(server).complete(stepRequest());
    assert.equal(a.text, "whole");
    const openai = openAiChunks(openAiCompletion("whole"), { includeUsage: true });
    server.push({ sse: openai.slice(0, -2), sseEnd: "cut" }); // no usage chunk, no [DONE]
    const o = await PROTOCOLS.openai.backend(server).complete(stepRequest());
    assert.equal(o.text, "whole");
    assert.equal(o.usage, undefined);
    assert.equal(server.requests.length, 2);
  });
});

Deno.test("openai: events under another content type (a lax local server) are read as events", async () => {
  await withServer(async (server) => {
    server.push({
      sse: openAiChunks(openAiCompletion("lax but fine"), { includeUsage: true }),
      contentType: "text/plain",
    });
    const res = await PROTOCOLS.openai.backend(server).complete(stepRequest());
    assert.equal(res.text, "lax but fine");
  });
});

Deno.test("STEPFLOW_STREAM turns streaming off or on; anything else is a usage error", async () => {
  const build = (value: string | undefined, stream?: boolean) =>
    createBackend({
      name: "openai",
      baseUrl: "http://127.0.0.1:9/v1",
      model: "m",
      env: { STEPFLOW_STREAM: value },
      ...(stream !== undefined ? { stream } : {}),
    });
  assert.equal((await build(undefined) as OpenAiBackend).streams, true);
  assert.equal((await build("0") as OpenAiBackend).streams, false);
  assert.equal((await build("off") as OpenAiBackend).streams, false);
  assert.equal((await build("1") as OpenAiBackend).streams, true);
  assert.equal((await build("1", false) as OpenAiBackend).streams, false, "the option wins");
  await assert.rejects(
    () => build("maybe"),
    (e) => e instanceof UsageError && /STEPFLOW_STREAM/.test(e.message),
  );
});

Deno.test("STEPFLOW_HTTP_CLIENT=fetch sends a plain-http server's requests through fetch; the own client is the default; anything else is a usage error", async () => {
  await withServer(async (server) => {
    const build = (value: string | undefined, httpClient?: "stepflow" | "fetch") =>
      createBackend({
        name: "openai",
        baseUrl: `${server.url}/v1`,
        model: "m",
        env: { STEPFLOW_HTTP_CLIENT: value },
        ...(httpClient !== undefined ? { httpClient } : {}),
      });
    const chunks = openAiChunks(openAiCompletion("through"), { includeUsage: true });
    // The own client asks for no compression; Deno's fetch asks for gzip and br.
    const clientOf = async (backend: Promise<unknown>) => {
      server.push({ sse: chunks });
      const res = await (await backend as OpenAiBackend).complete(stepRequest());
      assert.equal(res.text, "through");
      return server.requests.at(-1)!.headers["accept-encoding"] === "identity"
        ? "stepflow"
        : "fetch";
    };
    const connections = http1Counters.connections;
    assert.equal(await clientOf(build("fetch")), "fetch");
    assert.equal(await clientOf(build(undefined, "fetch")), "fetch", "the option");
    assert.equal(http1Counters.connections, connections, "the own client made no connection");
    assert.equal(await clientOf(build(undefined)), "stepflow", "the default");
    assert.equal(await clientOf(build(" FETCH ", "stepflow")), "stepflow", "the option wins");
    await assert.rejects(
      () => build("curl"),
      (e) =>
        e instanceof UsageError &&
        /STEPFLOW_HTTP_CLIENT must be stepflow .* or fetch/.test(e.message),
    );
  });
});

Deno.test("openai: a bare event: line is passed over; an error event whose data is no JSON is still the server's error, retried", async () => {
  await withServer(async (server) => {
    const chunks = openAiChunks(openAiCompletion("kept alive"), { includeUsage: true });
    server.push({ sse: [chunks[0], { event: "keepalive", data: "" }, ...chunks.slice(1)] });
    const res = await new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "m" })
      .complete(stepRequest());
    assert.equal(res.text, "kept alive");

    server.push(
      { sse: [chunks[0], { event: "error", data: "upstream timed out" }] },
      { sse: chunks },
    );
    const retries: RetryInfo[] = [];
    const again = await new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "m" })
      .complete(stepRequest(), { onRetry: (r) => retries.push(r) });
    assert.equal(again.text, "kept alive");
    assert.equal(retries.length, 1);
    assert.match(retries[0].reason, /error in the stream: upstream timed out/);
  });
});
