/**
 * The `openai` backend against a fake OpenAI-compatible server on 127.0.0.1 (the shape Ollama,
 * vLLM and LM Studio serve), driven through the official `openai` client over a real socket.
 */
import assert from "node:assert/strict";
import { chatAnswerJson } from "./answer_json.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import { createBackend } from "../../src/llm/factory.ts";
import { OpenAiBackend, type OpenAiBackendOptions } from "../../src/llm/openai.ts";
import type { RetryInfo } from "../../src/llm/retry.ts";
import {
  type FakeServer,
  openAiCompletion,
  openAiError,
  startFakeServer,
  stepRequest,
  VERDICT_SCHEMA,
} from "./fake_server.ts";

const FAST_RETRY = { initialDelayMs: 1, maxDelayMs: 5 };

async function withServer(
  fn: (server: FakeServer, backend: (o?: OpenAiBackendOptions) => OpenAiBackend) => Promise<void>,
) {
  const server = startFakeServer();
  try {
    await fn(server, (options = {}) =>
      new OpenAiBackend({
        baseUrl: `${server.url}/v1`,
        model: "llama3.2",
        retry: FAST_RETRY,
        ...options,
      }));
  } finally {
    await server.close();
  }
}

Deno.test("openai: structured output through response_format json_schema, usage, session", async () => {
  await withServer(async (server, backend) => {
    server.push(openAiCompletion('{"verdict":"ng","reason":"flaky"}', {
      promptTokens: 300,
      completionTokens: 40,
    }));
    const b = backend({
      apiKey: "sk-local",
      maxTokens: 512,
      pricing: { "llama3.2": { inputUsdPerMTok: 1, outputUsdPerMTok: 2 } },
    });
    const res = await b.complete(stepRequest({
      systemPrompt: "You are a careful engineer.",
      outputSchema: VERDICT_SCHEMA,
    }));
    assert.deepEqual(chatAnswerJson(res), { verdict: "ng", reason: "flaky" });
    assert.deepEqual(res.usage, { inputTokens: 300, outputTokens: 40 });
    assert.equal(res.costUsd, (300 * 1 + 40 * 2) / 1e6);
    assert.match(res.sessionId ?? "", /^[0-9a-f-]{36}$/);

    assert.equal(server.requests.length, 1);
    const [req] = server.requests;
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/v1/chat/completions");
    assert.equal(req.headers.authorization, "Bearer sk-local");
    assert.equal(req.body.model, "llama3.2");
    assert.equal(req.body.max_tokens, 512, "max_tokens for OpenAI-compatible servers");
    assert.deepEqual(req.body.response_format, {
      type: "json_schema",
      json_schema: { name: "initial_issue", schema: VERDICT_SCHEMA, strict: false },
    });
    assert.deepEqual(req.body.messages, [
      { role: "system", content: "You are a careful engineer." },
      { role: "user", content: "Fix the flaky login test." },
    ]);
  });
});

Deno.test("openai: the conversation continues across the iterations of a run", async () => {
  await withServer(async (server, backend) => {
    server.push(openAiCompletion("one"), openAiCompletion("two"), openAiCompletion("three"));
    const b = backend();
    const r1 = await b.complete(stepRequest({ prompt: "p1", systemPrompt: "S" }));
    const r2 = await b.complete(
      stepRequest({ prompt: "p2", systemPrompt: "S", iteration: 2, sessionId: r1.sessionId }),
    );
    await b.complete(
      stepRequest({ prompt: "p3", systemPrompt: "S", iteration: 3, sessionId: r2.sessionId }),
    );
    assert.equal(r2.sessionId, r1.sessionId);
    assert.deepEqual(server.requests[2].body.messages, [
      { role: "system", content: "S" },
      { role: "user", content: "p1" },
      { role: "assistant", content: "one" },
      { role: "user", content: "p2" },
      { role: "assistant", content: "two" },
      { role: "user", content: "p3" },
    ]);
    // Another run (no session id) starts afresh.
    server.push(openAiCompletion("fresh"));
    await b.complete(stepRequest({ prompt: "new run" }));
    assert.deepEqual(server.requests[3].body.messages, [{ role: "user", content: "new run" }]);
  });
});

