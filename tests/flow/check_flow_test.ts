import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { seed001Files, writeAgent } from "./fixtures.ts";

const ok = (message = "fine") => ({ output: { result: "ok", message } });
const ng = (message = "broken") => ({ output: { result: "ng", message } });

async function load(mutate?: (files: ReturnType<typeof seed001Files>) => void) {
  const root = await Deno.makeTempDir();
  const files = seed001Files();
  mutate?.(files);
  await writeAgent(root, "code-improver", files);
  return await loadAgentDefinition("code-improver", { cwd: root });
}

Deno.test("seed 001 flow: check NG on implement falls back to analyze, then completes", async () => {
  const def = await load();
  const backend = new ScriptedBackend({
    s_a8f3: ["analysis 1", "analysis 2"],
    "s_a8f3#check": [ok(), ok()],
    s_b2c1: ["impl 1", "impl 2", "impl 3", "impl 4", "impl 5", "impl 6"],
    // implement may run up to iterations.max = 5 times before onFail applies
    "s_b2c1#check": [ng("2 failures"), ng(), ng(), ng(), ng("still red"), ok("green")],
    s_c9d4: ["review"],
    "s_c9d4#check": ['Looks good.\n```json\n{"result": "pass", "message": "all done"}\n```'],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "auth" } });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(result.completionReason, "completed");
  assert.equal(result.finalStepId, "s_c9d4");
  const trail = result.state.history.map((h) =>
    `${h.stepId}:${h.transition}:${h.checkResult?.result}`
  );
  assert.deepEqual(trail, [
    "s_a8f3:next:ok",
    "s_b2c1:repeat:ng",
    "s_b2c1:repeat:ng",
    "s_b2c1:repeat:ng",
    "s_b2c1:repeat:ng",
    "s_b2c1:fallback:ng",
    "s_a8f3:next:ok",
    "s_b2c1:next:ok",
    "s_c9d4:complete:ok",
  ]);
  assert.equal(result.state.history[5].checkResult?.message, "still red");
  assert.equal(result.state.history[5].nextStepId, "s_a8f3");
  assert.deepEqual(result.state.history.map((h) => h.attempt), [1, 1, 2, 3, 4, 5, 1, 1, 1]);
  assert.equal(result.iterations, 9);
  assert.equal(backend.remaining(), 0);
  // prompts: variables substituted, system prompt resolved, checks sent with kind "check"
  const first = backend.calls[0];
  assert.equal(first.prompt, "Analyze auth (iteration 1, step s_a8f3).");
  assert.equal(first.systemPrompt, "You improve code carefully. Topic: auth");
  assert.equal(backend.calls[1].kind, "check");
  assert.equal(backend.calls[1].outputSchema?.type, "object");
});

Deno.test("seed 001 flow: a retry that runs out ends retries_exhausted", async () => {
  const def = await load();
  const backend = new ScriptedBackend({
    s_a8f3: ["a", "b", "c"],
    "s_a8f3#check": [ng("no"), ng("no"), ng("never")],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "x" } });
  assert.equal(result.success, false);
  assert.equal(result.completionReason, "retries_exhausted");
  assert.equal(result.error?.code, "RETRIES_EXHAUSTED");
  assert.match(result.error!.message, /s_a8f3" failed 3 checks over 3 attempts .*never/);
  assert.deepEqual(result.state.history.map((h) => h.transition), ["retry", "retry", "fail"]);
  assert.deepEqual(result.state.history.map((h) => h.attempt), [1, 2, 3]);
});

Deno.test("check responses: unparseable is NG with the reason; true/false/fail are understood", async () => {
  const def = await load((f) => {
    const s = (f.registry.steps as Record<string, { check: { onFail: unknown } }>).s_a8f3;
    s.check.onFail = { retry: true, maxRetries: 0 }; // unlimited
  });
  const backend = new ScriptedBackend({
    s_a8f3: ["1", "2", "3", "4"],
    "s_a8f3#check": [
      "I think it is fine",
      { output: { result: false, message: "bool false" } },
      '{"result": "FAIL"}',
      { output: { result: true } },
    ],
    s_b2c1: ["i"],
    "s_b2c1#check": [ok()],
    s_c9d4: ["r"],
    "s_c9d4#check": [ok()],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "x" } });
  assert.equal(result.success, true);
  const checks = result.state.history.slice(0, 4).map((h) => h.checkResult);
  assert.equal(checks[0]?.result, "ng");
  assert.match(checks[0]!.message, /could not be parsed/);
  assert.deepEqual(checks[1], { result: "ng", message: "bool false" });
  assert.equal(checks[2]?.result, "ng");
  assert.equal(checks[3]?.result, "ok");
});

Deno.test("iterations.min runs the step that many times before the first check", async () => {
  const def = await load((f) => {
    const s = (f.registry.steps as Record<string, { iterations: unknown }>).s_a8f3;
    s.iterations = { min: 3, max: 3 };
  });
  const backend = new ScriptedBackend({
    s_a8f3: ["1", "2", "3"],
    "s_a8f3#check": [ok()],
    s_b2c1: ["i"],
    "s_b2c1#check": [ok()],
    s_c9d4: ["r"],
    "s_c9d4#check": [ok()],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "x" } });
  assert.equal(result.success, true);
  assert.deepEqual(
    result.state.history.slice(0, 3).map((h) => [h.transition, h.checkResult?.result]),
    [["repeat", undefined], ["repeat", undefined], ["next", "ok"]],
  );
  assert.equal(backend.calls.filter((c) => c.kind === "check" && c.stepId === "s_a8f3").length, 1);
});
