/**
 * Model output is untrusted input: prototype names as step ids and intents, deep output,
 * raw answers recorded, re-asks visible, usage that is unknown, truthful retry counts, the default
 * target of a `jump` transition. Every test runs the real runner over an agent folder on disk.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { formatUsage } from "../../src/cli/progress.ts";
import { MAX_OUTPUT_DEPTH } from "../../src/engine/ask_structured.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { loadScriptFile } from "../../src/llm/script_file.ts";
import { createToolRegistry } from "../../src/tools/builtin.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import type { RunLogEntry } from "../../src/store/types.ts";
import { out, seed001Files, seed004Files, writeAgent } from "./fixtures.ts";

const PROTO_NAMES = ["constructor", "toString", "hasOwnProperty", "__proto__", "valueOf"];

type Files = ReturnType<typeof seed004Files>;
type Steps = Record<string, Record<string, unknown> & { structuredGate: Record<string, unknown> }>;

async function setup(mutate?: (files: Files, steps: Steps) => void) {
  const root = await Deno.makeTempDir({ prefix: "stepflow-untrusted-" });
  const files = seed004Files();
  mutate?.(files, files.registry.steps as Steps);
  await writeAgent(root, "issue-solver", files);
  const def = await loadAgentDefinition("issue-solver", { cwd: root });
  return { root, def, store: new FileRunStore(join(root, "runs")) };
}

const jumpTo = (target: string) => ({
  output: { stepId: "initial.issue", next_action: { action: "jump", details: { target } } },
});
const closing = { output: { stepId: "complete.issue", summary: "done" } };

/** `depth` nested objects: `{"d":{"d":…{}}}`. */
function nested(depth: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let node = root;
  for (let i = 1; i < depth; i++) {
    const child: Record<string, unknown> = {};
    node.d = child;
    node = child;
  }
  return root;
}

Deno.test("a jump to a prototype name is an unknown step; the checkpoint never names it", async () => {
  const { def, store } = await setup((_f, steps) => {
    steps["initial.issue"].structuredGate.allowedIntents = ["next", "repeat", "jump", "complete"];
  });
  for (const name of PROTO_NAMES) {
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend({ "initial.issue": [jumpTo(name)] }),
      store,
    }).run({ args: { topic: "t" }, runId: `jump-${name}` });
    assert.equal(result.completionReason, "step_routing_failed", name);
    assert.match(result.error!.message, new RegExp(`"${name}", which is not a flow step`));
    const checkpoint = (await store.loadCheckpoint(`jump-${name}`))!;
    assert.equal((checkpoint.state as { currentStepId: string }).currentStepId, "initial.issue");
    assert.equal(result.finalStepId, "initial.issue");
  }
});

Deno.test("an intent named like a prototype member is an unknown intent", async () => {
  const warnings: string[] = [];
  const { def } = await setup();
  for (const name of PROTO_NAMES) {
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend({
        "initial.issue": [out("initial.issue", name)],
        "continuation.issue": [out("continuation.issue", "complete")],
        "complete.issue": [closing],
      }),
      onWarning: (m) => void warnings.push(m),
    }).run({ args: { topic: "t" } });
    // fallbackIntent "next" applies, with a warning that quotes the model's word.
    assert.equal(result.success, true, `${name}: ${JSON.stringify(result.error)}`);
    assert.equal(result.state.history[0].intent, "next");
    assert.match(warnings.at(-1)!, new RegExp(`intent "${name}" \\(not allowed\\)`));
  }
  const strict = await setup((_f, steps) => {
    delete steps["initial.issue"].structuredGate.fallbackIntent;
  });
  const failed = await new StepFlowRunner(strict.def, {
    backend: new ScriptedBackend({ "initial.issue": [out("initial.issue", "constructor")] }),
  }).run({ args: { topic: "t" } });
  assert.equal(failed.completionReason, "step_routing_failed");
  assert.match(
    failed.error!.message,
    /produced intent "constructor", which is not in allowedIntents/,
  );
});

