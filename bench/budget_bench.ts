/**
 * What the budget check and the cost accounting add to one model call: the same call through a
 * backend that answers at once (the baseline), through the run's metered backend with no budget
 * (admission, pricing from the built-in table, the ledger's counts), and with a dollar and token
 * budget on a backend that asks the attempt meter before its attempt as the chat APIs do (the
 * attempt's bound from a 2,000-character prompt, the check against what is left, the hold and its
 * release) — and the same inside a child run, whose calls are checked against its parent's budget
 * too. The difference to the baseline is the overhead per call; measured in the same sitting.
 */
import { meterBackend } from "../src/flow/metered_backend.ts";
import { SpendLedger } from "../src/flow/spend_ledger.ts";
import { PriceTable } from "../src/llm/pricing.ts";
import { promptTokenBound, promptTokenCeiling } from "../src/llm/prompt_bound.ts";
import type { RunUsage } from "../src/flow/types.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse } from "../src/llm/types.ts";

const PROMPT = "Fix the flaky login test. ".repeat(80);
const request: LlmRequest = {
  kind: "step",
  agent: "bench",
  stepId: "work",
  iteration: 1,
  prompt: PROMPT,
  cwd: ".",
  model: "claude-sonnet-4-5",
};

/** Answers at once, as a chat backend would after its exchange: with usage, asking the meter first. */
class InstantBackend implements LlmBackend {
  readonly name = "instant";
  readonly model = "claude-sonnet-4-5";
  complete(req: LlmRequest, opts: LlmCallOptions = {}): Promise<LlmResponse> {
    if (opts.meter) {
      // As the chat backends do: the quick bound, and the closer one when asked.
      const parts = { turns: [{ role: "user" as const, content: req.prompt }] };
      let tokens: number | undefined;
      opts.meter.beforeAttempt({
        model: this.model,
        maxOutputTokens: 8192,
        promptTokensCeiling: promptTokenCeiling(parts),
        promptTokens: () => tokens ??= promptTokenBound(parts),
      });
    }
    return Promise.resolve({
      text: "ok",
      model: this.model,
      usage: { inputTokens: 600, outputTokens: 40, cacheReadTokens: 500 },
    });
  }
}

function holder(): { runId: string; agent: string; usage: RunUsage } {
  return {
    runId: "bench",
    agent: "bench",
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 },
  };
}

const raw = new InstantBackend();
const prices = PriceTable.builtIn();
const accounted = meterBackend(raw, new SpendLedger({ state: holder(), prices }));
// Budgets far from spent: every call is checked, none refused.
const huge = { usd: 1e9, tokens: 1e15, modelCalls: 1e12 };
const budgeted = meterBackend(raw, new SpendLedger({ state: holder(), prices, budget: huge }));
const parent = new SpendLedger({ state: holder(), prices, budget: huge });
const childState = holder();
const child = meterBackend(
  raw,
  new SpendLedger({
    state: childState,
    prices,
    budget: huge,
    parent: parent.childAccount("delegate", { ...childState.usage }),
  }),
);

Deno.bench({
  name: "call, no meter (baseline)",
  group: "one model call",
  baseline: true,
  async fn() {
    await raw.complete(request);
  },
});

Deno.bench({
  name: "call metered: counted and priced, no budget",
  group: "one model call",
  async fn() {
    await accounted.complete(request);
  },
});

Deno.bench({
  name: "call metered with a dollar and token budget (attempt bound, check, hold)",
  group: "one model call",
  async fn() {
    await budgeted.complete(request);
  },
});

Deno.bench({
  name: "a child run's call, checked against its own and its parent's budget",
  group: "one model call",
  async fn() {
    await child.complete(request);
  },
});
