/** The retry policy: backoff with full jitter, Retry-After, classification, withRetry. */
import assert from "node:assert/strict";
import { UsageError } from "../../src/errors.ts";
import {
  classifyHttpFailure,
  DEFAULT_RETRY_POLICY,
  describeErrorBody,
  ERROR_BODY_MESSAGE_MAX,
  isRetryableStatus,
  jitteredBackoff,
  parseRetryAfter,
  resolveRetryPolicy,
  RetryExhausted,
  type RetryInfo,
  withRetry,
} from "../../src/llm/retry.ts";

const httpError = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`${status} status`), { status, headers: new Headers(headers) });

Deno.test("retry: defaults are 3 attempts, 500 ms initial, factor 2, 30 s cap", () => {
  assert.equal(DEFAULT_RETRY_POLICY.maxAttempts, 3);
  assert.equal(DEFAULT_RETRY_POLICY.initialDelayMs, 500);
  assert.equal(DEFAULT_RETRY_POLICY.factor, 2);
  assert.equal(DEFAULT_RETRY_POLICY.maxDelayMs, 30_000);
  assert.deepEqual(resolveRetryPolicy(), { ...DEFAULT_RETRY_POLICY });
  assert.equal(resolveRetryPolicy({ maxAttempts: 5.7 }).maxAttempts, 5);
  assert.throws(() => resolveRetryPolicy({ maxAttempts: 0 }), UsageError);
  assert.throws(() => resolveRetryPolicy({ factor: Number.NaN }), /factor must be a number ≥ 1/);
  assert.throws(
    () => resolveRetryPolicy({ tries: 2 } as never),
    /Unknown retry option "tries"; allowed: maxAttempts/,
  );
});

Deno.test("retry: full jitter stays within the exponential bound and its cap", () => {
  const p = DEFAULT_RETRY_POLICY;
  assert.equal(jitteredBackoff(1, p, () => 0), 0);
  assert.equal(jitteredBackoff(1, p, () => 0.999999), 499);
  assert.equal(jitteredBackoff(2, p, () => 0.5), 500);
  assert.equal(jitteredBackoff(4, p, () => 0.5), 2000);
  assert.equal(jitteredBackoff(20, p, () => 0.5), 15_000, "capped at 30 s before the jitter");
  // Spread: many draws cover the whole range [0, bound).
  const draws = Array.from({ length: 2000 }, () => jitteredBackoff(3, p));
  assert.ok(draws.every((d) => d >= 0 && d < 2000));
  assert.ok(Math.min(...draws) < 200 && Math.max(...draws) > 1800, "full jitter, not ±25 %");
});

Deno.test("retry: Retry-After as seconds, HTTP date or retry-after-ms", () => {
  assert.equal(parseRetryAfter(new Headers({ "retry-after": "3" })), 3000);
  assert.equal(parseRetryAfter({ "Retry-After": "0" }), 0);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(
    parseRetryAfter(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }), now),
    5000,
  );
  assert.equal(
    parseRetryAfter(new Headers({ "retry-after": "Wed, 31 Dec 2025 00:00:00 GMT" }), now),
    0,
    "a date in the past means now",
  );
  assert.equal(parseRetryAfter(new Headers({ "retry-after-ms": "250", "retry-after": "9" })), 250);
  assert.equal(parseRetryAfter(new Headers({ "retry-after": "soon" })), undefined);
  assert.equal(parseRetryAfter(undefined), undefined);
});

Deno.test("retry: 408, 409, 429 and 5xx are transient; other 4xx are not", () => {
  for (const s of [408, 409, 429, 500, 502, 503, 504, 529]) assert.ok(isRetryableStatus(s), `${s}`);
  for (const s of [400, 401, 403, 404, 413, 422]) assert.ok(!isRetryableStatus(s), `${s}`);
  // How SDK errors are classified is tested against real servers (real_failures_test.ts).
});

Deno.test("retry: a real refused fetch is a retryable network failure, by cause not name", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  const error = await fetch(`http://127.0.0.1:${port}/`).then(() => undefined, (e) => e);
  const direct = classifyHttpFailure(error);
  assert.deepEqual([direct.retryable, direct.kind], [true, "network"]);
  assert.match(direct.reason, /Connection refused/i);
  // Wrapped the way the SDKs wrap it (their connection error carries fetch's error as cause).
  const wrapped = classifyHttpFailure(new Error("Connection error.", { cause: error }));
  assert.deepEqual([wrapped.retryable, wrapped.kind], [true, "network"]);
  assert.match(wrapped.reason, /Connection refused/i, "the innermost cause is reported");
});

