/**
 * The `anthropic` backend against a fake Messages API server on 127.0.0.1, driven through the
 * official `@anthropic-ai/sdk` client over a real socket.
 */
import assert from "node:assert/strict";
import { chatAnswerJson } from "./answer_json.ts";
import { AnthropicBackend, type AnthropicBackendOptions } from "../../src/llm/anthropic.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import { createBackend, DEFAULT_ANTHROPIC_MODEL } from "../../src/llm/factory.ts";
import type { RetryInfo } from "../../src/llm/retry.ts";
import {
  anthropicError,
  anthropicMessage,
  type FakeServer,
  type RecordedRequest,
  startFakeServer,
  stepRequest,
  VERDICT_SCHEMA,
} from "./fake_server.ts";

const FAST_RETRY = { initialDelayMs: 1, maxDelayMs: 5 };

/** The API key as this SDK version sends it (`x-api-key`, or `Authorization: Bearer`). */
function sentKey(req: RecordedRequest): string | undefined {
  return req.headers["x-api-key"] ?? req.headers.authorization?.replace(/^Bearer /, "");
}

async function withServer(
  fn: (server: FakeServer, backend: (o?: AnthropicBackendOptions) => AnthropicBackend) => Promise<
    void
  >,
) {
  const server = startFakeServer();
  try {
    await fn(server, (options = {}) =>
      new AnthropicBackend({
        apiKey: "sk-ant-test",
        baseUrl: server.url,
        model: "claude-sonnet-5-5",
        retry: FAST_RETRY,
        ...options,
      }));
  } finally {
    await server.close();
  }
}

const EPHEMERAL = { type: "ephemeral" };

Deno.test("anthropic: structured output through output_config.format, usage, cost, session", async () => {
  await withServer(async (server, backend) => {
    server.push(anthropicMessage('{"verdict":"ok","reason":"tests pass"}', {
      inputTokens: 1000,
      outputTokens: 500,
    }));
    const b = backend({
      maxTokens: 2048,
      pricing: { "claude-opus-4-1": { inputUsdPerMTok: 15, outputUsdPerMTok: 75 } },
    });
    const res = await b.complete(stepRequest({
      systemPrompt: "You are a careful engineer.",
      outputSchema: VERDICT_SCHEMA,
      model: "claude-opus-4-1",
    }));
    assert.deepEqual(chatAnswerJson(res), { verdict: "ok", reason: "tests pass" });
    assert.deepEqual(res.usage, { inputTokens: 1000, outputTokens: 500 });
    assert.equal(res.costUsd, (1000 * 15 + 500 * 75) / 1e6);
    assert.match(res.sessionId ?? "", /^[0-9a-f-]{36}$/);

    assert.equal(server.requests.length, 1);
    const [req] = server.requests;
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/v1/messages");
    assert.equal(sentKey(req), "sk-ant-test");
    assert.ok(req.headers["anthropic-version"], "the SDK sends anthropic-version");
    assert.equal(req.body.model, "claude-opus-4-1");
    assert.equal(req.body.max_tokens, 2048);
    // The system prompt and the last turn carry the prompt-cache breakpoints.
    assert.deepEqual(req.body.system, [{
      type: "text",
      text: "You are a careful engineer.",
      cache_control: { type: "ephemeral" },
    }]);
    assert.deepEqual(req.body.output_config, {
      format: { type: "json_schema", schema: VERDICT_SCHEMA },
    });
    assert.deepEqual(req.body.messages, [{
      role: "user",
      content: [{ type: "text", text: "Fix the flaky login test.", cache_control: EPHEMERAL }],
    }]);
  });
});

Deno.test("anthropic: the conversation continues across calls with the same sessionId", async () => {
  await withServer(async (server, backend) => {
    server.push(anthropicMessage("first answer"), anthropicMessage("second answer"));
    const b = backend();
    const first = await b.complete(stepRequest({ prompt: "one" }));
    const second = await b.complete(stepRequest({ prompt: "two", sessionId: first.sessionId }));
    assert.equal(second.sessionId, first.sessionId);
    assert.equal(second.text, "second answer");
    assert.equal(second.structuredOutput, undefined, "no schema asked, none parsed");
    // Only the last turn is marked: the prefix before it is what the next call reads again.
    assert.deepEqual(server.requests[1].body.messages, [
      { role: "user", content: "one" },
      { role: "assistant", content: "first answer" },
      { role: "user", content: [{ type: "text", text: "two", cache_control: EPHEMERAL }] },
    ]);
    assert.equal(server.requests[1].body.model, "claude-sonnet-5-5", "the backend's model");
  });
});

