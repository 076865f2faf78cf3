/**
 * Handoff variables some path does not set: a load-time warning per step, and
 * optional variables `{handoff.key?}` / `{handoff.key?=default}` that silence it and run.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { copyExample, load, writeText } from "./fixtures.ts";

const COMPLETE_PROMPT = "prompts/steps/complete/issue/f_default.md";

/** issue-solver where continuation.issue also hands off "verdict" and the report uses it. */
async function agentUsing(reportPrompt: string) {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["continuation.issue"].structuredGate.handoffFields.push("review.verdict");
  });
  await writeText(join(agent.dir, COMPLETE_PROMPT), reportPrompt);
  return agent;
}

Deno.test("handoff: a prompt key that one path does not hand off is a load warning naming step, providers and such a path", async () => {
  // initial.issue may complete directly, skipping continuation.issue (the only "verdict" provider).
  const def = await load(await agentUsing("Verdict: {handoff.verdict}. Plan: {handoff.approach}."));
  assert.deepEqual(def.warnings, [
    'steps_registry.json: step "complete.issue": its prompt uses {handoff.verdict}, but some path from the entry step "initial.issue" reaches it without passing a step that hands "verdict" off ("continuation.issue"): initial.issue → complete.issue, so a run can fail there with PROMPT_VARIABLES_MISSING. Hand it off on every path, or write {handoff.verdict?} (empty when unset) or {handoff.verdict?=<default>}.',
  ]);
});

Deno.test("handoff: a key no step hands off is a load error naming step, key and the fix; optional forms pass", async () => {
  await assert.rejects(
    load(await agentUsing("Mood: {handoff.mood}.")),
    (e: Error & { code?: string }) => {
      assert.equal(e.code, "AGENT_DEFINITION_INVALID");
      assert.match(
        e.message,
        /steps_registry\.json: step "complete\.issue": its prompt uses \{handoff\.mood\}, but no step hands "mood" off \(no handoffFields path ends in "mood"\), so every run that reaches it fails with PROMPT_VARIABLES_MISSING\. Add a path ending in "mood" to the handoffFields of a step before it, or write \{handoff\.mood\?\}/,
      );
      return true;
    },
  );
  const optional = await load(
    await agentUsing("Verdict: {handoff.verdict?}. Mood: {handoff.mood?=calm}."),
  );
  assert.deepEqual(optional.warnings, []);
});

Deno.test("handoff: a key handed off only after the step (no path provides it before) is a load error", async () => {
  // "approach" is handed off by initial.issue, the entry step, which runs before the prompt below.
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["continuation.issue"].structuredGate.handoffFields.push("review.verdict");
  });
  await writeText(
    join(agent.dir, "prompts/steps/initial/issue/f_default.md"),
    "Start {uv-topic}; earlier verdict: {handoff.verdict}.",
  );
  await assert.rejects(load(agent), (e: Error) => {
    assert.match(
      e.message,
      /step "initial\.issue": its prompt uses \{handoff\.verdict\}, but no path from the entry step "initial\.issue" passes a step that hands "verdict" off before it \(only "continuation\.issue" does, and no path leads from it to "initial\.issue"\)/,
    );
    return true;
  });
});

Deno.test("handoff: keys handed off on every path (loops and repeats included) are not warned about", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    // Only via continuation.issue now: every path to the report passes it.
    r.steps["initial.issue"].structuredGate.allowedIntents = ["next", "repeat"];
    delete r.steps["initial.issue"].transitions.complete;
    r.steps["continuation.issue"].structuredGate.handoffFields.push("review.verdict");
  });
  await writeText(join(agent.dir, COMPLETE_PROMPT), "Verdict: {handoff.verdict}.");
  assert.deepEqual((await load(agent)).warnings, []);
});

Deno.test("handoff: {handoff.verdict?=none} runs on the path that sets nothing", async () => {
  const agent = await agentUsing("Verdict: {handoff.verdict?=none}; empty: [{handoff.other?}].");
  const def = await load(agent);
  const backend = new ScriptedBackend({
    "initial.issue": [{
      output: {
        stepId: "initial.issue",
        issue: { title: "t", summary: "s" },
        analysis: { understanding: "u", approach: "a" },
        next_action: { action: "complete", reason: "trivial" },
      },
    }],
    "complete.issue": [{
      output: {
        stepId: "complete.issue",
        summary: "done",
        changed_files: [],
        verification: [],
      },
    }],
  });
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "t" },
    cwd: agent.root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  const report = backend.calls.find((c) => c.stepId === "complete.issue")!;
  assert.match(report.prompt, /Verdict: none; empty: \[\]\./);
});