Deno.test("describeErrorBody: the message of every body shape, bounded", () => {
  assert.equal(describeErrorBody('{"message":"model not loaded"}'), "model not loaded");
  assert.equal(
    describeErrorBody('{"error":"SyntaxError","message":"Unexpected token"}'),
    "SyntaxError: Unexpected token",
  );
  assert.equal(
    describeErrorBody('{"error":{"type":"invalid_request_error","message":"bad"}}'),
    "invalid_request_error: bad",
  );
  assert.equal(describeErrorBody('{"detail":[{"loc":["body"]}]}'), '[{"loc":["body"]}]');
  assert.equal(describeErrorBody('{"weird":1}'), '{"weird":1}');
  assert.equal(
    describeErrorBody("<html><body><h1>Oops</h1>\n<p>down</p></body></html>"),
    "Oops down (an HTML page)",
  );
  assert.equal(describeErrorBody(" \n "), "(empty body)");
  // Linear on hostile bodies (the backend reads at most 64 KB of one).
  const started = performance.now();
  for (const body of ["<".repeat(65_536), "<title".repeat(10_000) + "</b>", "<a".repeat(30_000)]) {
    assert.ok(describeErrorBody(body).length <= ERROR_BODY_MESSAGE_MAX);
  }
  assert.ok(performance.now() - started < 1_000, "hostile HTML bodies are read in linear time");
  const long = describeErrorBody("y".repeat(10_000));
  assert.equal(long.length, ERROR_BODY_MESSAGE_MAX);
  assert.ok(long.endsWith("…"));
});

Deno.test("withRetry: retries transient failures and reports each retry", async () => {
  const retries: RetryInfo[] = [];
  let calls = 0;
  const value = await withRetry(() => {
    calls++;
    if (calls < 3) return Promise.reject(httpError(calls === 1 ? 429 : 503));
    return Promise.resolve("done");
  }, {
    backend: "test",
    policy: resolveRetryPolicy({ initialDelayMs: 10 }),
    onRetry: [(r) => retries.push(r), () => {
      throw new Error("a broken listener is ignored");
    }],
    context: { stepId: "s1", iteration: 2 },
    random: () => 0.5,
  });
  assert.equal(value, "done");
  assert.equal(calls, 3);
  assert.deepEqual(
    retries.map((r) => [r.attempt, r.status, r.delayMs, r.stepId, r.iteration]),
    [[1, 429, 5, "s1", 2], [2, 503, 10, "s1", 2]],
  );
});

Deno.test("withRetry: a non-retryable failure stops at once", async () => {
  let calls = 0;
  const error = await withRetry(() => {
    calls++;
    return Promise.reject(httpError(404));
  }, { backend: "test", policy: resolveRetryPolicy({ initialDelayMs: 1 }) }).catch((e) => e);
  assert.ok(error instanceof RetryExhausted);
  assert.equal(error.stopReason, "not_retryable");
  assert.equal(error.attempts, 1);
  assert.equal(calls, 1);
});

Deno.test("withRetry: attempts run out; a too-long Retry-After gives up early", async () => {
  let calls = 0;
  const exhausted = await withRetry(() => {
    calls++;
    return Promise.reject(httpError(500));
  }, { backend: "test", policy: resolveRetryPolicy({ maxAttempts: 4, initialDelayMs: 1 }) })
    .catch((e) => e);
  assert.equal(exhausted.stopReason, "attempts_exhausted");
  assert.equal(calls, 4);

  const patient = await withRetry(
    () => Promise.reject(httpError(429, { "retry-after": "3600" })),
    { backend: "test", policy: resolveRetryPolicy() },
  ).catch((e) => e);
  assert.equal(patient.stopReason, "wait_too_long");
  assert.equal(patient.attempts, 1);
});

Deno.test("withRetry: the per-attempt timeout aborts the attempt's signal", async () => {
  const signals: AbortSignal[] = [];
  const error = await withRetry(
    (signal) => {
      signals.push(signal);
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    },
    {
      backend: "test",
      policy: resolveRetryPolicy({ maxAttempts: 2, initialDelayMs: 1 }),
      timeoutMs: 20,
    },
  ).catch((e) => e);
  assert.ok(error instanceof RetryExhausted);
  assert.equal(error.failure.kind, "timeout");
  assert.equal(signals.length, 2);
  assert.ok(signals.every((s) => s.aborted));

  let attempts = 0;
  const once = await withRetry<never>(
    (signal) => {
      attempts++;
      return new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    },
    { backend: "test", policy: resolveRetryPolicy(), timeoutMs: 20, retryTimeouts: false },
  ).catch((e: RetryExhausted) => e);
  assert.equal(once.stopReason, "not_retryable");
  assert.equal(attempts, 1);
});

Deno.test("withRetry: cancelling during the backoff rejects with the signal's reason", async () => {
  const controller = new AbortController();
  const retries: RetryInfo[] = [];
  const started = performance.now();
  const pending = withRetry(() => Promise.reject(httpError(503)), {
    backend: "test",
    policy: resolveRetryPolicy({ initialDelayMs: 10_000, maxDelayMs: 10_000 }),
    signal: controller.signal,
    random: () => 0.99,
    onRetry: [(r) => {
      retries.push(r);
      controller.abort(new DOMException("stop", "AbortError"));
    }],
  });
  const error = await pending.catch((e) => e);
  assert.equal(error.name, "AbortError");
  assert.equal(error.message, "stop");
  assert.equal(retries.length, 1);
  assert.ok(performance.now() - started < 1000);
});
