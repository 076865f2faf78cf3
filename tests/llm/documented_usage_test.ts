/**
 * Usage and cost of the providers' own documented response bodies (tests/llm/fixtures/documented/),
 * served on 127.0.0.1 to the official SDK clients, plain and streamed: Anthropic's cache writes and
 * reads are apart from `input_tokens` and added to it; OpenAI's `cached_tokens` are inside
 * `prompt_tokens`. Each call is priced by the run's ledger from the built-in price table, and the
 * cost equals the hand computation from that table's published prices.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { meterBackend } from "../../src/flow/metered_backend.ts";
import { SpendLedger } from "../../src/flow/spend_ledger.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import { PriceTable } from "../../src/llm/pricing.ts";
import type { RunUsage } from "../../src/flow/types.ts";
import { type SseEvent, startFakeServer, stepRequest } from "./fake_server.ts";

const DOCUMENTED = join(import.meta.dirname!, "fixtures", "documented");

async function body(name: string): Promise<string> {
  return await Deno.readTextFile(join(DOCUMENTED, name));
}

/** A recorded `text/event-stream` body as its events. */
async function events(name: string): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for (const block of (await body(name)).split(/\n\n+/)) {
    if (block.trim() === "") continue;
    const event = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1] ?? "";
    out.push({ ...(event ? { event } : {}), data });
  }
  return out;
}

function ledger(): { ledger: SpendLedger; usage: RunUsage } {
  const state = {
    runId: "r1",
    agent: "documented",
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 },
  };
  return { ledger: new SpendLedger({ state, prices: PriceTable.builtIn() }), usage: state.usage };
}

const near = (actual: number | undefined, expected: number) =>
  assert.ok(Math.abs((actual ?? NaN) - expected) < 1e-12, `${actual} ≠ ${expected}`);

// claude-sonnet-4-5 in the built-in table: $3 input, $3.75 5-minute cache write, $0.30 cache read,
// $15 output per million tokens.
const SONNET_DOCUMENTED_USD = (2095 * 3 + 2051 * 3.75 + 2051 * 0.3 + 503 * 15) / 1e6;

Deno.test("anthropic: the documented Messages API body — cache writes and reads apart from input_tokens, priced at their own prices", async () => {
  const server = startFakeServer([{ raw: await body("anthropic_message.json") }]);
  try {
    const { ledger: spend, usage } = ledger();
    const backend = meterBackend(
      new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-4-5", stream: false }),
      spend,
    );
    const answer = await backend.complete(stepRequest());
    assert.equal(answer.text, "Hi! My name is Claude.");
    assert.deepEqual(answer.usage, {
      inputTokens: 2095 + 2051 + 2051,
      outputTokens: 503,
      cacheReadTokens: 2051,
      cacheWriteTokens: 2051,
    });
    near(answer.costUsd, SONNET_DOCUMENTED_USD);
    near(usage.costUsd, SONNET_DOCUMENTED_USD);
    assert.equal(usage.cacheReadTokens, 2051);
    assert.equal(usage.cacheWriteTokens, 2051);
  } finally {
    await server.close();
  }
});

Deno.test("anthropic: the documented stream — message_start's input and cache counts, message_delta's output", async () => {
  const server = startFakeServer([
    { sse: await events("anthropic_stream.sse") },
    { sse: await events("anthropic_stream_cached.sse") },
  ]);
  try {
    const { ledger: spend, usage } = ledger();
    const backend = meterBackend(
      new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-4-5" }),
      spend,
    );
    const plain = await backend.complete(stepRequest());
    assert.equal(plain.text, "Hello!");
    assert.deepEqual(plain.usage, { inputTokens: 25, outputTokens: 15 });
    near(plain.costUsd, (25 * 3 + 15 * 15) / 1e6);
    const cached = await backend.complete(stepRequest());
    assert.deepEqual(cached.usage, {
      inputTokens: 6197,
      outputTokens: 503,
      cacheReadTokens: 2051,
      cacheWriteTokens: 2051,
    });
    near(cached.costUsd, SONNET_DOCUMENTED_USD);
    near(usage.costUsd, (25 * 3 + 15 * 15) / 1e6 + SONNET_DOCUMENTED_USD);
    assert.equal(usage.calls, 2);
  } finally {
    await server.close();
  }
});

// gpt-4o in the built-in table: $2.50 input, $1.25 cached input, $10 output per million tokens;
// the 1,920 cached tokens are part of the 2,006 prompt tokens.
const GPT4O_DOCUMENTED_USD = ((2006 - 1920) * 2.5 + 1920 * 1.25 + 300 * 10) / 1e6;

Deno.test("openai: the documented completion — cached_tokens inside prompt_tokens, priced at the cached price", async () => {
  const server = startFakeServer([{ raw: await body("openai_completion.json") }]);
  try {
    const { ledger: spend, usage } = ledger();
    const backend = meterBackend(
      new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "gpt-4o", stream: false }),
      spend,
    );
    const answer = await backend.complete(stepRequest());
    assert.equal(answer.text, "Hello! How can I assist you today?");
    assert.deepEqual(answer.usage, { inputTokens: 2006, outputTokens: 300, cacheReadTokens: 1920 });
    near(answer.costUsd, GPT4O_DOCUMENTED_USD);
    near(usage.costUsd, GPT4O_DOCUMENTED_USD);
  } finally {
    await server.close();
  }
});

Deno.test("openai: the documented chunk stream with its usage chunk", async () => {
  const server = startFakeServer([{ sse: await events("openai_stream.sse") }]);
  try {
    const { ledger: spend, usage } = ledger();
    const backend = meterBackend(
      new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "gpt-4o" }),
      spend,
    );
    const answer = await backend.complete(stepRequest());
    assert.equal(answer.text, "Hello");
    assert.equal(server.requests[0].body.stream, true);
    assert.deepEqual(server.requests[0].body.stream_options, { include_usage: true });
    assert.deepEqual(answer.usage, { inputTokens: 2006, outputTokens: 300, cacheReadTokens: 1920 });
    near(usage.costUsd, GPT4O_DOCUMENTED_USD);
  } finally {
    await server.close();
  }
});

Deno.test("a dated model id is priced as its undated name; a model the table lacks has an unknown cost, never 0", async () => {
  const server = startFakeServer([
    { raw: await body("openai_completion.json") },
    { raw: await body("openai_completion.json") },
  ]);
  try {
    const { ledger: spend, usage } = ledger();
    const dated = meterBackend(
      new OpenAiBackend({
        baseUrl: `${server.url}/v1`,
        model: "gpt-4o-2024-08-06",
        stream: false,
      }),
      spend,
    );
    near((await dated.complete(stepRequest())).costUsd, GPT4O_DOCUMENTED_USD);
    const unknown = meterBackend(
      new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "gpt-9-preview", stream: false }),
      spend,
    );
    const answer = await unknown.complete(stepRequest());
    assert.equal(answer.costUsd, undefined);
    assert.equal(usage.calls, 2);
    assert.equal(usage.callsWithoutCost, 1);
    near(usage.costUsd, GPT4O_DOCUMENTED_USD);
  } finally {
    await server.close();
  }
});
