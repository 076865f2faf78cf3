/**
 * The API backends (`openai`, `anthropic`) against real failure modes, through the official SDK
 * clients over real sockets on 127.0.0.1 — no hand-made error objects: a closed port, a server
 * that accepts the connection and never answers, error bodies in shapes the SDKs do not know
 * (`{"message": …}`, `{"error": "text"}`, plain text, HTML), and answers without `usage`.
 */
import assert from "node:assert/strict";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import type { ChatApiBackend, ChatBackendOptions } from "../../src/llm/chat_backend.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import type { RetryInfo } from "../../src/llm/retry.ts";
import {
  anthropicMessage,
  type FakeReply,
  openAiCompletion,
  startFakeServer,
  stepRequest,
} from "./fake_server.ts";

const FAST_RETRY = { initialDelayMs: 1, maxDelayMs: 5 };

/** The two API backends, each built against a server root URL. */
const BACKENDS: {
  name: string;
  make: (root: string, options?: ChatBackendOptions) => ChatApiBackend;
  ok: (text: string) => FakeReply;
}[] = [
  {
    name: "openai",
    make: (root, options = {}) =>
      new OpenAiBackend({
        baseUrl: `${root}/v1`,
        model: "llama3.2",
        retry: FAST_RETRY,
        ...options,
      }),
    ok: (text) => openAiCompletion(text),
  },
  {
    name: "anthropic",
    make: (root, options = {}) =>
      new AnthropicBackend({
        baseUrl: root,
        apiKey: "k",
        model: "claude-sonnet-5-5",
        retry: FAST_RETRY,
        ...options,
      }),
    ok: (text) => anthropicMessage(text),
  },
];

/** A port on 127.0.0.1 that nothing listens on (bound to port 0, then closed). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A server that accepts connections and never answers (a hung model server). */
function hangingServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const connections: Deno.Conn[] = [];
  const accepting = (async () => {
    try {
      for await (const conn of listener) connections.push(conn);
    } catch {
      // closed
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    connections,
    async close() {
      listener.close();
      for (const conn of connections) {
        try {
          conn.close();
        } catch {
          // already closed by the client
        }
      }
      await accepting;
    },
  };
}

for (const { name, make } of BACKENDS) {
  Deno.test(`${name}: a refused connection is BACKEND_NETWORK, retried, "is the server running?"`, async () => {
    const root = `http://127.0.0.1:${closedPort()}`;
    const retries: RetryInfo[] = [];
    const backend = make(root, { onRetry: (r) => retries.push(r) });
    const error = await backend.complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError, String(error));
    assert.equal(error.code, "BACKEND_NETWORK", error.message);
    assert.equal(error.details.attempts, 3, "retried under the default policy");
    assert.equal(retries.length, 2, "each retry reported");
    assert.match(error.message, /Connection refused/i, "the cause is named");
    const server = name === "openai" ? `${root}/v1` : root;
    assert.ok(
      error.message.includes(`is the server at ${server} running?`),
      `hint missing: ${error.message}`,
    );
  });

  Deno.test(`${name}: a server that drops the connection is BACKEND_NETWORK, retried`, async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const dropping = (async () => {
      try {
        for await (const conn of listener) conn.close();
      } catch {
        // closed
      }
    })();
    try {
      const root = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
      const error = await make(root).complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_NETWORK", error.message);
      assert.equal(error.details.attempts, 3);
    } finally {
      listener.close();
      await dropping;
    }
  });

  Deno.test(`${name}: a server that never answers is BACKEND_TIMEOUT after the retries`, async () => {
    const server = hangingServer();
    try {
      const started = performance.now();
      const error = await make(server.url, {
        timeoutMs: 150,
        retry: { ...FAST_RETRY, maxAttempts: 2 },
      })
        .complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_TIMEOUT", error.message);
      assert.equal(error.details.attempts, 2);
      assert.match(error.message, /per-call timeout of 150 ms/);
      assert.ok(performance.now() - started < 3000, "gave up promptly");
    } finally {
      await server.close();
    }
  });

  Deno.test(`${name}: error bodies in foreign shapes keep their message`, async () => {
    const server = startFakeServer();
    try {
      const backend = make(server.url, { retry: { maxAttempts: 1 } });
      const cases: [FakeReply, RegExp][] = [
        [{ status: 500, json: { message: "model not loaded" } }, /HTTP 500 model not loaded\./],
        [
          {
            status: 500,
            json: { error: "SyntaxError", message: "Unexpected token } in JSON at position 12" },
          },
          /HTTP 500 SyntaxError: Unexpected token \} in JSON at position 12\./,
        ],
        [{ status: 500, json: { error: "upstream crashed" } }, /HTTP 500 upstream crashed\./],
        [{ status: 422, json: { detail: "prompt too long" } }, /HTTP 422 prompt too long\./],
        [
          { status: 503, raw: "  the model is\n loading  ", contentType: "text/plain" },
          /HTTP 503 the model is loading\./,
        ],
        [
          {
            status: 502,
            raw:
              "<html><head><title>502 Bad Gateway</title></head><body><h1>nginx</h1></body></html>",
            contentType: "text/html",
          },
          /HTTP 502 502 Bad Gateway \(an HTML page\)\./,
        ],
      ];
      for (const [reply, expected] of cases) {
        server.push(reply);
        const error = await backend.complete(stepRequest()).then(() => undefined, (e) => e);
        assert.ok(error instanceof BackendError, String(error));
        assert.match(error.message, expected);
        assert.doesNotMatch(error.message, /"SyntaxError"/);
      }
    } finally {
      await server.close();
    }
  });

  Deno.test(`${name}: the server's x-should-retry header overrides the status rule`, async () => {
    const server = startFakeServer();
    try {
      const backend = make(server.url, { retry: { ...FAST_RETRY, maxAttempts: 2 } });
      server.push(
        { status: 400, json: { message: "try again" }, headers: { "x-should-retry": "true" } },
        BACKENDS.find((b) => b.name === name)!.ok("fine"),
      );
      assert.equal((await backend.complete(stepRequest())).text, "fine", "a 400 retried");
      server.push({ status: 503, json: { message: "no" }, headers: { "x-should-retry": "false" } });
      const error = await backend.complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.details.attempts, 1, "a 503 not retried");
      assert.equal(server.requests.length, 3);
    } finally {
      await server.close();
    }
  });

  Deno.test(`${name}: a huge error body is read only in part, and cut in the message`, async () => {
    const server = startFakeServer();
    try {
      server.push({ status: 400, raw: "x".repeat(5_000_000), contentType: "text/plain" });
      const error = await make(server.url).complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_HTTP_ERROR");
      assert.ok(error.message.length < 1000, `message of ${error.message.length} chars`);
      assert.match(error.message, /HTTP 400 x+…/);
    } finally {
      await server.close();
    }
  });
}

