import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import type { FanOutReport } from "../../src/events/types.ts";
import { fleetResponder, writeFleetAgents } from "./fan_out_fixtures.ts";

async function setup(step: Record<string, unknown> = {}, form?: "plain" | "confirm" | "tools") {
  const root = await Deno.makeTempDir();
  await writeFleetAgents(root, step, form);
  const definition = await loadAgentDefinition("fleet", { cwd: root });
  const store = new FileRunStore(join(root, "runs"));
  return { root, definition, store };
}

const files = (n: number) => Array.from({ length: n }, (_, i) => `src/f${i}.ts`);

Deno.test("a fan-out step runs one child per item, at most `concurrency` at once, and hands off the results in item order", async () => {
  const { definition, store } = await setup({ concurrency: 3 });
  const paths = files(10);
  // Later items answer sooner: the results must still come in item order.
  const backend = new ScriptedBackend(
    fleetResponder({ files: paths, delayMs: (p) => 10 + (10 - Number(p.slice(5, -3))) * 8 }),
  );
  let most = 0;
  const reports: FanOutReport[] = [];
  const runner = new StepFlowRunner(definition, {
    backend,
    store,
    events: {
      onFanOut: (_info, report) => {
        reports.push(report);
        most = Math.max(most, report.running);
      },
    },
  });
  const result = await runner.run();
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  const handoff = result.state.handoff["review.each"] as {
    results: { item: string; status: string; output: { verdict: string }; runId: string }[];
    counts: unknown;
  };
  assert.deepEqual(handoff.results.map((r) => r.item), paths);
  assert.deepEqual(
    handoff.results.map((r) => r.output),
    paths.map((p) => ({ verdict: `ok ${p}` })),
  );
  assert.deepEqual(handoff.counts, { total: 10, completed: 10, failed: 0 });
  assert.ok(most <= 3 && most >= 2, `most in flight ${most}`);
  // Each child is a run of the reviewer agent, linked to its parent and item.
  const log = await store.readLog(result.runId);
  const [fanOut] = fanOutsOf(log);
  assert.equal(fanOut.items.size, 10);
  for (const [index, item] of fanOut.items) {
    assert.equal(item.children.length, 1);
    const child = (await store.loadCheckpoint(item.children[0].childRunId))!;
    assert.equal(child.agent, "reviewer");
    assert.equal(child.status, "completed");
    assert.equal((child.state.parent as { item: number }).item, index);
    assert.equal(item.children[0].end?.status, "completed");
  }
  // Usage rolls up: 1 list + 10 reviews + 1 report, 10/5 tokens each.
  assert.equal(result.usage.inputTokens, 120);
  const entry = result.state.history.find((h) => h.stepId === "review.each")!;
  assert.deepEqual(entry.fanOut?.usage.inputTokens, 100);
  assert.equal(entry.fanOut?.completed, 10);
  assert.equal(reports.at(-1)?.completed, 10);
});

Deno.test("a fan-out over no items goes on at once with an empty list", async () => {
  const { definition, store } = await setup();
  const backend = new ScriptedBackend(fleetResponder({ files: [] }));
  const result = await new StepFlowRunner(definition, { backend, store }).run();
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  assert.deepEqual(result.state.handoff["review.each"], {
    results: [],
    counts: { total: 0, completed: 0, failed: 0 },
  });
});

Deno.test("onItemError continue collects a failed child; fail cancels the others and fails the step", async () => {
  const failing = (p: string) => p === "src/f2.ts";
  {
    const { definition, store } = await setup({ onItemError: "continue" });
    const backend = new ScriptedBackend(fleetResponder({ files: files(5), failing }));
    const result = await new StepFlowRunner(definition, { backend, store }).run();
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
    const { results, counts } = result.state.handoff["review.each"] as {
      results: { status: string; error: { code: string } | null; runId: string | null }[];
      counts: unknown;
    };
    assert.deepEqual(counts, { total: 5, completed: 4, failed: 1 });
    assert.equal(results[2].status, "failed");
    assert.ok(results[2].error?.code);
    assert.ok(results[2].runId);
  }
  {
    const { definition, store } = await setup({ onItemError: "fail", concurrency: 2 });
    const backend = new ScriptedBackend(
      fleetResponder({ files: files(8), failing, delayMs: (p) => (failing(p) ? 30 : 400) }),
    );
    const result = await new StepFlowRunner(definition, { backend, store }).run();
    assert.equal(result.completionReason, "step_failed");
    assert.equal(result.error?.code, "FANOUT_ITEM_FAILED", result.error?.message);
    const [fanOut] = fanOutsOf(await store.readLog(result.runId));
    // f0, f1 started; f1 ended cancelled? f0 ran 400 ms: cancelled. f2 started after... no more.
    const statuses = [...fanOut.items.values()].map((i) => i.children[0].end?.status);
    assert.ok(statuses.includes("failed"), JSON.stringify(statuses));
    assert.ok(fanOut.items.size < 8, `started ${fanOut.items.size}`);
  }
});

