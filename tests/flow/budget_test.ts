/**
 * Hard budgets through the real runner over real agent folders (tests/flow/budget_fixtures.ts):
 * the check before every model call and tool call, the bound (a run spends at most its budget plus
 * one call), `budget_exceeded` as a resumable end that names what was spent on what, a resume with
 * a raised budget carrying on inside the step, re-asks and tool-loop turns each counted, a child
 * run counting against its parent, and a dollar budget without prices refused before it starts.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import type { StepflowError } from "../../src/errors.ts";
import { writeAgent } from "./fixtures.ts";
import {
  CALL_USAGE,
  CALL_USD,
  closingAnswer,
  loopAnswer,
  looperFiles,
  MODEL,
  routed,
  writeBossAgents,
} from "./budget_fixtures.ts";

async function looper(agent: Record<string, unknown> = {}, work: Record<string, unknown> = {}) {
  const root = await Deno.makeTempDir({ prefix: "stepflow_budget_" });
  await writeAgent(root, "looper", looperFiles(agent, work));
  return { root, def: await loadAgentDefinition("looper", { cwd: root }) };
}

/** The looper's script: `repeats` repeat answers, then complete, then the closing answer. */
function loopScript(repeats: number): Record<string, ScriptedEntry[]> {
  return {
    "work.loop": [
      ...Array.from({ length: repeats }, () => loopAnswer("repeat")),
      loopAnswer("complete"),
    ],
    "complete.loop": [closingAnswer],
  };
}

