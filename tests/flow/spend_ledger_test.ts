/**
 * The spend ledger on its own, for what the flow tests cannot reach yet: calls in flight at the same
 * time (a fan-out's items) each hold their worst case, so together they cannot overrun what is
 * left; a grandchild's spend reaches every ancestor as it happens and is checked against each
 * ancestor's budget; the model_call lines a killed drive wrote are added back exactly once.
 */
import assert from "node:assert/strict";
import { type SpendHolder, SpendLedger } from "../../src/flow/spend_ledger.ts";
import { copySpendByStep, stepSpendOf } from "../../src/flow/spend_records.ts";
import type { RunUsage } from "../../src/flow/types.ts";
import { PriceTable } from "../../src/llm/pricing.ts";
import type { AttemptBound } from "../../src/llm/types.ts";
import type { StepflowError } from "../../src/errors.ts";
import type { RunBudget } from "../../src/definition/schema.ts";

const prices = PriceTable.builtIn();

function ledger(runId: string, budget?: RunBudget, parent?: SpendLedger) {
  const usage: RunUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 };
  const state: SpendHolder = { runId, agent: runId, usage };
  const l = new SpendLedger({
    state,
    prices,
    ...(budget ? { budget } : {}),
    ...(parent
      ? {
        parent: parent.childAccount("delegate", {
          ...parent.state.usage,
          inputTokens: 0,
          outputTokens: 0,
          costUsd: 0,
          calls: 0,
        }),
      }
      : {}),
  });
  return { ledger: l, usage, state };
}

// gpt-4o: $2.50 per million input tokens, $10 per million output tokens.
const bound = (promptTokens: number, maxOutputTokens: number): AttemptBound => ({
  model: "gpt-4o",
  maxOutputTokens,
  promptTokens: () => promptTokens,
});
const worst = (prompt: number, output: number) => (prompt * 2.5 + output * 10) / 1e6;

Deno.test("calls in flight hold their worst case: together they cannot overrun what is left", () => {
  const { ledger: l } = ledger("r", { usd: worst(1000, 4000) * 1.5 });
  const a = l.admit("item.1", "step", "gpt-4o");
  const b = l.admit("item.2", "step", "gpt-4o");
  // The first attempt's worst case fits whole; the second gets what is left of the budget.
  assert.equal(a.beforeAttempt(bound(1000, 4000)), undefined);
  const capped = b.beforeAttempt(bound(1000, 4000))!;
  assert.ok(capped < 4000, String(capped));
  assert.ok(worst(1000, 4000) + worst(1000, capped) <= worst(1000, 4000) * 1.5 + 1e-12);
  // A third finds no room, even for a small answer: not sent.
  const c = l.admit("item.3", "step", "gpt-4o");
  assert.throws(
    () => c.beforeAttempt(bound(1000, 4000)),
    (e: StepflowError) => e.code === "BUDGET_EXCEEDED",
  );
  c.abandon();
  // Once the first answers (for less than its worst case), its hold gives way to its real cost.
  a.settle({ usage: { inputTokens: 1000, outputTokens: 100 }, model: "gpt-4o" });
  const d = l.admit("item.4", "step", "gpt-4o");
  assert.ok((d.beforeAttempt(bound(1000, 4000)) ?? 4000) > 1024);
});

Deno.test("a grandchild's calls count against every ancestor's budget as they happen", () => {
  const top = ledger("top", { usd: 1 });
  const mid = ledger("mid", undefined, top.ledger);
  const leaf = ledger("leaf", { tokens: 10_000_000 }, mid.ledger);
  const call = leaf.ledger.admit("work", "step", "gpt-4o");
  call.settle({ usage: { inputTokens: 200_000, outputTokens: 20_000 }, model: "gpt-4o" });
  const cost = worst(200_000, 20_000);
  for (const { usage } of [leaf, mid, top]) {
    assert.ok(Math.abs(usage.costUsd - cost) < 1e-12);
    assert.equal(usage.calls, 1);
  }
  assert.equal(top.state.spendByStep?.delegate?.calls, 1, "under the parent's agent step");
  // One more such call ($0.70 each) passes the top run's $1: the next is refused at the leaf, by
  // the top run's budget (the leaf's own, in tokens, is far from spent).
  leaf.ledger.admit("work", "step", "gpt-4o").settle({
    usage: { inputTokens: 200_000, outputTokens: 20_000 },
    model: "gpt-4o",
  });
  assert.throws(
    () => leaf.ledger.admit("work", "step", "gpt-4o"),
    (e: StepflowError) => {
      assert.equal(e.code, "BUDGET_EXCEEDED");
      assert.match(e.message, /The budget of run top \(agent top\), which this run counts against/);
      return true;
    },
  );
});

Deno.test("the model_call lines a killed drive wrote are added back once", () => {
  const { ledger: l, state } = ledger("r");
  const line = (costUsd: number) => ({
    type: "model_call",
    stepId: "work",
    kind: "step",
    usage: { inputTokens: 10, outputTokens: 5 },
    costUsd,
  });
  const log = [{ type: "run_start" }, line(0.5), line(0.25)];
  assert.equal(l.restoreFrom(log), 2);
  assert.equal(state.usage.calls, 2);
  assert.equal(state.usage.costUsd, 0.75);
  assert.equal(l.restoreFrom(log), 0, "counted lines are not added again");
  assert.equal(l.restoreFrom([...log, line(1)]), 1);
  assert.equal(state.usage.costUsd, 1.75);
});

Deno.test("steps named __proto__ and constructor have spend entries of their own", () => {
  const state: SpendHolder = {
    runId: "r",
    agent: "a",
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 },
  };
  for (const id of ["__proto__", "constructor", "toString", "__proto__"]) {
    stepSpendOf(state, id).calls++;
  }
  const byStep = state.spendByStep!;
  assert.deepEqual(Object.keys(byStep), ["__proto__", "constructor", "toString"]);
  assert.equal(byStep["__proto__"].calls, 2);
  assert.equal(Object.getPrototypeOf(byStep), Object.prototype);
  assert.equal(({} as Record<string, unknown>).calls, undefined);
  const copy = copySpendByStep(byStep);
  assert.equal(Object.hasOwn(copy, "__proto__"), true);
  assert.notEqual(copy["constructor"], byStep["constructor"]);
  assert.deepEqual(JSON.parse(JSON.stringify(copy)), JSON.parse(JSON.stringify(byStep)));
  assert.equal(JSON.parse(JSON.stringify(copy))["__proto__"].calls, 2);
});
