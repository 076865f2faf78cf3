import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { loadScriptFile } from "../../src/llm/script_file.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { REPO_ROOT } from "./fixtures.ts";

Deno.test("release-approval demo: the plan, the wait for a person, the answer, the report", async () => {
  const definition = await loadAgentDefinition("release-approval", { cwd: REPO_ROOT });
  assert.equal(definition.steps["approve.release"].kind, "input");
  const script = join(REPO_ROOT, ".agent", "release-approval", "demo.script.yaml");
  const backend = await loadScriptFile(script);
  const store = new MemoryRunStore();
  const runner = new StepFlowRunner(definition, { backend, store });
  const first = await runner.run({ args: { version: "1.4.0" }, cwd: REPO_ROOT });
  assert.equal(first.completionReason, "waiting");
  assert.equal(
    first.waiting?.prompt,
    'Release 1.4.0?\nPlan: tag v1.4.0, build the packages, publish to the registry, announce\nRisk: low\nPick "next" to ship it or "abort" to stop; add a note for the report if you like.\n',
  );
  const done = await runner.answer(first.runId, { decision: "next", note: "go" }, {
    answeredBy: "test",
  });
  assert.equal(done.success, true, JSON.stringify(done.error));
  assert.deepEqual(done.state.history.map((h) => [h.stepId, h.intent]), [
    ["plan.release", "next"],
    ["approve.release", "next"],
    ["complete.release", "complete"],
  ]);
  assert.equal(backend.remaining(), 0, "every scripted answer is used");
  assert.match(backend.calls.at(-1)!.prompt, /The approver's note: go\./);
});