Deno.test("resume/redrive of a checkpoint that names a prototype step is RUN_STEP_UNKNOWN", async () => {
  const { def } = await setup();
  const store = new MemoryRunStore();
  const first = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({ "initial.issue": [{ error: "boom" }] }),
    store,
  }).run({ args: { topic: "t" }, runId: "poisoned" });
  assert.equal(first.completionReason, "step_failed");
  const saved = (await store.loadCheckpoint("poisoned"))!;
  for (const name of PROTO_NAMES) {
    const state = {
      ...saved.state,
      currentStepId: name,
      end: { reason: "step_failed", stepId: name },
    };
    await store.saveCheckpoint({ ...saved, status: "failed", state });
    await assert.rejects(
      new StepFlowRunner(def, { backend: new ScriptedBackend([]), store }).run({
        redrive: "poisoned",
      }),
      (e) =>
        e instanceof StepflowError && e.code === "RUN_STEP_UNKNOWN" && e.message.includes(name),
    );
    const { end: _end, ...running } = state;
    await store.saveCheckpoint({ ...saved, status: "running", state: running });
    await assert.rejects(
      new StepFlowRunner(def, { backend: new ScriptedBackend([]), store }).run({
        resume: "poisoned",
      }),
      (e) =>
        e instanceof StepflowError && e.code === "RUN_STEP_UNKNOWN" && e.message.includes(name),
    );
  }
});

Deno.test("handoff paths read own keys only: a missing 'constructor' is not Object's", async () => {
  const { def } = await setup((_f, steps) => {
    steps["initial.issue"].structuredGate.handoffFields = [
      "issue",
      "constructor",
      "analysis.toString",
    ];
  });
  const result = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({
      "initial.issue": [out("initial.issue", "complete", { issue: "#1", analysis: {} })],
      "complete.issue": [closing],
    }),
  }).run({ args: { topic: "t" } });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.deepEqual(result.state.handoff, { "initial.issue": { issue: "#1" } });

  // A "__proto__" key handed off by the model is stored as data, not as a prototype.
  const proto = await setup((_f, steps) => {
    steps["initial.issue"].structuredGate.handoffFields = ["analysis.__proto__"];
  });
  const answer =
    '{"stepId": "initial.issue", "next_action": {"action": "complete"}, "analysis": {"__proto__": "x"}}';
  const stored = await new StepFlowRunner(proto.def, {
    backend: new ScriptedBackend({ "initial.issue": [answer], "complete.issue": [closing] }),
  }).run({ args: { topic: "t" } });
  assert.equal(stored.success, true, JSON.stringify(stored.error));
  const handoff = stored.state.handoff["initial.issue"];
  assert.ok(Object.hasOwn(handoff, "__proto__"));
  assert.equal(handoff["__proto__"], "x");
  assert.equal(Object.getPrototypeOf(handoff), Object.prototype);
});

Deno.test("scripted maps and the tool registry treat prototype names as unknown keys", async () => {
  const req = (stepId: string) => ({
    kind: "step" as const,
    agent: "a",
    stepId,
    iteration: 1,
    prompt: "p",
    cwd: ".",
  });
  for (const name of PROTO_NAMES) {
    await assert.rejects(
      new ScriptedBackend({ other: ["x"] }).complete(req(name)),
      (e) => e instanceof StepflowError && e.code === "SCRIPT_EXHAUSTED",
    );
  }
  const dir = await Deno.makeTempDir();
  const file = join(dir, "script.json");
  await Deno.writeTextFile(file, '{"__proto__": ["proto answer"], "constructor": ["ctor answer"]}');
  const backend = await loadScriptFile(file);
  assert.equal((await backend.complete(req("__proto__"))).text, "proto answer");
  assert.equal((await backend.complete(req("constructor"))).text, "ctor answer");
  const tools = createToolRegistry();
  for (const name of PROTO_NAMES) {
    assert.equal(tools.has(name), false);
    await assert.rejects(
      tools.invoke(name, {}, { workspaceRoot: dir }),
      (e) => e instanceof StepflowError && e.code === "TOOL_UNKNOWN",
    );
  }
});

Deno.test("output nested deeper than the limit is re-asked with a schema-style error", async () => {
  const { def, store } = await setup();
  const events: string[] = [];
  const deep = out("initial.issue", "complete", { analysis: nested(3_000) });
  const backend = new ScriptedBackend({
    "initial.issue": [deep, out("initial.issue", "complete", { analysis: { approach: "flat" } })],
    "complete.issue": [closing],
  });
  const result = await new StepFlowRunner(def, {
    backend,
    store,
    events: {
      onStepRetry: (_i, attempt, e) => void events.push(`${attempt}:${(e as StepflowError).code}`),
    },
  }).run({ args: { topic: "t" }, runId: "deep" });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(backend.calls[1].kind, "reask");
  assert.match(backend.calls[1].prompt, new RegExp(`deeper than ${MAX_OUTPUT_DEPTH} levels`));
  assert.deepEqual(events, ["1:OUTPUT_REASK"]);
  const reask = (await store.readLog("deep")).find((l) => l.type === "step_reask")!;
  assert.deepEqual(reask.errors, [
    `(root): must not be nested deeper than ${MAX_OUTPUT_DEPTH} levels`,
  ]);

  // Exactly at the limit is accepted (the schema allows any object under "analysis").
  const atLimit = out("initial.issue", "complete", { analysis: nested(MAX_OUTPUT_DEPTH - 1) });
  const ok = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({ "initial.issue": [atLimit], "complete.issue": [closing] }),
  }).run({ args: { topic: "t" } });
  assert.equal(ok.success, true, JSON.stringify(ok.error));
});

