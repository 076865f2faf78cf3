import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { OutputSchemaCache } from "../../src/flow/output_validator.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { out, seed004Files, writeAgent } from "./fixtures.ts";

type Files = ReturnType<typeof seed004Files>;
type Steps = Record<string, Record<string, unknown> & { structuredGate: Record<string, unknown> }>;

async function setup(mutate?: (files: Files, steps: Steps) => void) {
  const root = await Deno.makeTempDir();
  const files = seed004Files();
  mutate?.(files, files.registry.steps as Steps);
  await writeAgent(root, "issue-solver", files);
  return { root, def: await loadAgentDefinition("issue-solver", { cwd: root }) };
}

Deno.test("seed 004 flow: repeat, handoff, closing step, output", async () => {
  const { def, root } = await setup((files) => {
    files.prompts["steps/continuation/issue/f_default.md"] =
      "Continue with approach {handoff.approach} (iteration {iteration}).";
    files.prompts["steps/complete/issue/f_default.md"] =
      "Report on {handoff.issue}: done {handoff.completed_files}.";
  });
  const backend = new ScriptedBackend({
    "initial.issue": [
      out("initial.issue", "repeat"),
      out("initial.issue", "continue", {
        analysis: { understanding: "login flakes", approach: "fix the clock" },
        issue: "#42",
      }),
    ],
    "continuation.issue": [
      out("continuation.issue", "next", { progress: { completed_files: ["a.ts"] } }),
      out("continuation.issue", "complete", { progress: { completed_files: ["a.ts", "b.ts"] } }),
    ],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "fixed" } }],
  });
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "flaky login" },
    cwd: root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(result.completionReason, "completed");
  assert.equal(result.finalStepId, "complete.issue");
  assert.deepEqual(result.output, { stepId: "complete.issue", summary: "fixed" });
  assert.deepEqual(
    result.state.history.map((h) => [h.stepId, h.intent, h.transition, h.nextStepId]),
    [
      ["initial.issue", "repeat", "repeat", "initial.issue"],
      ["initial.issue", "next", "next", "continuation.issue"],
      ["continuation.issue", "next", "next", "continuation.issue"],
      ["continuation.issue", "complete", "complete", "complete.issue"],
      ["complete.issue", undefined, "complete", undefined],
    ],
  );
  assert.deepEqual(result.state.handoff, {
    "initial.issue": { understanding: "login flakes", approach: "fix the clock", issue: "#42" },
    "continuation.issue": { completed_files: ["a.ts", "b.ts"] },
  });
  // handoff reaches later prompts; the schema is sent; frontmatter stripped; JSON braces kept
  assert.equal(
    backend.calls[0].prompt,
    'Understand flaky login. Answer like {"next_action": {"action": "next"}}.',
  );
  assert.equal(backend.calls[2].prompt, "Continue with approach fix the clock (iteration 3).");
  assert.equal(backend.calls[4].prompt, 'Report on #42: done ["a.ts","b.ts"].');
  assert.equal(
    (backend.calls[0].outputSchema?.properties as Record<string, { const?: string }>).stepId.const,
    "initial.issue",
  );
  assert.equal(backend.calls[0].cwd, root);
});

Deno.test("intent mapping: continue/retry/wait/escalate and the five intents, case-insensitive", async () => {
  const cases: Array<[string, string, string]> = [
    ["continue", "next", "next"],
    ["Next", "next", "next"],
    ["retry", "repeat", "repeat"],
    ["WAIT", "repeat", "repeat"],
    ["repeat", "repeat", "repeat"],
    ["escalate", "abort", "abort"],
    ["abort", "abort", "abort"],
    ["complete", "complete", "complete"],
  ];
  for (const [raw, intent, transition] of cases) {
    const { def } = await setup((_f, steps) => {
      steps["initial.issue"].structuredGate.allowedIntents = [
        "next",
        "repeat",
        "complete",
        "abort",
      ];
    });
    const backend = new ScriptedBackend({
      "initial.issue": [out("initial.issue", raw), out("initial.issue", "complete")],
      "continuation.issue": [out("continuation.issue", "complete")],
      "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
    });
    const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
    const first = result.state.history[0];
    assert.equal(first.intent, intent, raw);
    assert.equal(first.transition, transition, raw);
    if (intent === "abort") {
      assert.equal(result.completionReason, "aborted");
      assert.equal(result.success, false);
    } else {
      assert.equal(result.success, true, `${raw}: ${JSON.stringify(result.error)}`);
    }
  }
});