Deno.test("anthropic: a 429 with Retry-After is retried after the server's delay", async () => {
  await withServer(async (server, backend) => {
    server.push(
      anthropicError(429, "rate_limit_error", "Number of requests has exceeded your rate limit", {
        "retry-after": "1",
      }),
      anthropicMessage('{"verdict":"ok"}'),
    );
    const retries: RetryInfo[] = [];
    const started = performance.now();
    const res = await backend({ onRetry: (r) => retries.push(r) }).complete(
      stepRequest({ outputSchema: VERDICT_SCHEMA, iteration: 4 }),
    );
    const elapsed = performance.now() - started;
    assert.deepEqual(chatAnswerJson(res), { verdict: "ok" });
    assert.equal(server.requests.length, 2);
    assert.equal(retries.length, 1);
    assert.equal(retries[0].status, 429);
    assert.equal(retries[0].delayMs, 1000, "Retry-After: 1 → 1000 ms, not the 1 ms backoff");
    assert.equal(retries[0].attempt, 1);
    assert.equal(retries[0].maxAttempts, 3);
    assert.equal(retries[0].stepId, "initial.issue");
    assert.equal(retries[0].iteration, 4);
    assert.match(retries[0].reason, /429 rate_limit_error/);
    assert.ok(elapsed >= 950, `waited ${elapsed} ms`);
  });
});

Deno.test("anthropic: a 5xx storm exhausts the retries with one report per retry", async () => {
  await withServer(async (server, backend) => {
    server.push(
      anthropicError(500, "api_error", "Internal server error"),
      anthropicError(529, "overloaded_error", "Overloaded"),
      anthropicError(503, "api_error", "Service unavailable"),
    );
    const retries: RetryInfo[] = [];
    const error = await backend({ onRetry: (r) => retries.push(r) }).complete(stepRequest())
      .then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError);
    assert.equal(error.code, "BACKEND_UNAVAILABLE");
    assert.equal(error.details.attempts, 3);
    assert.equal(error.details.status, 503);
    assert.match(error.message, /anthropic backend in step "initial.issue": HTTP 503/);
    assert.match(error.message, /after 3 attempts/);
    assert.equal(server.requests.length, 3);
    assert.deepEqual(retries.map((r) => [r.attempt, r.status]), [[1, 500], [2, 529]]);
    assert.ok(retries.every((r) => r.delayMs >= 0 && r.delayMs < 5), "full jitter under the cap");
  });
});

Deno.test("anthropic: a 400 is not retried and its API message is shown", async () => {
  await withServer(async (server, backend) => {
    server.push(
      anthropicError(400, "invalid_request_error", "max_tokens: must be at most 64000"),
      anthropicMessage("never reached"),
    );
    const error = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError);
    assert.equal(error.code, "BACKEND_HTTP_ERROR");
    assert.equal(error.details.attempts, 1);
    assert.match(
      error.message,
      /HTTP 400 invalid_request_error: max_tokens: must be at most 64000/,
    );
    assert.equal(server.requests.length, 1);
  });
});

Deno.test("anthropic: 401 says to check ANTHROPIC_API_KEY", async () => {
  await withServer(async (server, backend) => {
    server.push(anthropicError(401, "authentication_error", "invalid x-api-key"));
    const error = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError);
    assert.equal(error.code, "BACKEND_AUTH");
    assert.match(error.message, /ANTHROPIC_API_KEY/);
    assert.equal(server.requests.length, 1);
  });
});

Deno.test("anthropic: a call that outlives the per-call timeout is retried, then fails", async () => {
  await withServer(async (server, backend) => {
    server.push({ ...anthropicMessage("late"), delayMs: 3000 }, {
      ...anthropicMessage("late"),
      delayMs: 3000,
    });
    const started = performance.now();
    const error = await backend({ timeoutMs: 150, retry: { ...FAST_RETRY, maxAttempts: 2 } })
      .complete(stepRequest()).then(() => undefined, (e) => e);
    const elapsed = performance.now() - started;
    assert.ok(error instanceof BackendError, String(error));
    assert.equal(error.code, "BACKEND_TIMEOUT");
    assert.match(error.message, /per-call timeout of 150 ms/);
    assert.equal(server.requests.length, 2);
    assert.ok(elapsed < 2000, `gave up after ${elapsed} ms`);
  });
});

