/**
 * The budget at the chat APIs' own attempts, through the official SDK clients against local
 * wire-protocol servers: before each attempt the run's meter learns the attempt's worst case (its
 * prompt bound and `max_tokens`) — it lowers `max_tokens` so the attempt fits what is left, refuses
 * to send one where not even a small answer fits, counts an attempt cut off mid-stream at its worst
 * case (the provider may have charged it) and checks the retry against what is then left; an
 * attempt refused with an HTTP error costs nothing.
 */
import assert from "node:assert/strict";
import { meterBackend } from "../../src/flow/metered_backend.ts";
import { MIN_CAPPED_OUTPUT_TOKENS, SpendLedger } from "../../src/flow/spend_ledger.ts";
import type { RunBudget } from "../../src/definition/schema.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import { PriceTable } from "../../src/llm/pricing.ts";
import { promptTokenBound } from "../../src/llm/prompt_bound.ts";
import type { StepflowError } from "../../src/errors.ts";
import type { RunUsage } from "../../src/flow/types.ts";
import {
  anthropicError,
  anthropicEvents,
  anthropicMessage,
  openAiCompletion,
  startFakeServer,
  stepRequest,
} from "./fake_server.ts";

const PROMPT = "Fix the flaky login test.";
/** The bound of the test's one-turn prompt (no system prompt, no history). */
const BOUND = promptTokenBound({ turns: [{ role: "user", content: PROMPT }] });
// claude-sonnet-4-5: a prompt token costs at most the cache-write price, $3.75 per million.
const IN_USD = 3.75 / 1e6;
const OUT_USD = 15 / 1e6;

function metered(budget: RunBudget, backend: AnthropicBackend | OpenAiBackend) {
  const usage: RunUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 };
  const state = { runId: "r1", agent: "wire", usage };
  const ledger = new SpendLedger({ state, budget, prices: PriceTable.builtIn() });
  return { backend: meterBackend(backend, ledger), usage: state.usage, ledger };
}

const near = (actual: number | undefined, expected: number) =>
  assert.ok(Math.abs((actual ?? NaN) - expected) < 1e-12, `${actual} ≠ ${expected}`);

Deno.test("anthropic: max_tokens is lowered so the attempt's worst case fits what the budget has left", async () => {
  const server = startFakeServer([anthropicMessage("ok", { inputTokens: 20, outputTokens: 5 })]);
  try {
    // Room for the prompt's bound and 3,000 output tokens, not for the default 8,192.
    const usd = BOUND * IN_USD + 3_000.5 * OUT_USD;
    const { backend, usage } = metered(
      { usd },
      new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-4-5", stream: false }),
    );
    await backend.complete(stepRequest({ prompt: PROMPT }));
    assert.equal(server.requests[0].body.max_tokens, 3_000);
    near(usage.costUsd, (20 * 3 + 5 * 15) / 1e6);
  } finally {
    await server.close();
  }
});

Deno.test("openai: a limit is set where the request had none when the budget cannot cover an open answer", async () => {
  const server = startFakeServer([openAiCompletion("ok"), openAiCompletion("ok")]);
  try {
    // gpt-4o: $2.50 per million prompt tokens, $10 per million output tokens.
    const usd = BOUND * 2.5 / 1e6 + 5_000.5 * 10 / 1e6;
    const { backend } = metered(
      { usd },
      new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "gpt-4o", stream: false }),
    );
    await backend.complete(stepRequest({ prompt: PROMPT }));
    // A compatible server takes max_tokens (api.openai.com max_completion_tokens); without a
    // budget no limit is sent.
    assert.equal(server.requests[0].body.max_tokens, 5_000);
    const free = new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "gpt-4o", stream: false });
    await free.complete(stepRequest({ prompt: PROMPT }));
    assert.equal(server.requests[1].body.max_tokens, undefined);
  } finally {
    await server.close();
  }
});

