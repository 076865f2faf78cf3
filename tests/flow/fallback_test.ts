import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { out, seed004Files, writeAgent } from "./fixtures.ts";

Deno.test("the built-in issue_initial_default fallback is used only with allowFallback, with a warning", async () => {
  const root = await Deno.makeTempDir();
  const files = seed004Files();
  const steps = files.registry.steps as Record<string, Record<string, unknown>>;
  steps["initial.issue"].fallbackKey = "issue_initial_default";
  const dir = await writeAgent(root, "issue-solver", files);
  const def = await loadAgentDefinition("issue-solver", { cwd: root });
  await Deno.remove(`${dir}/prompts/steps/initial/issue/f_default.md`);

  const strict = await new StepFlowRunner(def, { backend: new ScriptedBackend([]) }).run({
    args: { topic: "t" },
  });
  assert.equal(strict.completionReason, "step_failed");
  assert.equal(strict.error?.code, "PROMPT_NOT_FOUND");
  assert.match(strict.error!.message, /steps\/initial\/issue\/f_default\.md/);

  const warnings: string[] = [];
  const backend = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "complete")],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const result = await new StepFlowRunner(def, {
    backend,
    allowFallback: true,
    onWarning: (m) => void warnings.push(m),
  }).run({ args: { topic: "the flaky login" } });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.match(backend.calls[0].prompt, /You are starting work on an issue: the flaky login/);
  assert.match(backend.calls[0].prompt, /"stepId": "initial\.issue"/);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /using fallback builtin:issue_initial_default/);
});
