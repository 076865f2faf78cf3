import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { loadScriptFile } from "../../src/llm/script_file.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { REPO_ROOT } from "./fixtures.ts";

Deno.test("release-train demo: the agent step's child waits for the approval, the answer to the parent finishes both; one script answers both agents", async () => {
  const definition = await loadAgentDefinition("release-train", { cwd: REPO_ROOT });
  const backend = await loadScriptFile(
    join(REPO_ROOT, ".agent", "release-train", "demo.script.yaml"),
  );
  assert.ok(backend instanceof ScriptedBackend);
  const store = new MemoryRunStore();
  const runner = new StepFlowRunner(definition, { backend, store });
  const first = await runner.run({ args: { train: "november" }, cwd: REPO_ROOT });
  assert.equal(first.completionReason, "waiting");
  assert.equal(first.waiting?.stepId, "ship.train");
  assert.equal(first.waiting?.child?.stepId, "approve.release");
  assert.match(first.waiting!.prompt, /Release 1\.5\.0\?/);

  const done = await runner.answer(first.runId, { decision: "next", note: "smooth" });
  assert.equal(done.completionReason, "completed", JSON.stringify(done.error));
  assert.deepEqual(done.output, {
    summary: "The next train shipped 1.5.0.",
    next_action: { action: "complete" },
  });
  assert.deepEqual(done.state.handoff["ship.train"], {
    summary: "Version 1.5.0 was released as planned.",
  });
  // Both agents' "complete.release" steps got their own answer (keys "<agent>/<stepId>").
  assert.deepEqual(
    backend.calls.map((c) => `${c.agent}/${c.stepId}`),
    [
      "release-train/plan.train",
      "release-approval/plan.release",
      "release-approval/complete.release",
      "release-train/complete.release",
    ],
  );
  assert.equal(backend.remaining(), 0, "every scripted answer is used");
});
