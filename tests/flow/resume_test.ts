import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { out, seed004Files, writeAgent } from "./fixtures.ts";

async function setup() {
  const root = await Deno.makeTempDir();
  await writeAgent(root, "issue-solver", seed004Files());
  return await loadAgentDefinition("issue-solver", { cwd: root });
}

Deno.test("resume continues an interrupted run without repeating finished steps", async () => {
  const def = await setup();
  const store = new MemoryRunStore();
  const first = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "next", { analysis: { approach: "A" } })],
    "continuation.issue": [out("continuation.issue", "repeat"), { error: "crash" }],
  });
  const interrupted = await new StepFlowRunner(def, { backend: first, store }).run({
    args: { topic: "t" },
    runId: "run-1",
  });
  assert.equal(interrupted.completionReason, "step_failed");
  // pretend the process died mid-iteration: mark the checkpoint as still running
  const cp = (await store.loadCheckpoint("run-1"))!;
  const state = cp.state as { end?: unknown; historyLength: number; iteration: number };
  delete state.end;
  state.historyLength = 2;
  state.iteration = 2;
  (cp.state as { currentStepId: string }).currentStepId = "continuation.issue";
  await store.saveCheckpoint({ ...cp, status: "running" });

  const second = new ScriptedBackend({
    "continuation.issue": [out("continuation.issue", "complete")],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const resumed = await new StepFlowRunner(def, { backend: second, store }).run({
    resume: "run-1",
  });
  assert.equal(resumed.success, true, JSON.stringify(resumed.error));
  assert.equal(resumed.runId, "run-1");
  assert.deepEqual(resumed.state.history.map((h) => `${h.iteration}:${h.stepId}:${h.transition}`), [
    "1:initial.issue:next",
    "2:continuation.issue:repeat",
    "3:continuation.issue:complete",
    "4:complete.issue:complete",
  ]);
  assert.deepEqual(second.calls.map((c) => c.stepId), ["continuation.issue", "complete.issue"]);
  assert.equal(second.calls[0].iteration, 3);
  assert.deepEqual(resumed.state.handoff, { "initial.issue": { approach: "A" } });
  await assert.rejects(
    new StepFlowRunner(def, { backend: second, store }).run({ resume: "run-1" }),
    /already ended \(completed\)/,
  );
});

Deno.test("redrive restarts a failed run from its failed step", async () => {
  const def = await setup();
  const store = new MemoryRunStore();
  const first = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "next")],
    "continuation.issue": [{ error: "quota" }],
  });
  const failed = await new StepFlowRunner(def, { backend: first, store }).run({
    args: { topic: "t" },
    runId: "run-2",
  });
  assert.equal(failed.completionReason, "step_failed");
  await assert.rejects(
    new StepFlowRunner(def, { backend: first, store }).run({ resume: "run-2" }),
    /Redrive it to restart it from its failed step/,
  );
  const second = new ScriptedBackend({
    "continuation.issue": [out("continuation.issue", "complete")],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const redriven = await new StepFlowRunner(def, { backend: second, store }).run({
    redrive: "run-2",
  });
  assert.equal(redriven.success, true);
  assert.deepEqual(redriven.state.history.map((h) => `${h.stepId}:${h.transition}`), [
    "initial.issue:next",
    "continuation.issue:fail",
    "continuation.issue:complete",
    "complete.issue:complete",
  ]);
  const log = await store.readLog("run-2");
  assert.deepEqual(
    log.filter((l) => l.type.startsWith("run_")).map((l) => l.type),
    ["run_start", "run_end", "run_redrive", "run_end"],
  );
});

Deno.test("resume of an unknown run, or without a store, is a clear error", async () => {
  const def = await setup();
  const backend = new ScriptedBackend([]);
  await assert.rejects(
    new StepFlowRunner(def, { backend, store: new MemoryRunStore() }).run({ resume: "nope" }),
    /No run nope was found to resume/,
  );
  await assert.rejects(
    new StepFlowRunner(def, { backend }).run({ resume: "nope" }),
    /the runner has no store/,
  );
});

Deno.test("a second resume of a run being driven fails on the lock before reading any state", async () => {
  const def = await setup();
  const store = new MemoryRunStore();
  const first = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "next")],
    "continuation.issue": [{ error: "quota" }],
  });
  await new StepFlowRunner(def, { backend: first, store }).run({
    args: { topic: "t" },
    runId: "run-3",
  });
  const slow = new ScriptedBackend({
    "continuation.issue": [{ delayMs: 200, ...out("continuation.issue", "complete") }],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const driving = new StepFlowRunner(def, { backend: slow, store }).run({ redrive: "run-3" });
  await new Promise((r) => setTimeout(r, 20));
  await assert.rejects(
    new StepFlowRunner(def, { backend: slow, store }).run({ redrive: "run-3" }),
    (e: Error & { code?: string }) => e.code === "RUN_LOCKED",
  );
  assert.equal((await driving).success, true);
});