Deno.test("deep data already in a checkpoint resumes without a structuredClone crash", async () => {
  const { root, def, store } = await setup();
  const first = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({
      "initial.issue": [out("initial.issue", "next")],
      "continuation.issue": [{ error: "crash" }],
    }),
    store,
  }).run({ args: { topic: "t" }, runId: "old-deep" });
  assert.equal(first.completionReason, "step_failed");
  // As an older version would have stored it: a handoff value 5,000 levels deep (structuredClone
  // gives up near 3,000; compact JSON.stringify still writes it).
  const editor = new FileRunStore(join(root, "runs"));
  const saved = (await editor.loadCheckpoint("old-deep"))!;
  const state = saved.state as Record<string, unknown>;
  delete state.end;
  state.currentStepId = "continuation.issue";
  state.handoff = { "initial.issue": { deep: nested(5_000) } };
  state.latestHandoff = { deep: nested(5_000) };
  await editor.saveCheckpoint({ ...saved, status: "running", state });
  const resumed = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({
      "continuation.issue": [out("continuation.issue", "complete")],
      "complete.issue": [closing],
    }),
    store: new FileRunStore(join(root, "runs")),
  }).run({ resume: "old-deep" });
  assert.equal(resumed.success, true, JSON.stringify(resumed.error));
});

Deno.test("the raw answer is recorded in history and the log; re-asks are events and log lines", async () => {
  const { def, store } = await setup();
  const retries: string[] = [];
  const long = "x".repeat(10_000);
  const backend = new ScriptedBackend({
    "initial.issue": [
      "Sure! I will look into it.",
      '{"stepId": "initial.issue", "next_action": ',
    ],
    "continuation.issue": [
      { text: long, output: { stepId: "continuation.issue", next_action: { action: "complete" } } },
    ],
  });
  const result = await new StepFlowRunner(def, {
    backend,
    store,
    events: { onStepRetry: (_i, _a, e) => void retries.push((e as StepflowError).message) },
  }).run({ args: { topic: "flaky" }, runId: "answers" });
  assert.equal(result.completionReason, "step_failed");
  // The re-ask tells the model what was wrong in its own terms.
  assert.match(backend.calls[1].prompt, /rejected: your answer contained no JSON object\./);
  assert.equal(retries.length, 1);
  assert.match(retries[0], /re-asking \(1\) because your answer contained no JSON object/);
  // The step is named once, and the error says what the last answer was.
  const message = result.error!.message;
  assert.equal(message.match(/"initial\.issue"/g)?.length, 1, message);
  assert.match(message, /your answer is not valid JSON: /);
  const entry = result.state.history[0];
  assert.deepEqual(entry.answer, {
    text: '{"stepId": "initial.issue", "next_action": ',
    length: 43,
  });

  const log = await store.readLog("answers");
  const byType = (type: string) => log.filter((l: RunLogEntry) => l.type === type);
  const start = byType("step_start")[0];
  assert.match((start.prompt as { text: string }).text, /^Understand flaky\./);
  assert.equal(
    (start.prompt as { length: number }).length,
    (start.prompt as { text: string }).text.length,
  );
  const reask = byType("step_reask")[0];
  assert.deepEqual(
    { ...reask, ts: undefined, runId: undefined },
    {
      ts: undefined,
      runId: undefined,
      type: "step_reask",
      iteration: 1,
      stepId: "initial.issue",
      attempt: 1,
      reason: "your answer contained no JSON object",
      errors: [],
      answer: { text: "Sure! I will look into it.", length: 26 },
    },
  );
  const error = byType("step_error")[0];
  assert.deepEqual(error.answer, entry.answer);
  // The step_end line holds the answer once: in its history entry.
  const end = byType("step_end")[0];
  assert.deepEqual((end.entry as { answer?: unknown }).answer, entry.answer);
  assert.equal(end.answer, undefined);

  // A long answer is cut to 8,192 characters with its full length.
  const { def: def2 } = await setup();
  const cut = await new StepFlowRunner(def2, {
    backend: new ScriptedBackend({
      "initial.issue": [{ text: long, output: out("initial.issue", "complete").output }],
      "complete.issue": [closing],
    }),
  }).run({ args: { topic: "t" } });
  assert.equal(cut.state.history[0].answer!.length, 10_000);
  assert.equal(cut.state.history[0].answer!.text.length, 8_192);
});