Deno.test("a call whose prompt leaves no room for even a small answer is not sent", async () => {
  const server = startFakeServer([anthropicMessage("never")]);
  try {
    const usd = BOUND * IN_USD + (MIN_CAPPED_OUTPUT_TOKENS - 1) * OUT_USD;
    const { backend, usage } = metered(
      { usd },
      new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-4-5", stream: false }),
    );
    await assert.rejects(
      () => backend.complete(stepRequest({ prompt: PROMPT })),
      (e: StepflowError) => {
        assert.equal(e.code, "BUDGET_EXCEEDED");
        assert.match(
          e.message,
          /less than the next model call of step "initial\.issue" \(step\) could cost/,
        );
        assert.match(e.message, /not even 1024 output tokens fit\); it was not sent/);
        return true;
      },
    );
    assert.equal(server.requests.length, 0, "nothing reached the server");
    assert.equal(usage.calls, 0);
  } finally {
    await server.close();
  }
});

Deno.test("a token budget lowers max_tokens the same way", async () => {
  const server = startFakeServer([anthropicMessage("ok", { inputTokens: 20, outputTokens: 5 })]);
  try {
    const { backend, usage } = metered(
      { tokens: BOUND + 2_048 },
      new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-4-5", stream: false }),
    );
    await backend.complete(stepRequest({ prompt: PROMPT }));
    assert.equal(server.requests[0].body.max_tokens, 2_048);
    assert.equal(usage.inputTokens + usage.outputTokens, 25);
  } finally {
    await server.close();
  }
});

Deno.test("a stream cut off mid-answer counts at its worst case, and the retry is checked against what is then left", async () => {
  const reply = anthropicMessage("a long answer that the stream never finishes", {
    inputTokens: 20,
    outputTokens: 9,
  });
  const cut = { sse: anthropicEvents(reply).slice(0, 4), sseEnd: "cut" as const };
  const server = startFakeServer([cut, reply, cut]);
  try {
    const anthropic = () =>
      new AnthropicBackend({
        baseUrl: server.url,
        model: "claude-sonnet-4-5",
        maxTokens: 2_000,
        retry: { maxAttempts: 2, initialDelayMs: 1 },
      });
    // Room for two worst cases: the cut attempt and its retry both go.
    const worst = BOUND * IN_USD + 2_000 * OUT_USD;
    const roomy = metered({ usd: 2.5 * worst }, anthropic());
    await roomy.backend.complete(stepRequest({ prompt: PROMPT }));
    assert.equal(server.requests.length, 2);
    near(roomy.usage.estimatedUsd, worst);
    assert.equal(roomy.usage.estimatedTokens, BOUND + 2_000);
    assert.equal(roomy.usage.callsWithoutUsage, 1);
    assert.equal(roomy.usage.calls, 2, "the cut attempt and the call");
    near(roomy.usage.costUsd, (20 * 3 + 9 * 15) / 1e6);

    // Room for one: after the cut attempt, the retry no longer fits and is not sent.
    const tight = metered({ usd: 1.5 * worst }, anthropic());
    await assert.rejects(
      () => tight.backend.complete(stepRequest({ prompt: PROMPT })),
      (e: StepflowError) => e.code === "BUDGET_EXCEEDED",
    );
    assert.equal(server.requests.length, 3, "the retry was never sent");
    near(tight.usage.estimatedUsd, worst);
  } finally {
    await server.close();
  }
});

Deno.test("an attempt refused with HTTP 429 costs nothing; its retry goes, and a model-call budget counts the call once", async () => {
  const server = startFakeServer([
    anthropicError(429, "rate_limit_error", "slow down", { "retry-after-ms": "1" }),
    anthropicMessage("ok", { inputTokens: 20, outputTokens: 5 }),
  ]);
  try {
    const { backend, usage } = metered(
      { usd: 1, modelCalls: 1 },
      new AnthropicBackend({
        baseUrl: server.url,
        model: "claude-sonnet-4-5",
        stream: false,
        retry: { initialDelayMs: 1 },
      }),
    );
    await backend.complete(stepRequest({ prompt: PROMPT }));
    assert.equal(server.requests.length, 2);
    assert.equal(usage.estimatedUsd, undefined);
    assert.equal(usage.calls, 1);
    // The one call of the budget is made: a second is refused before it is sent.
    await assert.rejects(
      () => backend.complete(stepRequest({ prompt: PROMPT })),
      (e: StepflowError) =>
        e.code === "BUDGET_EXCEEDED" && /1 model call of 1 model call/.test(e.message),
    );
    assert.equal(server.requests.length, 2);
  } finally {
    await server.close();
  }
});
