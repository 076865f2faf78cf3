/**
 * Waiting out rate limits: the reset headers of both providers read as a wait (pure), and the
 * chat backends — the official SDK clients against local servers on 127.0.0.1, streamed and not —
 * waiting until the reset a 429 names (`retry-after`, `retry-after-ms`,
 * `anthropic-ratelimit-*-reset`, `x-ratelimit-reset-requests/tokens`) within `maxRateLimitWaitMs`,
 * giving up at once past it, and giving the wait back (`RateLimitYield`) when asked to. Also the
 * idle timeout of streamed answers, beside the whole-call timeout.
 */
import assert from "node:assert/strict";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import {
  parseRateLimitReset,
  parseResetDuration,
  parseRetryAfter,
  serverWaitMs,
} from "../../src/llm/rate_limit_reset.ts";
import { RateLimitYield, type RetryInfo } from "../../src/llm/retry.ts";
import {
  anthropicError,
  anthropicEvents,
  anthropicMessage,
  type FakeReply,
  type FakeServer,
  openAiChunks,
  openAiCompletion,
  openAiError,
  startFakeServer,
  stepRequest,
} from "./fake_server.ts";

const NOW = Date.parse("2026-03-01T12:00:00.000Z");

Deno.test("reset headers: Retry-After forms, Anthropic RFC 3339 resets, OpenAI durations", () => {
  assert.equal(parseRetryAfter(new Headers({ "retry-after": "7" }), NOW), 7000);
  assert.equal(parseRetryAfter(new Headers({ "retry-after-ms": "1500" }), NOW), 1500);
  assert.equal(
    parseRetryAfter(new Headers({ "retry-after": "Sun, 01 Mar 2026 12:00:09 GMT" }), NOW),
    9000,
  );
  assert.equal(parseResetDuration("6m0s"), 360_000);
  assert.equal(parseResetDuration("1s"), 1000);
  assert.equal(parseResetDuration("20ms"), 20);
  assert.equal(parseResetDuration("1h2m3.5s"), 3_723_500);
  assert.equal(parseResetDuration("17.011s"), 17_011);
  assert.equal(parseResetDuration("30"), 30_000);
  for (const bad of ["", "soon", "1x", "-1s", "s"]) {
    assert.equal(parseResetDuration(bad), undefined);
  }

  // Anthropic: the limit whose remaining is 0 is the one hit; its reset is the wait.
  const anthropic = new Headers({
    "anthropic-ratelimit-requests-remaining": "49",
    "anthropic-ratelimit-requests-reset": "2026-03-01T12:00:02Z",
    "anthropic-ratelimit-input-tokens-remaining": "0",
    "anthropic-ratelimit-input-tokens-reset": "2026-03-01T12:00:40Z",
    "anthropic-ratelimit-output-tokens-remaining": "8000",
    "anthropic-ratelimit-output-tokens-reset": "2026-03-01T12:00:55Z",
  });
  assert.equal(parseRateLimitReset(anthropic, NOW), 40_000);
  // OpenAI: the same rule over its two limits.
  const openai = new Headers({
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "1s",
    "x-ratelimit-remaining-tokens": "1200",
    "x-ratelimit-reset-tokens": "6m0s",
  });
  assert.equal(parseRateLimitReset(openai, NOW), 1000);
  // Without a spent limit (no remaining counts): the latest reset, so the next attempt is not early.
  assert.equal(
    parseRateLimitReset(
      new Headers({ "x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "5s" }),
      NOW,
    ),
    5000,
  );
  assert.equal(parseRateLimitReset(new Headers({}), NOW), undefined);
  assert.equal(
    parseRateLimitReset(new Headers({ "anthropic-ratelimit-tokens-reset": "not a time" }), NOW),
    undefined,
  );
});

Deno.test("serverWaitMs: Retry-After first; the resets only on a 429 (every answer carries them)", () => {
  const resets = { "x-ratelimit-reset-tokens": "12s", "x-ratelimit-remaining-tokens": "0" };
  assert.equal(serverWaitMs(429, new Headers(resets), NOW), 12_000);
  assert.equal(serverWaitMs(429, new Headers({ ...resets, "retry-after": "3" }), NOW), 3000);
  assert.equal(serverWaitMs(503, new Headers(resets), NOW), undefined);
  assert.equal(serverWaitMs(529, new Headers({ "retry-after": "4" }), NOW), 4000);
});

/** The chat backends and how each protocol answers. */
const PROTOCOLS = {
  anthropic: {
    backend: (server: FakeServer, options: Record<string, unknown>) =>
      new AnthropicBackend({
        baseUrl: server.url,
        apiKey: "k",
        model: "claude-sonnet-5-5",
        retry: { initialDelayMs: 1, maxDelayMs: 5 },
        ...options,
      }),
    ok: (text: string) => anthropicMessage(text),
    limited: (headers: Record<string, string>) =>
      anthropicError(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your limit",
        headers,
      ),
    overloaded: (headers: Record<string, string>) =>
      anthropicError(529, "overloaded_error", "Overloaded", headers),
    events: (text: string) => anthropicEvents(anthropicMessage(text)),
  },
  openai: {
    backend: (server: FakeServer, options: Record<string, unknown>) =>
      new OpenAiBackend({
        baseUrl: `${server.url}/v1`,
        apiKey: "k",
        model: "gpt-5.4-mini",
        retry: { initialDelayMs: 1, maxDelayMs: 5 },
        ...options,
      }),
    ok: (text: string) => openAiCompletion(text),
    limited: (headers: Record<string, string>) =>
      openAiError(429, "rate_limit_exceeded", "Rate limit reached for requests", headers),
    overloaded: (headers: Record<string, string>) =>
      openAiError(503, "server_error", "The server is overloaded", headers),
    events: (text: string) => openAiChunks(openAiCompletion(text), { includeUsage: true }),
  },
} as const;

/** Each reset header of a 429, as a server would send one 300 ms ahead (Retry-After: 1 s). */
function resetHeaders(protocol: keyof typeof PROTOCOLS): [string, () => Record<string, string>][] {
  const common: [string, () => Record<string, string>][] = [
    ["retry-after", () => ({ "retry-after": "1" })],
    ["retry-after-ms", () => ({ "retry-after-ms": "300" })],
  ];
  if (protocol === "anthropic") {
    return [
      ...common,
      ["anthropic-ratelimit-tokens-reset", () => ({
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": new Date(Date.now() + 300).toISOString(),
        "anthropic-ratelimit-requests-remaining": "10",
        "anthropic-ratelimit-requests-reset": new Date(Date.now() + 60_000).toISOString(),
      })],
      ["anthropic-ratelimit-requests-reset", () => ({
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": new Date(Date.now() + 300).toISOString(),
      })],
    ];
  }
  return [
    ...common,
    ["x-ratelimit-reset-requests", () => ({
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "300ms",
      "x-ratelimit-remaining-tokens": "5000",
      "x-ratelimit-reset-tokens": "1m0s",
    })],
    ["x-ratelimit-reset-tokens", () => ({
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": "0.3s",
    })],
  ];
}

for (
  const [protocol, p] of Object.entries(PROTOCOLS) as [
    keyof typeof PROTOCOLS,
    typeof PROTOCOLS[keyof typeof PROTOCOLS],
  ][]
) {
  for (const stream of [true, false]) {
    for (const [header, headers] of resetHeaders(protocol)) {
      // Whole seconds are slow to wait for: Retry-After in seconds is waited for once per protocol.
      if (header === "retry-after" && !stream) continue;
      Deno.test(`${protocol}${stream ? " (streamed)" : ""}: a 429 with ${header} waits until the reset, then goes on`, async () => {
        const server = startFakeServer();
        try {
          const sent = headers();
          const expected = sent["retry-after"] ? 1000 : 300;
          // An absolute reset (an RFC 3339 time) is waited for until that time, however late the
          // request came: the wait is what is left of it.
          const resetAt = Object.entries(sent).find(([k]) =>
            /^anthropic-.*-reset$/.test(k) &&
            sent[k.replace("-reset", "-remaining")] === "0"
          )?.[1];
          server.push(p.limited(sent), p.ok("After the reset."));
          const retries: RetryInfo[] = [];
          const started = Date.now();
          const answer = await p.backend(server, { stream }).complete(stepRequest(), {
            onRetry: (r) => retries.push(r),
          });
          const took = Date.now() - started;
          assert.equal(answer.text, "After the reset.");
          assert.equal(retries.length, 1);
          const [retry] = retries;
          assert.equal(retry.status, 429);
          assert.ok(retry.waitUntil, "a server-named wait says until when");
          if (resetAt !== undefined) {
            assert.ok(Math.abs(Date.parse(retry.waitUntil) - Date.parse(resetAt)) <= 60);
            assert.ok(retry.delayMs <= expected, `waited ${retry.delayMs} ms`);
          } else {
            // The wait is the server's, not the jittered backoff.
            assert.equal(retry.delayMs, expected);
            // It ends a wait's length after the refusal (the SDK's first load came before).
            assert.ok(Date.parse(retry.waitUntil) >= started + expected - 60);
            assert.ok(took >= expected - 60, `the second attempt came after ${took} ms`);
          }
          assert.ok(Date.parse(retry.waitUntil) <= Date.now(), "the second attempt came after it");
          assert.equal(server.requests.length, 2);
        } finally {
          await server.close();
        }
      });
    }
  }

  Deno.test(`${protocol}: a reset beyond maxRateLimitWaitMs ends the call at once (BACKEND_UNAVAILABLE)`, async () => {
    const server = startFakeServer();
    try {
      server.push(p.limited({ "retry-after": "3600" }));
      const started = Date.now();
      const error = await p.backend(server, {}).complete(stepRequest()).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_UNAVAILABLE");
      assert.equal(error.details.status, 429);
      assert.equal(error.details.retryAfterMs, 3_600_000);
      assert.match(
        error.message,
        /asked to wait 3600 s .*maxRateLimitWaitMs; --max-rate-limit-wait-ms/,
      );
      assert.match(error.message, /--fallback-model/);
      assert.equal(server.requests.length, 1);
      assert.ok(Date.now() - started < 5000);

      // A bound of 0: never wait for the server, whatever it names.
      server.push(p.limited({ "retry-after": "1" }));
      const none = await p.backend(server, { retry: { maxRateLimitWaitMs: 0 } })
        .complete(stepRequest()).then(() => undefined, (e) => e);
      assert.equal((none as BackendError).code, "BACKEND_UNAVAILABLE");
      assert.equal(server.requests.length, 2);
    } finally {
      await server.close();
    }
  });

  Deno.test(`${protocol}: with yieldWaitsFromMs a long wait is given back (RateLimitYield), a short one slept`, async () => {
    const server = startFakeServer();
    try {
      server.push(p.limited({ "retry-after": "30" }));
      const retries: RetryInfo[] = [];
      const started = Date.now();
      const given = await p.backend(server, {}).complete(stepRequest(), {
        yieldWaitsFromMs: 5000,
        onRetry: (r) => retries.push(r),
      }).then(() => undefined, (e) => e);
      assert.ok(given instanceof RateLimitYield, String(given));
      assert.equal(given.code, "RATE_LIMIT_YIELD");
      assert.ok(Date.parse(given.until) >= started + 30_000 - 60);
      assert.ok(Date.parse(given.until) <= Date.now() + 30_000);
      assert.equal(retries.length, 1);
      assert.equal(retries[0].yielded, true);
      assert.equal(server.requests.length, 1, "nothing was sent again");

      server.push(p.limited({ "retry-after-ms": "50" }), p.ok("Slept through it."));
      const slept = await p.backend(server, {}).complete(stepRequest(), { yieldWaitsFromMs: 5000 });
      assert.equal(slept.text, "Slept through it.");
    } finally {
      await server.close();
    }
  });

  Deno.test(`${protocol}: an overloaded server's Retry-After is waited for too`, async () => {
    const server = startFakeServer();
    try {
      server.push(p.overloaded({ "retry-after-ms": "300" }), p.ok("Back."));
      const retries: RetryInfo[] = [];
      const answer = await p.backend(server, {}).complete(stepRequest(), {
        onRetry: (r) => retries.push(r),
      });
      assert.equal(answer.text, "Back.");
      assert.equal(retries[0].delayMs, 300);
      assert.ok(retries[0].waitUntil);
    } finally {
      await server.close();
    }
  });

  Deno.test(`${protocol}: the idle timeout ends a stream that went quiet and retries it`, async () => {
    const server = startFakeServer();
    try {
      const events = p.events("A stalled answer that never ends.");
      server.push({ sse: events.slice(0, 3), sseEnd: "hang" }, p.ok("The retry answered."));
      const retries: RetryInfo[] = [];
      const started = performance.now();
      const answer = await p.backend(server, { idleTimeoutMs: 300, timeoutMs: 60_000 })
        .complete(stepRequest(), { onRetry: (r) => retries.push(r) });
      assert.equal(answer.text, "The retry answered.");
      assert.equal(retries.length, 1);
      assert.match(retries[0].reason, /no data from the server for 300 ms \(the idle timeout/);
      assert.ok(performance.now() - started < 10_000);

      // Every attempt stalls: BACKEND_TIMEOUT, saying which timeout and how to raise it.
      server.push(
        { sse: events.slice(0, 2), sseEnd: "hang" },
        { sse: events.slice(0, 2), sseEnd: "hang" },
      );
      const error = await p.backend(server, { idleTimeoutMs: 200, retry: { maxAttempts: 2 } })
        .complete(stepRequest()).then(() => undefined, (e) => e);
      assert.ok(error instanceof BackendError, String(error));
      assert.equal(error.code, "BACKEND_TIMEOUT");
      assert.match(
        error.message,
        /raise the idle timeout \(now 200 ms\): idleTimeoutMs, --idle-timeout-ms/,
      );
    } finally {
      await server.close();
    }
  });

  Deno.test(`${protocol}: a slow stream that keeps writing outlives the idle timeout (the whole-call timeout is off)`, async () => {
    const server = startFakeServer();
    try {
      const events = p.events("A slow local model writes its answer a few words at a time.");
      // Each event 100 ms after the last (a tenth of the idle timeout, room for a busy machine):
      // well over a second in all, longer than the idle timeout.
      const reply: FakeReply = { sse: events, sseIntervalMs: 100 };
      server.push(reply);
      const started = performance.now();
      const answer = await p.backend(server, { idleTimeoutMs: 1000, timeoutMs: 0 })
        .complete(stepRequest());
      assert.equal(answer.text, "A slow local model writes its answer a few words at a time.");
      assert.ok(performance.now() - started > 1000, "it took longer than the idle timeout");
      assert.equal(server.requests.length, 1);
    } finally {
      await server.close();
    }
  });
}
