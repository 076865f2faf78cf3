/**
 * A fan-out under the run's budget: each child's spend counts against the parent's budget as it
 * happens, a spent budget starts no more children, the run ends `budget_exceeded` resumably, and a
 * resume with a higher budget carries on the stopped child inside its step and starts the others —
 * no item given a second child, every call paid once.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { fleetResponder, writeFleetAgents } from "./fan_out_fixtures.ts";

const files = (n: number) => Array.from({ length: n }, (_, i) => `src/f${i}.ts`);

async function setup(step: Record<string, unknown>) {
  const root = await Deno.makeTempDir({ prefix: "stepflow_fanout_budget_" });
  await writeFleetAgents(root, step);
  const definition = await loadAgentDefinition("fleet", { cwd: root });
  const store = new FileRunStore(join(root, "runs"));
  return { root, definition, store };
}

Deno.test("a budget on the parent stops a fan-out: no more children start, the run ends budget_exceeded, and a resume with a higher budget finishes every item with one child each", async () => {
  const { root, definition, store } = await setup({ concurrency: 4 });
  const paths = files(8);
  // list.files is call 1; the first batch of four children asks for four more: one is refused.
  const backend = new ScriptedBackend(fleetResponder({ files: paths, delayMs: () => 20 }));
  const first = await new StepFlowRunner(definition, {
    backend,
    store,
    budget: { modelCalls: 4 },
  }).run({ cwd: root });
  assert.equal(first.completionReason, "budget_exceeded", JSON.stringify(first.error));
  assert.equal(first.error?.code, "BUDGET_EXCEEDED");
  assert.match(first.error!.message, /Fan-out step "review\.each" stopped for the budget/);
  assert.match(first.error!.message, /then resume the run\./);
  assert.deepEqual((first.error!.details as { next?: unknown }).next, {
    action: "resume",
    runId: first.runId,
  });
  assert.equal(first.usage.calls, 4, "never a call past the budget");
  assert.equal((await store.loadCheckpoint(first.runId))!.status, "budget_exceeded");

  const [before] = fanOutsOf(await store.readLog(first.runId));
  const started = [...before.items.entries()].filter(([, item]) => item.children.length > 0);
  // The first batch began on a fresh budget; a later child starts only while calls are left (a
  // busy machine may end one child before the others asked), and none after the spend.
  assert.ok(started.length >= 4 && started.length < 8, `started ${started.length}`);
  const ends = started.map(([, item]) => item.children[0].end?.status);
  assert.equal(ends.filter((s) => s === "completed").length, 3, `ends ${ends}`);
  assert.equal(ends.filter((s) => s === "budget_exceeded").length, started.length - 3);
  const stopped = started.find(([, item]) => item.children[0].end?.status === "budget_exceeded")!;
  const stoppedId = stopped[1].children[0].childRunId;
  assert.equal(
    (await store.forAgent!(definition.steps["review.each"].child!).loadCheckpoint(stoppedId))!
      .status,
    "budget_exceeded",
  );

  const again = new ScriptedBackend(fleetResponder({ files: paths }));
  const resumed = await new StepFlowRunner(definition, {
    backend: again,
    store,
    budget: { modelCalls: 20 },
  }).run({ resume: first.runId });
  assert.equal(resumed.completionReason, "completed", JSON.stringify(resumed.error));
  // The stopped child's one call, the four items never started, the report: each call once.
  assert.equal(again.calls.length, 6);
  assert.equal(resumed.usage.calls, 10);
  assert.equal(resumed.usage.inputTokens, 100);
  const handoff = resumed.state.handoff["review.each"] as {
    results: { item: string; status: string; runId: string }[];
    counts: unknown;
  };
  assert.deepEqual(handoff.results.map((r) => r.item), paths);
  assert.deepEqual(handoff.counts, { total: 8, completed: 8, failed: 0 });
  assert.equal(handoff.results[stopped[0]].runId, stoppedId, "the stopped child went on");
  const [after] = fanOutsOf(await store.readLog(first.runId));
  for (const [index, item] of after.items) {
    assert.equal(item.children.length, 1, `item ${index} has one child`);
  }
});

Deno.test("a budget in tokens: the children's spend reaches the parent as it happens, each counted once", async () => {
  const { root, definition, store } = await setup({ concurrency: 2 });
  const paths = files(6);
  // 15 tokens a call: list.files and two children fit under 50; the third child's spend passes it.
  const backend = new ScriptedBackend(fleetResponder({ files: paths, delayMs: () => 10 }));
  const seen: number[] = [];
  const first = await new StepFlowRunner(definition, {
    backend,
    store,
    budget: { tokens: 50 },
    events: { onFanOut: (_info, report) => void seen.push(report.completed) },
  }).run({ cwd: root });
  assert.equal(first.completionReason, "budget_exceeded", JSON.stringify(first.error));
  const checkpoint = (await store.loadCheckpoint(first.runId))!;
  const state = checkpoint.state as {
    usage: { calls: number; inputTokens: number; outputTokens: number };
    spendByStep: Record<string, { calls: number }>;
  };
  // The parent's count equals the calls its children made: none counted twice, none missed.
  const children = await store.forAgent!(definition.steps["review.each"].child!).list();
  assert.ok(children.length >= 3 && children.length < 6, `children ${children.length}`);
  assert.equal(
    state.usage.calls,
    1 + backend.calls.filter((c) => c.stepId !== "list.files").length,
  );
  assert.equal(state.usage.inputTokens, 10 * state.usage.calls);
  assert.equal(state.spendByStep["review.each"].calls, state.usage.calls - 1);

  const resumed = await new StepFlowRunner(definition, {
    backend: new ScriptedBackend(fleetResponder({ files: paths })),
    store,
    budget: { tokens: 500 },
  }).run({ resume: first.runId });
  assert.equal(resumed.completionReason, "completed", JSON.stringify(resumed.error));
  // 1 list + 6 children + 1 report, whatever the stop cut in between.
  assert.equal(resumed.usage.calls, 8);
  assert.equal(resumed.usage.inputTokens, 80);
});