const near = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${actual} ≠ ${expected}`);

Deno.test("a dollar budget: no call once it is spent, the overrun is at most one call, the run ends budget_exceeded and resumes with a raised budget", async () => {
  const { root, def } = await looper();
  const store = new MemoryRunStore();
  const backend = new ScriptedBackend(loopScript(5));
  // $1.00 covers two calls ($0.70); the third takes the run to $1.05 and the fourth is never sent.
  const first = await new StepFlowRunner(def, { backend, store, budget: { usd: 1 } })
    .run({ cwd: root });
  assert.equal(first.completionReason, "budget_exceeded");
  assert.equal(first.success, false);
  assert.equal(backend.calls.length, 3);
  near(first.usage.costUsd, 3 * CALL_USD);
  assert.ok(first.usage.costUsd - 1 <= CALL_USD, "never more than the budget plus one call");
  assert.equal(first.error?.code, "BUDGET_EXCEEDED");
  const message = first.error!.message;
  assert.match(
    message,
    /budget is spent \(\$1\.05 of \$1\.00\); step "work\.loop" was not started/,
  );
  assert.match(message, /Spent: \$1\.05 \(3 model calls, 330,000 tokens\)/);
  assert.match(message, /Top steps: "work\.loop" \$1\.05 \(3 calls, 330,000 tokens\)/);
  // How to go on: in words (no command-line flag in a library message), and as data.
  assert.match(
    message,
    /resume it with a higher budget \(\$2\.00, say\) to carry on inside the step/,
  );
  assert.doesNotMatch(message, /--/);
  assert.deepEqual((first.error!.details as { next?: unknown }).next, {
    action: "resume",
    runId: first.runId,
    args: ["--budget-usd", "2"],
  });
  // Resumable: its checkpoint says so, and the budget it ran with is recorded.
  const checkpoint = (await store.loadCheckpoint(first.runId))!;
  assert.equal(checkpoint.status, "budget_exceeded");
  assert.deepEqual((checkpoint.state as { budget?: unknown }).budget, { usd: 1 });
  // A resume without a higher budget stops again at once, sending nothing.
  const again = await new StepFlowRunner(def, { backend, store }).run({ resume: first.runId });
  assert.equal(again.completionReason, "budget_exceeded");
  assert.equal(backend.calls.length, 3);
  // Raised, it carries on from the recorded spend (not from zero) to the end.
  const resumed = await new StepFlowRunner(def, { backend, store, budget: { usd: 3 } })
    .run({ resume: first.runId });
  assert.equal(resumed.completionReason, "completed", resumed.error?.message);
  assert.equal(backend.calls.length, 7);
  near(resumed.usage.costUsd, 7 * CALL_USD);
  assert.equal(resumed.usage.calls, 7);
  // Every call is a model_call line of the log, priced by the built-in table it names.
  const lines = (await store.readLog(first.runId)).filter((l) => l.type === "model_call");
  assert.equal(lines.length, 7);
  assert.deepEqual(lines[0].price, {
    model: MODEL,
    source: "built-in prices of 2025-11-30",
    inputUsdPerMTok: 2.5,
    outputUsdPerMTok: 10,
    cacheReadUsdPerMTok: 1.25,
    cacheWriteUsdPerMTok: 2.5,
  });
  near(lines[0].costUsd as number, CALL_USD);
});

Deno.test("agent.json limits.budget: a token budget and a model-call budget stop the run too", async () => {
  const tokens = await looper({ limits: { budget: { tokens: 250_000 } } });
  const byTokens = await new StepFlowRunner(tokens.def, {
    backend: new ScriptedBackend(loopScript(5)),
  }).run({ cwd: tokens.root });
  assert.equal(byTokens.completionReason, "budget_exceeded");
  // 110,000 tokens a call: the third takes it to 330,000, past 250,000; no fourth.
  assert.equal(byTokens.usage.calls, 3);
  assert.match(byTokens.error!.message, /330,000 tokens of 250,000 tokens/);
  assert.match(byTokens.error!.message, /a higher budget \(500,000 tokens, say\)/);
  assert.deepEqual((byTokens.error!.details as { next?: { args?: string[] } }).next?.args, [
    "--budget-tokens",
    "500000",
  ]);

  const calls = await looper({ limits: { budget: { modelCalls: 2 } } });
  const backend = new ScriptedBackend(loopScript(5));
  const byCalls = await new StepFlowRunner(calls.def, { backend }).run({ cwd: calls.root });
  assert.equal(byCalls.completionReason, "budget_exceeded");
  assert.equal(backend.calls.length, 2, "a model-call budget is never overrun");
  assert.match(byCalls.error!.message, /limits\.budget\.modelCalls in agent\.json/);
});

Deno.test("re-asks are counted: a budget spent by a re-ask stops the run before the next", async () => {
  const { root, def } = await looper();
  const bad: ScriptedEntry = { text: "no JSON here", usage: CALL_USAGE };
  const backend = new ScriptedBackend({
    "work.loop": [bad, bad, bad, loopAnswer("complete")],
    "complete.loop": [closingAnswer],
  });
  const result = await new StepFlowRunner(def, {
    backend,
    budget: { usd: 0.5 },
    maxSchemaRetries: 3,
  }).run({ cwd: root });
  // The step call ($0.35) and one re-ask ($0.70): the second re-ask is refused.
  assert.equal(result.completionReason, "budget_exceeded");
  assert.equal(backend.calls.length, 2);
  assert.equal(backend.calls[1].kind, "reask");
  assert.match(
    result.error!.message,
    /the next model call of step "work\.loop" \(reask\) was not made/,
  );
  near(result.usage.costUsd, 2 * CALL_USD);
});

/** The looper's work step with tools: each call of the step reads a file, then answers. */
function toolScript(readsPerCall: number, calls: number): Record<string, ScriptedEntry[]> {
  const read: ScriptedEntry = {
    toolCalls: [{ name: "Read", arguments: { file_path: "notes.txt" } }],
    usage: CALL_USAGE,
  };
  const work: ScriptedEntry[] = [];
  for (let i = 0; i < calls; i++) {
    for (let r = 0; r < readsPerCall; r++) work.push(read);
    work.push(loopAnswer(i === calls - 1 ? "complete" : "repeat"));
  }
  return { "work.loop": work, "complete.loop": [closingAnswer] };
}

Deno.test("tool-loop turns are counted one by one; a stop inside the step resumes inside it, each turn paid once", async () => {
  const { root, def } = await looper({}, { allowedTools: ["Read"], permissionMode: "default" });
  await Deno.writeTextFile(`${root}/notes.txt`, "notes\n");
  const store = new MemoryRunStore();
  const script = toolScript(3, 1);
  const first = await new StepFlowRunner(def, {
    backend: new ScriptedBackend(script),
    store,
    budget: { usd: 0.9 },
  }).run({ cwd: root });
  // Turns of $0.35: the third turn is refused (2 × $0.35 = $0.70 < $0.90 → a third is admitted at
  // $0.70, bringing it to $1.05 ≥ $0.90: its tool call does not run, nor does the next turn).
  assert.equal(first.completionReason, "budget_exceeded", first.error?.message);
  near(first.usage.costUsd, 3 * CALL_USD);
  assert.equal(first.usage.calls, 3);
  assert.equal(first.usage.toolCalls, 2, "the third turn's tool call did not run");
  assert.match(first.error!.message, /the tool call Read of step "work\.loop" was not made/);
  const checkpoint = (await store.loadCheckpoint(first.runId))!;
  assert.equal(checkpoint.status, "budget_exceeded");
  assert.equal((checkpoint.state as { inStep?: { stepId: string } }).inStep?.stepId, "work.loop");

  // Raised: the resume replays the three recorded turns and two results, and pays only for the rest.
  const backend = new ScriptedBackend(script);
  const resumed = await new StepFlowRunner(def, { backend, store, budget: { usd: 5 } })
    .run({ resume: first.runId });
  assert.equal(resumed.completionReason, "completed", resumed.error?.message);
  // Turn 4 (the final answer of the step) and the closing step: two more calls.
  assert.equal(backend.calls.length, 2);
  near(resumed.usage.costUsd, 5 * CALL_USD);
  assert.equal(resumed.usage.calls, 5);
  assert.equal(resumed.usage.toolCalls, 3);
  const lines = (await store.readLog(first.runId)).filter((l) => l.type === "model_call");
  assert.equal(lines.length, 5);
});

Deno.test("a tool-call budget is never overrun: the call past it does not run", async () => {
  const { root, def } = await looper(
    { limits: { budget: { toolCalls: 2 } } },
    { allowedTools: ["Read"], permissionMode: "default" },
  );
  await Deno.writeTextFile(`${root}/notes.txt`, "notes\n");
  const result = await new StepFlowRunner(def, {
    backend: new ScriptedBackend(toolScript(3, 1)),
  }).run({ cwd: root });
  assert.equal(result.completionReason, "budget_exceeded");
  assert.equal(result.usage.toolCalls, 2);
  assert.match(result.error!.message, /2 tool calls of 2 tool calls/);
});

Deno.test("a child run's spend counts against its parent's budget, and a resume of the parent continues the child", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow_budget_child_" });
  await writeBossAgents(root);
  const def = await loadAgentDefinition("boss", { cwd: root });
  const store = new MemoryRunStore();
  const script = {
    "plan.boss": [routed("next")],
    "a.work": [routed("next")],
    "b.work": [routed("next")],
    "complete.work": [routed("complete")],
    "complete.boss": [routed("complete")],
  };
  // $0.80: plan.boss ($0.35) and a.work ($0.70) fit; b.work takes it to $1.05: complete.work is refused.
  const first = await new StepFlowRunner(def, {
    backend: new ScriptedBackend(script),
    store,
    budget: { usd: 0.8 },
  }).run({ cwd: root });
  assert.equal(first.completionReason, "budget_exceeded", first.error?.message);
  near(first.usage.costUsd, 3 * CALL_USD);
  assert.match(first.error!.message, /its child run \S+ \(agent worker\) was stopped by a budget/);
  assert.match(first.error!.message, /Top steps: "delegate\.boss" \$0\.7000 \(2 calls/);
  const childId = (await store.list()).find((r) => r.agent === "worker")!.runId;
  assert.equal((await store.loadCheckpoint(childId))!.status, "budget_exceeded");
  const childState = (await store.loadCheckpoint(childId))!.state as {
    usage: { costUsd: number };
  };
  near(childState.usage.costUsd, 2 * CALL_USD);

  const backend = new ScriptedBackend(script);
  const resumed = await new StepFlowRunner(def, { backend, store, budget: { usd: 5 } })
    .run({ resume: first.runId });
  assert.equal(resumed.completionReason, "completed", resumed.error?.message);
  // The same child goes on (complete.work), then the parent's last step: 5 calls in all, each paid once.
  assert.deepEqual(backend.calls.map((c) => c.stepId), ["complete.work", "complete.boss"]);
  near(resumed.usage.costUsd, 5 * CALL_USD);
  assert.equal(resumed.usage.calls, 5);
  assert.equal(resumed.state.history.find((h) => h.child)?.child?.runId, childId);
});

Deno.test("a dollar budget with a model that has no price is refused before the run starts", async () => {
  const { root, def } = await looper({ behavior: { completionType: "loop", model: "my-model" } });
  const store = new MemoryRunStore();
  const backend = new ScriptedBackend(loopScript(0));
  await assert.rejects(
    () => new StepFlowRunner(def, { backend, store, budget: { usd: 1 } }).run({ cwd: root }),
    (e: StepflowError) => {
      assert.equal(e.code, "BUDGET_PRICE_MISSING");
      assert.match(e.message, /my-model \(step "work\.loop" of agent looper\)/);
      assert.match(e.message, /--pricing FILE or STEPFLOW_PRICING=FILE/);
      return true;
    },
  );
  assert.equal(backend.calls.length, 0);
  assert.deepEqual(await store.list(), [], "nothing was recorded");
  // A token budget needs no price; the cost is shown as unknown, never $0.
  const tokens = await new StepFlowRunner(def, { backend, budget: { tokens: 1_000_000 } })
    .run({ cwd: root });
  assert.equal(tokens.completionReason, "completed");
  assert.equal(tokens.usage.callsWithoutCost, 2);
  // With the model's price in agent.json `pricing`, the dollar budget runs and prices the calls.
  const priced = await looper({
    behavior: { completionType: "loop", model: "my-model" },
    pricing: { "my-model": { inputUsdPerMTok: 1, outputUsdPerMTok: 4 } },
  });
  const result = await new StepFlowRunner(priced.def, {
    backend: new ScriptedBackend(loopScript(0)),
    budget: { usd: 1 },
  }).run({ cwd: priced.root });
  assert.equal(result.completionReason, "completed", result.error?.message);
  near(result.usage.costUsd, 2 * (100_000 * 1 + 10_000 * 4) / 1e6);
});

Deno.test("a budget given to the runner is checked: a negative or fractional value is BUDGET_INVALID", async () => {
  const { root, def } = await looper();
  for (const budget of [{ usd: -1 }, { tokens: 1.5 }, { modelCalls: 0 }]) {
    await assert.rejects(
      () =>
        new StepFlowRunner(def, { backend: new ScriptedBackend(loopScript(0)), budget })
          .run({ cwd: root }),
      (e: StepflowError) => e.code === "BUDGET_INVALID",
    );
  }
});