Deno.test("jump goes to the step named at targetField; a non-step target fails routing", async () => {
  const { def } = await setup((_f, steps) => {
    steps["initial.issue"].structuredGate.allowedIntents = ["next", "jump", "complete"];
    steps["initial.issue"].transitions = {
      next: { target: "continuation.issue" },
      complete: { target: "complete.issue" },
    };
  });
  const jumps: string[] = [];
  const backend = new ScriptedBackend({
    "initial.issue": [
      out("initial.issue", "jump", {}),
      out("initial.issue", "jump"),
    ],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  // first output has no target → routing fails
  const failed = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
  assert.equal(failed.completionReason, "step_routing_failed");
  assert.match(failed.error!.message, /intent "jump" but no target/);

  const backend2 = new ScriptedBackend({
    "initial.issue": [{
      output: {
        stepId: "initial.issue",
        next_action: { action: "jump", details: { target: "complete.issue" } },
      },
    }],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const result = await new StepFlowRunner(def, {
    backend: backend2,
    events: { onStepJump: (info, target) => void jumps.push(`${info.stepId}->${target}`) },
  }).run({ args: { topic: "t" } });
  assert.equal(result.success, true);
  assert.deepEqual(jumps, ["initial.issue->complete.issue"]);
  assert.equal(result.state.history[0].transition, "jump");

  const backend3 = new ScriptedBackend({
    "initial.issue": [{
      output: {
        stepId: "initial.issue",
        next_action: { action: "jump", details: { target: "nowhere" } },
      },
    }],
  });
  const bad = await new StepFlowRunner(def, { backend: backend3 }).run({ args: { topic: "t" } });
  assert.equal(bad.completionReason, "step_routing_failed");
  assert.match(bad.error!.message, /"nowhere", which is not a flow step/);
});

Deno.test("an intent outside allowedIntents uses fallbackIntent, else ends step_routing_failed", async () => {
  const { def } = await setup();
  const backend = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "abort")], // not allowed → fallbackIntent next
    "continuation.issue": [out("continuation.issue", "dance")], // unknown → fallback next
  });
  const warnings: string[] = [];
  const runner = new StepFlowRunner(def, { backend, onWarning: (m) => void warnings.push(m) });
  const result = await runner.run({ args: { topic: "t" } });
  assert.deepEqual(result.state.history.slice(0, 2).map((h) => h.intent), ["next", "next"]);
  assert.equal(warnings.length, 2);
  assert.match(warnings[0], /"abort" \(not allowed\); using fallbackIntent "next"/);

  const { def: strict } = await setup((_f, steps) => {
    delete steps["initial.issue"].structuredGate.fallbackIntent;
  });
  const result2 = await new StepFlowRunner(strict, {
    backend: new ScriptedBackend({ "initial.issue": [out("initial.issue", "abort")] }),
  }).run({ args: { topic: "t" } });
  assert.equal(result2.completionReason, "step_routing_failed");
  assert.match(result2.error!.message, /not in allowedIntents \(next, repeat, complete\)/);
});

Deno.test("R4: no intent from iteration 2 on aborts with the seed's message", async () => {
  const { def } = await setup((f) => {
    // continuation.issue's schema does not require next_action here
    const defs = (f.schemas!["issue.schema.json"] as { definitions: Record<string, unknown> })
      .definitions;
    defs["continuation.issue"] = { type: "object" };
  });
  const backend = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "next")],
    "continuation.issue": [{ output: { stepId: "continuation.issue" } }],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
  assert.equal(result.completionReason, "step_routing_failed");
  assert.equal(result.success, false);
  assert.equal(
    result.error!.message,
    '[StepFlow] No intent produced for iteration 2 on step "continuation.issue".\n' +
      "Flow steps must produce structured output with a valid intent.\n" +
      "Check that the step's schema includes next_action.action and the LLM returns valid JSON.",
  );
  assert.equal(result.finalStepId, "continuation.issue");
});