Deno.test("openai: an answer without usage has usage undefined, not zeros", async () => {
  const server = startFakeServer();
  try {
    const reply = openAiCompletion("hello");
    const { usage: _, ...json } = reply.json as Record<string, unknown>;
    server.push({ json }, { json: { ...json, usage: { prompt_tokens: 5 } } });
    const backend = new OpenAiBackend({
      baseUrl: `${server.url}/v1`,
      model: "m",
      pricing: { m: { inputUsdPerMTok: 1, outputUsdPerMTok: 1 } },
    });
    const res = await backend.complete(stepRequest());
    assert.equal(res.text, "hello");
    assert.equal(res.usage, undefined);
    assert.equal(res.costUsd, undefined, "no cost without usage");
    const partial = await backend.complete(stepRequest());
    assert.equal(partial.usage, undefined, "one count alone is not a usage");
  } finally {
    await server.close();
  }
});

Deno.test("anthropic: an answer without usage has usage undefined, not zeros", async () => {
  const server = startFakeServer();
  try {
    const { usage: _, ...json } = anthropicMessage("hello").json as Record<string, unknown>;
    server.push({ json }, { json: { ...json, usage: { input_tokens: 5 } } });
    // Plain answers: a streamed one always has message_start's usage.
    const backend = new AnthropicBackend({
      baseUrl: server.url,
      apiKey: "k",
      model: "m",
      stream: false,
    });
    const res = await backend.complete(stepRequest());
    assert.equal(res.text, "hello");
    assert.equal(res.usage, undefined);
    const partial = await backend.complete(stepRequest());
    assert.equal(partial.usage, undefined, "one count alone is not a usage");
  } finally {
    await server.close();
  }
});