Deno.test("openai: a 429 with Retry-After is retried after the server's delay", async () => {
  await withServer(async (server, backend) => {
    server.push(
      openAiError(429, "rate_limit_exceeded", "Rate limit reached for requests", {
        "retry-after": "1",
      }),
      openAiCompletion('{"verdict":"ok"}'),
    );
    const retries: RetryInfo[] = [];
    const started = performance.now();
    const res = await backend({ onRetry: (r) => retries.push(r) }).complete(
      stepRequest({ outputSchema: VERDICT_SCHEMA }),
    );
    assert.deepEqual(chatAnswerJson(res), { verdict: "ok" });
    assert.equal(server.requests.length, 2);
    assert.equal(retries.length, 1);
    assert.equal(retries[0].backend, "openai");
    assert.equal(retries[0].status, 429);
    assert.equal(retries[0].delayMs, 1000);
    assert.match(retries[0].reason, /HTTP 429 rate_limit_exceeded: Rate limit reached/);
    assert.ok(performance.now() - started >= 950);
  });
});

Deno.test("openai: a 5xx storm exhausts the retries", async () => {
  await withServer(async (server, backend) => {
    server.push(
      openAiError(502, "server_error", "Bad gateway"),
      openAiError(500, "server_error", "The server had an error"),
      openAiError(500, "server_error", "The server had an error"),
    );
    const retries: RetryInfo[] = [];
    const error = await backend({ onRetry: (r) => retries.push(r) }).complete(stepRequest())
      .then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError);
    assert.equal(error.code, "BACKEND_UNAVAILABLE");
    assert.equal(error.details.attempts, 3);
    assert.match(
      error.message,
      /HTTP 500 server_error: The server had an error \(after 3 attempts\)/,
    );
    assert.equal(server.requests.length, 3);
    assert.equal(retries.length, 2);
  });
});

Deno.test("openai: a 400 is not retried; a 404 names the model and the server", async () => {
  await withServer(async (server, backend) => {
    server.push(openAiError(400, "invalid_request_error", "messages: too long"));
    const error = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError);
    assert.equal(error.code, "BACKEND_HTTP_ERROR");
    assert.equal(error.details.attempts, 1);
    assert.equal(server.requests.length, 1);

    server.push(openAiError(404, "api_error", 'model "llama9" not found, try pulling it first'));
    const missing = await backend({ model: "llama9" }).complete(stepRequest())
      .then(() => undefined, (e) => e);
    assert.ok(missing instanceof BackendError);
    assert.equal(missing.code, "BACKEND_HTTP_ERROR");
    assert.match(missing.message, /does not know model "llama9"/);
    assert.match(missing.message, /ollama pull llama9/);
    assert.equal(server.requests.length, 2);
  });
});

Deno.test("openai: the per-call timeout ends a hung call, retried then reported", async () => {
  await withServer(async (server, backend) => {
    server.push({ ...openAiCompletion("late"), delayMs: 3000 }, {
      ...openAiCompletion("late"),
      delayMs: 3000,
    });
    const retries: RetryInfo[] = [];
    const started = performance.now();
    const error = await backend({
      timeoutMs: 150,
      retry: { ...FAST_RETRY, maxAttempts: 2 },
      onRetry: (r) => retries.push(r),
    }).complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError, String(error));
    assert.equal(error.code, "BACKEND_TIMEOUT");
    assert.equal(server.requests.length, 2);
    assert.equal(retries.length, 1);
    assert.match(retries[0].reason, /timeout of 150 ms/);
    assert.ok(performance.now() - started < 2000);
  });
});

Deno.test("openai: malformed bodies are BACKEND_BAD_RESPONSE", async () => {
  await withServer(async (server, backend) => {
    server.push({ raw: '{"choices": [' });
    const broken = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(broken instanceof BackendError, String(broken));
    assert.equal(broken.code, "BACKEND_BAD_RESPONSE");

    server.push({ raw: "<html>Bad gateway</html>", contentType: "text/html" });
    const html = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(html instanceof BackendError);
    assert.equal(html.code, "BACKEND_BAD_RESPONSE");
    assert.match(
      html.message,
      /web page \(text\/html\).*does not answer like an OpenAI-compatible API/,
    );
    server.push({ raw: "<html>Bad gateway</html>", contentType: "text/html" });
    const plain = await backend({ stream: false }).complete(stepRequest())
      .then(() => undefined, (e) => e);
    assert.ok(plain instanceof BackendError);
    assert.equal(plain.code, "BACKEND_BAD_RESPONSE");
    assert.match(plain.message, /no choices\[0\]\.message.*<html>Bad gateway/);
    assert.equal(server.requests.length, 3, "none was retried");
  });
});