Deno.test("anthropic: a malformed body is a BACKEND_BAD_RESPONSE, not retried", async () => {
  await withServer(async (server, backend) => {
    server.push({ raw: '{"id":"msg_1","content":[{"type":"text","text":"trunc' });
    const error = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError, String(error));
    assert.equal(error.code, "BACKEND_BAD_RESPONSE");
    assert.equal(server.requests.length, 1);

    // Answered without streaming (the stream's events are checked in tests/llm/streaming_test.ts).
    server.push({ json: { id: "msg_2", type: "message" } });
    const shape = await backend({ stream: false }).complete(stepRequest()).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(shape instanceof BackendError);
    assert.equal(shape.code, "BACKEND_BAD_RESPONSE");
    assert.match(shape.message, /no content array/);
  });
});

Deno.test("anthropic: cancelling the run aborts the call in flight, without retries", async () => {
  await withServer(async (server, backend) => {
    server.push({ ...anthropicMessage("slow"), delayMs: 3000 });
    const controller = new AbortController();
    const retries: RetryInfo[] = [];
    setTimeout(() => controller.abort(), 100);
    const started = performance.now();
    const error = await backend({ onRetry: (r) => retries.push(r) })
      .complete(stepRequest(), { signal: controller.signal }).then(() => undefined, (e) => e);
    assert.equal((error as Error).name, "AbortError");
    assert.ok(performance.now() - started < 1500);
    assert.equal(retries.length, 0);
    assert.equal(server.requests.length, 1);

    const already = await backend().complete(stepRequest(), { signal: controller.signal })
      .then(() => undefined, (e) => e);
    assert.equal((already as Error).name, "AbortError", "an aborted signal sends nothing");
    assert.equal(server.requests.length, 1);
  });
});

Deno.test("anthropic: a server that rejects the schema parameter gets the schema in the prompt", async () => {
  await withServer(async (server, backend) => {
    server.push(
      anthropicError(
        400,
        "invalid_request_error",
        "output_config.format: structured outputs are not supported for this model",
      ),
      anthropicMessage('Here you go:\n```json\n{"verdict":"ng","reason":"flaky"}\n```'),
      anthropicMessage('{"verdict":"ok"}'),
    );
    const warnings: string[] = [];
    const b = backend({ onWarning: (w) => warnings.push(w) });
    const res = await b.complete(stepRequest({ outputSchema: VERDICT_SCHEMA }));
    assert.deepEqual(chatAnswerJson(res), { verdict: "ng", reason: "flaky" });
    assert.equal(b.structuredOutputMode, "prompt");
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /rejected the JSON-schema parameter/);
    assert.equal(server.requests.length, 2);
    assert.ok(server.requests[0].body.output_config, "native first");
    assert.equal(server.requests[1].body.output_config, undefined);
    const prompt = (server.requests[1].body.messages as { content: { text: string }[] }[])[0]
      .content[0].text;
    assert.match(prompt, /^Fix the flaky login test\.\n\nAnswer with a single JSON object/);
    assert.ok(
      prompt.includes(JSON.stringify(VERDICT_SCHEMA)),
      "the schema, compact, is in the prompt",
    );

    const next = await b.complete(stepRequest({ outputSchema: VERDICT_SCHEMA }));
    assert.deepEqual(chatAnswerJson(next), { verdict: "ok" });
    assert.equal(server.requests[2].body.output_config, undefined, "stays in prompt mode");
    assert.equal(warnings.length, 1, "warned once");
  });
});

Deno.test("anthropic: a refusal is a BACKEND_REFUSED error", async () => {
  await withServer(async (server, backend) => {
    server.push(anthropicMessage("I can't help with that.", { stopReason: "refusal" }));
    const error = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError);
    assert.equal(error.code, "BACKEND_REFUSED");
    assert.match(error.message, /refused to answer: I can't help with that\./);

    const detailed = anthropicMessage("", { stopReason: "refusal" });
    (detailed.json as Record<string, unknown>).stop_details = {
      type: "refusal",
      category: "cyber",
      explanation: "This looks like exploit development.",
    };
    server.push(detailed);
    const explained = await backend().complete(stepRequest()).then(() => undefined, (e) => e);
    assert.match(explained.message, /This looks like exploit development\. \(category: cyber\)/);
  });
});

Deno.test("anthropic: createBackend reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL", async () => {
  await withServer(async (server) => {
    server.push(anthropicMessage("hi"));
    const backend = await createBackend({
      name: "anthropic",
      env: { ANTHROPIC_API_KEY: "from-env", ANTHROPIC_BASE_URL: server.url },
    });
    assert.equal(backend.name, "anthropic");
    const res = await backend.complete(stepRequest());
    assert.equal(res.text, "hi");
    assert.equal(sentKey(server.requests[0]), "from-env");
    assert.equal(server.requests[0].body.model, DEFAULT_ANTHROPIC_MODEL);
  });
});