Deno.test("schema errors are re-asked with the validator's paths, and the step is named once", async () => {
  const { def } = await setup();
  const backend = new ScriptedBackend({
    "initial.issue": [
      out("continuation.issue", "next"),
      out("initial.issue", "next", { issue: 5 }),
    ],
  });
  const result = await new StepFlowRunner(def, { backend }).run({ args: { topic: "t" } });
  assert.match(
    backend.calls[1].prompt,
    /rejected: your answer did not match the required JSON schema\.\n- \/stepId: must be equal to constant/,
  );
  const message = result.error!.message;
  assert.doesNotMatch(message, /failed: Step/);
  assert.match(message, /^Step "initial.issue" output does not match .*\/issue: must be string/);
});

Deno.test("a response without usage counts as unknown tokens, never as 0", async () => {
  const { def } = await setup();
  const result = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({
      "initial.issue": [{
        ...out("initial.issue", "next"),
        usage: { inputTokens: 100, outputTokens: 20 },
      }],
      "continuation.issue": [out("continuation.issue", "complete")],
      "complete.issue": [closing],
    }),
  }).run({ args: { topic: "t" } });
  // No model is named, so no call has a price: the cost is unknown, never $0.
  assert.deepEqual(result.usage, {
    inputTokens: 100,
    outputTokens: 20,
    costUsd: 0,
    calls: 3,
    callsWithoutUsage: 2,
    callsWithoutCost: 3,
  });
  assert.equal(
    formatUsage(result.usage),
    "120 tokens (100 in, 20 out), 3 calls, tokens unknown for 2 calls, cost unknown",
  );
});

Deno.test("RETRIES_EXHAUSTED counts checks and attempts truthfully", async () => {
  const root = await Deno.makeTempDir();
  const files = seed001Files();
  const steps = files.registry.steps as Record<string, { iterations: unknown }>;
  steps.s_a8f3.iterations = { min: 1, max: 3 };
  await writeAgent(root, "code-improver", files);
  const def = await loadAgentDefinition("code-improver", { cwd: root });
  const ng = { output: { result: "ng", message: "still red" } };
  const result = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({
      s_a8f3: Array.from({ length: 9 }, (_, i) => `run ${i + 1}`),
      "s_a8f3#check": Array.from({ length: 9 }, () => ng),
    }),
  }).run({ args: { topic: "t" } });
  assert.equal(result.error?.code, "RETRIES_EXHAUSTED");
  assert.match(
    result.error!.message,
    /failed 9 checks over 3 attempts \(onFail.maxRetries 2, iterations.max 3\)\. Last check: still red/,
  );
});

Deno.test("a jump transition's target is the default when the model names none", async () => {
  const { def } = await setup((_f, steps) => {
    steps["initial.issue"].structuredGate.allowedIntents = ["next", "repeat", "jump", "complete"];
    (steps["initial.issue"].transitions as Record<string, unknown>).jump = {
      target: "complete.issue",
    };
  });
  const jumps: string[] = [];
  const result = await new StepFlowRunner(def, {
    backend: new ScriptedBackend({
      "initial.issue": [out("initial.issue", "jump"), jumpTo("continuation.issue")],
      "continuation.issue": [out("continuation.issue", "complete")],
      "complete.issue": [closing, closing],
    }),
    events: { onStepJump: (info, target) => void jumps.push(`${info.stepId}->${target}`) },
  }).run({ args: { topic: "t" } });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.deepEqual(jumps, ["initial.issue->complete.issue"]);
  assert.equal(result.state.history[0].nextStepId, "complete.issue");

  // Without targetField, transitions.jump.target alone makes "jump" loadable (and routable).
  const fixed = await setup((_f, steps) => {
    const gate = steps["initial.issue"].structuredGate;
    gate.allowedIntents = ["next", "repeat", "jump", "complete"];
    delete gate.targetField;
    (steps["initial.issue"].transitions as Record<string, unknown>).jump = {
      target: "continuation.issue",
    };
  });
  const routed = await new StepFlowRunner(fixed.def, {
    backend: new ScriptedBackend({
      "initial.issue": [out("initial.issue", "jump")],
      "continuation.issue": [out("continuation.issue", "complete")],
      "complete.issue": [closing],
    }),
  }).run({ args: { topic: "t" } });
  assert.equal(routed.success, true, JSON.stringify(routed.error));
  assert.equal(routed.state.history[0].nextStepId, "continuation.issue");
});