Deno.test("openai: cancelling aborts the call in flight", async () => {
  await withServer(async (server, backend) => {
    server.push({ ...openAiCompletion("slow"), delayMs: 3000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new DOMException("run cancelled", "AbortError")), 100);
    const started = performance.now();
    const error = await backend().complete(stepRequest(), { signal: controller.signal })
      .then(() => undefined, (e) => e);
    assert.equal((error as Error).name, "AbortError");
    assert.equal((error as Error).message, "run cancelled", "the signal's own reason");
    assert.ok(performance.now() - started < 1500);
    assert.equal(server.requests.length, 1);
  });
});

Deno.test("openai: a server without json_schema support gets the schema in the prompt", async () => {
  await withServer(async (server, backend) => {
    server.push(
      openAiError(400, "invalid_request_error", "response_format type json_schema is unavailable"),
      openAiCompletion('Sure. {"verdict": "ok", "reason": "the {braces} in text"} Done.'),
    );
    const warnings: string[] = [];
    const res = await backend({ onWarning: (w) => warnings.push(w) })
      .complete(stepRequest({ outputSchema: VERDICT_SCHEMA }));
    assert.deepEqual(chatAnswerJson(res), { verdict: "ok", reason: "the {braces} in text" });
    assert.equal(warnings.length, 1);
    assert.equal(server.requests[1].body.response_format, undefined);
    const messages = server.requests[1].body.messages as { content: string }[];
    assert.match(
      messages[0].content,
      /Answer with a single JSON object that matches this JSON Schema/,
    );
  });
});

Deno.test("openai: structuredOutput 'prompt' never sends response_format", async () => {
  await withServer(async (server, backend) => {
    server.push(openAiCompletion('```json\n{"verdict":"ok"}\n```'));
    const res = await backend({ structuredOutput: "prompt" })
      .complete(stepRequest({ outputSchema: VERDICT_SCHEMA }));
    assert.deepEqual(chatAnswerJson(res), { verdict: "ok" });
    assert.equal(server.requests[0].body.response_format, undefined);
  });
});

Deno.test("openai: refusals fail the call; truncated answers warn", async () => {
  await withServer(async (server, backend) => {
    server.push(openAiCompletion(null, { refusal: "I cannot do that." }));
    const refused = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(refused instanceof BackendError);
    assert.equal(refused.code, "BACKEND_REFUSED");
    assert.match(refused.message, /I cannot do that\./);

    server.push(openAiCompletion('{"verdict":', { finishReason: "length" }));
    const warnings: string[] = [];
    const cut = await backend({ onWarning: (w) => warnings.push(w), maxTokens: 5 })
      .complete(stepRequest({ outputSchema: VERDICT_SCHEMA }));
    assert.equal(cut.structuredOutput, undefined, "no JSON in a cut answer");
    assert.match(warnings[0], /cut at the token limit \(maxTokens 5\)/);
  });
});

Deno.test("openai: createBackend with --base-url needs no key (Ollama style)", async () => {
  await withServer(async (server) => {
    server.push(openAiCompletion("hello from a local model"));
    const backend = await createBackend({
      name: "openai",
      baseUrl: `${server.url}/v1/`,
      model: "qwen3",
      env: {},
    });
    const res = await backend.complete(stepRequest());
    assert.equal(res.text, "hello from a local model");
    assert.equal(server.requests[0].path, "/v1/chat/completions");
    assert.equal(server.requests[0].body.model, "qwen3");
  });
});

Deno.test("openai: OPENAI_BASE_URL and OPENAI_API_KEY come from the environment", async () => {
  await withServer(async (server) => {
    server.push(openAiCompletion("ok"));
    const backend = await createBackend({
      name: "openai",
      model: "m",
      env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: "sk-env" },
    });
    await backend.complete(stepRequest());
    assert.equal(server.requests[0].headers.authorization, "Bearer sk-env");
  });
});