Deno.test("onItemError retry=N gives a failing item new children, at most N", async () => {
  const { definition, store } = await setup({ onItemError: "retry=2" });
  let calls = 0;
  const responder = fleetResponder({ files: files(3) });
  const backend = new ScriptedBackend((req) => {
    if (req.stepId === "complete.review" && req.prompt.includes("src/f1.ts") && calls++ < 2) {
      return { error: "flaky" };
    }
    return responder(req);
  });
  const result = await new StepFlowRunner(definition, { backend, store }).run();
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  const [fanOut] = fanOutsOf(await store.readLog(result.runId));
  assert.equal(fanOut.items.get(1)!.children.length, 3);
  assert.equal(fanOut.items.get(0)!.children.length, 1);
  const { counts } = result.state.handoff["review.each"] as { counts: unknown };
  assert.deepEqual(counts, { total: 3, completed: 3, failed: 0 });
});

Deno.test("children that wait make the run wait on each; each is answered on its own, in any order, and two answers to one child: one wins", async () => {
  const { definition, store } = await setup({ concurrency: 4 }, "confirm");
  const backend = new ScriptedBackend(fleetResponder({ files: files(3) }));
  const runner = () => new StepFlowRunner(definition, { backend, store });
  const first = await runner().run();
  assert.equal(first.completionReason, "waiting", JSON.stringify(first.error));
  assert.equal(first.waits?.length, 3);
  const waits = first.waits!;
  assert.deepEqual(waits.map((w) => w.child?.item), [0, 1, 2]);
  assert.equal((await store.loadCheckpoint(first.runId))?.status, "waiting");
  // Several waits: an answer must say which.
  await assert.rejects(
    runner().answer(first.runId, { decision: "next" }),
    (e: Error & { code?: string }) => e.code === "INPUT_REQUEST_AMBIGUOUS",
  );
  // A bad answer is refused against the child's schema; nothing is recorded.
  await assert.rejects(
    runner().answer(first.runId, { decision: "maybe" }, { requestId: waits[1].requestId }),
    (e: Error & { code?: string }) => e.code === "INPUT_ANSWER_INVALID",
  );
  // The second item first: its child goes on, the others still wait.
  const second = await runner().answer(first.runId, { decision: "next", note: "b" }, {
    requestId: waits[1].requestId,
  });
  assert.equal(second.completionReason, "waiting");
  assert.deepEqual(second.waits?.map((w) => w.child?.item), [0, 2]);
  assert.equal((await store.loadCheckpoint(waits[1].child!.runId))?.status, "completed");
  // The two others at once, and a second answer to the third: exactly one of those two wins.
  const answers = await Promise.allSettled([
    runner().answer(first.runId, { decision: "next", note: "c1" }, {
      requestId: waits[2].requestId,
    }),
    runner().answer(first.runId, { decision: "next", note: "a" }, {
      requestId: waits[0].requestId,
    }),
    runner().answer(first.runId, { decision: "next", note: "c2" }, {
      requestId: waits[2].requestId,
    }),
  ]);
  const refused = answers.filter((a) => a.status === "rejected");
  assert.equal(refused.length, 1, JSON.stringify(answers.map((a) => a.status)));
  assert.equal(
    ((refused[0] as PromiseRejectedResult).reason as { code?: string }).code,
    "INPUT_NOT_WAITING",
  );
  // The run went on to its end in one of the answering drives.
  let parent = await store.loadCheckpoint(first.runId);
  for (let i = 0; i < 100 && parent?.status !== "completed"; i++) {
    await new Promise((r) => setTimeout(r, 50));
    parent = await store.loadCheckpoint(first.runId);
  }
  assert.equal(parent?.status, "completed");
  const log = await store.readLog(first.runId);
  const [fanOut] = fanOutsOf(log);
  for (const item of fanOut.items.values()) assert.equal(item.children.length, 1);
  const third = (await store.readLog(waits[2].child!.runId)).filter((e) =>
    e.type === "input_answer"
  );
  assert.equal(third.length, 1);
});
