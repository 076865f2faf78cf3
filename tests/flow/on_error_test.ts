import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { out, seed004Files, writeAgent } from "./fixtures.ts";

type Steps = Record<string, Record<string, unknown>>;

async function setup(onError?: unknown) {
  const root = await Deno.makeTempDir();
  const files = seed004Files();
  const steps = files.registry.steps as Steps;
  if (onError !== undefined) steps["initial.issue"].onError = onError;
  await writeAgent(root, "issue-solver", files);
  return await loadAgentDefinition("issue-solver", { cwd: root });
}

const done = {
  "continuation.issue": [out("continuation.issue", "complete")],
  "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
};

Deno.test('onError "fail" (default) ends the run step_failed', async () => {
  const def = await setup();
  const backend = new ScriptedBackend({ "initial.issue": [{ error: "HTTP 503" }] });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
  assert.equal(result.completionReason, "step_failed");
  assert.equal(result.error?.stepId, "initial.issue");
  assert.match(result.error!.message, /HTTP 503/);
  assert.equal(result.state.history[0].transition, "fail");
});

Deno.test('onError "continue" records the error and follows transitions.next', async () => {
  const def = await setup("continue");
  const backend = new ScriptedBackend({ "initial.issue": [{ error: "boom" }], ...done });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
  assert.equal(result.success, true);
  assert.equal(result.state.history[0].transition, "continue");
  assert.equal(result.state.history[0].nextStepId, "continuation.issue");
  assert.match(result.state.history[0].error!, /boom/);
});

Deno.test('onError "retry=2" retries with backoff, then fails', async () => {
  const def = await setup("retry=2");
  const retries: number[] = [];
  const backend = new ScriptedBackend({
    "initial.issue": [{ error: "1" }, { error: "2" }, { error: "3" }],
  });
  const started = Date.now();
  const result = await new StepFlowRunner(def, {
    backend,
    retryBackoff: { initialMs: 20, factor: 2 },
    events: { onStepRetry: (_i, attempt) => void retries.push(attempt) },
  }).run({ args: { topic: "t" } });
  assert.ok(Date.now() - started >= 55, "backoff 20 + 40 ms");
  assert.deepEqual(retries, [1, 2]);
  assert.equal(result.completionReason, "step_failed");
  assert.match(result.error!.message, /gave up after 2 retries/);
  assert.deepEqual(result.state.history.map((h) => h.transition), ["retry", "retry", "fail"]);
});

Deno.test("onError { retry: 1 } recovers when the retry succeeds", async () => {
  const def = await setup({ retry: 1 });
  const backend = new ScriptedBackend({
    "initial.issue": [{ error: "flaky" }, out("initial.issue", "next")],
    ...done,
  });
  const result = await new StepFlowRunner(def, { backend, retryBackoff: { initialMs: 1 } }).run({
    args: { topic: "t" },
  });
  assert.equal(result.success, true);
  assert.deepEqual(result.state.history.slice(0, 2).map((h) => [h.transition, h.attempt]), [
    ["retry", 1],
    ["next", 2],
  ]);
});

Deno.test('onError jump="complete.issue" moves to that step', async () => {
  for (
    const policy of ['jump="complete.issue"', "jump=complete.issue", { jump: "complete.issue" }]
  ) {
    const def = await setup(policy);
    const jumps: string[] = [];
    const backend = new ScriptedBackend({ "initial.issue": [{ error: "x" }], ...done });
    const result = await new StepFlowRunner(def, {
      backend,
      events: { onStepJump: (_i, t) => void jumps.push(t) },
    }).run({ args: { topic: "t" } });
    assert.equal(result.success, true, JSON.stringify(policy));
    assert.deepEqual(jumps, ["complete.issue"]);
    assert.equal(result.state.history[0].transition, "jump");
  }
});

Deno.test("onError never applies to configuration errors (missing prompt variable)", async () => {
  const def = await setup("continue");
  const backend = new ScriptedBackend([]);
  const result = await new StepFlowRunner(def, { backend }).run({ args: {} });
  assert.equal(result.completionReason, "step_failed");
  assert.equal(result.error?.code, "PROMPT_VARIABLES_MISSING");
});