Deno.test("R4 exemption at iteration 1: no intent uses fallbackIntent", async () => {
  const { def } = await setup((f) => {
    const defs = (f.schemas!["issue.schema.json"] as { definitions: Record<string, unknown> })
      .definitions;
    defs["initial.issue"] = { type: "object" };
  });
  const backend = new ScriptedBackend({
    "initial.issue": [{ output: { stepId: "initial.issue" } }],
    "continuation.issue": [out("continuation.issue", "complete")],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
  assert.equal(result.success, true);
  assert.equal(result.state.history[0].intent, "next");
});

Deno.test("two-strike rule: a schema that fails to resolve twice ends the run; backend never called", async () => {
  const { def, root } = await setup();
  // break the pointer after loading (load-time validation would refuse it)
  const file = `${root}/.agent/issue-solver/schemas/issue.schema.json`;
  const doc = JSON.parse(await Deno.readTextFile(file));
  delete doc.definitions["initial.issue"];
  await Deno.writeTextFile(file, JSON.stringify(doc));
  const errors: string[] = [];
  const backend = new ScriptedBackend([]);
  const result = await new StepFlowRunner(def, {
    backend,
    events: {
      onStepError: (_i, e) => void errors.push((e as { code: string }).code),
    },
  }).run({ args: { topic: "t" } });
  assert.equal(backend.calls.length, 0);
  assert.equal(result.completionReason, "schema_resolution_failed");
  assert.equal(result.error?.code, "FAILED_SCHEMA_RESOLUTION");
  assert.match(
    result.error!.message,
    /#\/definitions\/initial\.issue in schemas\/issue\.schema\.json/,
  );
  assert.deepEqual(errors, ["STRUCTURED_OUTPUT_UNAVAILABLE", "STRUCTURED_OUTPUT_UNAVAILABLE"]);
  assert.deepEqual(result.state.history.map((h) => h.transition), ["retry", "fail"]);
});

Deno.test("two-strike rule: one strike then a fixed schema resets the count and continues", async () => {
  const { def, root } = await setup();
  const file = `${root}/.agent/issue-solver/schemas/issue.schema.json`;
  const good = await Deno.readTextFile(file);
  await Deno.writeTextFile(file, "{ not json");
  const backend = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "complete")],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const result = await new StepFlowRunner(def, {
    backend,
    events: {
      onStepError: async () => {
        await Deno.writeTextFile(file, good); // fixed before the second attempt
      },
    },
  }).run({ args: { topic: "t" } });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(result.state.history[0].transition, "retry");
  assert.match(result.state.history[0].error!, /not valid JSON/);
});

Deno.test("two-strike rule: a schema broken during the run is seen by the very next iteration", async () => {
  // The stat-based cache must not skip a check: a handler that breaks the file synchronously
  // between two iterations (microseconds apart, in the same millisecond) makes the next one strike.
  const { def, root } = await setup();
  const file = `${root}/.agent/issue-solver/schemas/issue.schema.json`;
  const doc = JSON.parse(await Deno.readTextFile(file));
  delete doc.definitions["initial.issue"];
  const broken = JSON.stringify(doc);
  const backend = new ScriptedBackend({ "initial.issue": [out("initial.issue", "repeat")] });
  let ends = 0;
  const result = await new StepFlowRunner(def, {
    backend,
    events: { onStepEnd: () => void (ends++ === 0 && Deno.writeTextFileSync(file, broken)) },
  }).run({ args: { topic: "t" } });
  assert.equal(backend.calls.length, 1);
  assert.equal(result.completionReason, "schema_resolution_failed");
  assert.deepEqual(result.state.history.map((h) => h.transition), ["repeat", "retry", "fail"]);
});

Deno.test("output schema cache: a reference changed in place resolves its new pointer", async () => {
  const { def } = await setup();
  const cache = new OutputSchemaCache(def.dir);
  const ref = { file: "issue.schema.json", schema: "#/definitions/initial.issue" };
  assert.equal((await cache.resolve(ref)).pointer, "#/definitions/initial.issue");
  ref.schema = "#/definitions/complete.issue";
  const again = await cache.resolve(ref);
  assert.equal(again.pointer, "#/definitions/complete.issue");
  assert.equal(again.validate({ stepId: "complete.issue", summary: "s" }), true);
});

Deno.test("invalid output is re-asked once with the validation errors, then the step fails", async () => {
  const { def } = await setup();
  const backend = new ScriptedBackend({
    "initial.issue": [
      out("continuation.issue", "next"), // wrong stepId const
      out("initial.issue", "next"),
    ],
    "continuation.issue": [{ output: { nope: 1 } }, { output: { still: "bad" } }],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
  assert.equal(backend.calls[1].kind, "reask");
  assert.match(backend.calls[1].prompt, /\/stepId: must be equal to constant \("initial.issue"\)/);
  assert.equal(result.completionReason, "step_failed");
  assert.equal(result.error?.stepId, "continuation.issue");
  assert.match(result.error!.message, /does not match #\/definitions\/continuation.issue/);
  assert.equal(backend.calls.length, 4);
});

Deno.test("missing prompt variables fail the step naming every one; backend not called", async () => {
  const { def } = await setup();
  const backend = new ScriptedBackend([]);
  const result = await new StepFlowRunner(def, { backend }).run({ args: {} });
  assert.equal(result.completionReason, "step_failed");
  assert.equal(result.error?.code, "PROMPT_VARIABLES_MISSING");
  assert.match(result.error!.message, /\{uv-topic\} ← pass --topic/);
  assert.equal(backend.calls.length, 0);
});
