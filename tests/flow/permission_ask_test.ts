/**
 * Who answers a tool call that asks for permission, through the real runner over a real agent
 * folder with a scripted model: the runner's `onPermissionRequest` (yes, no, "always" for the
 * run, a reply naming who answered), nobody (refused, and the log says how to allow it), the run's
 * `permissionMode` over agent.json's, and every decision in the run log and the history entry —
 * grants and the mode kept by a resume.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { RunPermissionAsk } from "../../src/flow/types.ts";
import type { ToolCallEvent } from "../../src/events/types.ts";
import { MAX_HISTORY_TOOL_CALLS } from "../../src/flow/permission_asks.ts";
import { ScriptedBackend, type ScriptedScript } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { seed001Files, seed001Script, writeAgent } from "./fixtures.ts";
import { ClaudeCodeBackend } from "../../src/llm/claude_code.ts";
import { fakeClaude, flag } from "../llm/fake_claude.ts";

async function setup(behavior: Record<string, unknown>) {
  const root = await Deno.makeTempDir({ prefix: "stepflow_permission_ask_" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, behavior);
  await writeAgent(root, "code-improver", files);
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "src/app.ts"), "export const answer = 41;\n");
  return { root, def: await loadAgentDefinition("code-improver", { cwd: root }) };
}

const bash = (command: string) => ({ toolCalls: [{ name: "Bash", arguments: { command } }] });
const edit = (from: string, to: string) => ({
  toolCalls: [{
    name: "Edit",
    arguments: { file_path: "src/app.ts", old_string: from, new_string: to },
  }],
});

/** A flow whose first two steps run shell commands (Bash asks in default mode). */
function echoes(): ScriptedScript {
  return seed001Script({
    s_a8f3: [bash("echo one"), bash("echo two"), "Analysed."],
    s_b2c1: [bash("echo three"), bash("ls src"), "Implemented."],
    s_c9d4: ["Reviewed."],
  });
}

function toolResults(backend: ScriptedBackend): string[] {
  return backend.toolTurns.flatMap((t) => {
    const last = t.messages.at(-1)!;
    return last.role === "tool" ? last.results.map((r) => `${r.name}: ${r.content}`) : [];
  });
}

Deno.test('onPermissionRequest answers asks with the run\'s context; "always" covers later calls of the run', async () => {
  // A bare "Bash" allows every call: a rule that covers none of these commands offers the tool.
  const { root, def } = await setup({
    allowedTools: ["Read", "Bash(npm test)"],
    permissionMode: "default",
  });
  const asks: RunPermissionAsk[] = [];
  const backend = new ScriptedBackend(echoes());
  const store = new MemoryRunStore();
  const decided: ToolCallEvent[] = [];
  const result = await new StepFlowRunner(def, {
    backend,
    store,
    events: { onToolCall: (_info, call) => void (call.phase === "decided" && decided.push(call)) },
    onPermissionRequest: (ask) => {
      asks.push(structuredClone({ ...ask, signal: undefined }) as unknown as RunPermissionAsk);
      const answer = ask.args.command === "echo one"
        ? "always"
        : { allow: false, by: "reviewer bot" };
      // Changing the ask changes nothing that runs.
      ask.args.command = "echo changed";
      return answer;
    },
  }).run({ args: { topic: "x" }, cwd: root, runId: "asks-1" });
  assert.equal(result.success, true, JSON.stringify(result.error));
  // Asked twice: "echo one" (always → Bash(echo:*)) and "ls src"; the other echoes were covered.
  assert.deepEqual(asks.map((a) => [a.stepId, a.tool, a.args.command, a.suggestion]), [
    ["s_a8f3", "Bash", "echo one", "Bash(echo:*)"],
    ["s_b2c1", "Bash", "ls src", "Bash(ls:*)"],
  ]);
  assert.equal(asks[0].runId, "asks-1");
  assert.equal(asks[0].agent, "code-improver");
  assert.equal(asks[0].iteration, 1);
  assert.equal(typeof asks[0].callId, "string");
  assert.match(asks[0].reason, /Bash/);
  assert.equal(asks[0].signal, undefined); // (dropped by the copy above; the next test uses it)
  assert.deepEqual(toolResults(backend).map((r) => r.split("\n")[0]), [
    "Bash: one",
    "Bash: two",
    "Bash: three",
    'Bash: Permission denied: Bash needs permission in default mode: no allowedTools rule covers this command. It was denied when asked. The user can allow it by adding "Bash(ls:*)" to allowedTools. Do not retry this call; continue without it or answer.',
  ]);
  // The run log: the grant before the call it allowed, every decision with who and when.
  const log = await store.readLog("asks-1");
  const grants = log.filter((l) => l.type === "permission_grant");
  assert.deepEqual(grants.map((g) => [g.rule, g.stepId, g.grantedBy]), [
    ["Bash(echo:*)", "s_a8f3", "onPermissionRequest"],
  ]);
  const calls = log.filter((l) => l.type === "tool_call");
  assert.deepEqual(calls.map((c) => [c.decision, c.decidedBy]), [
    ["allow", "onPermissionRequest, always for this run (Bash(echo:*))"],
    ["allow", "rule Bash(echo:*), allowed for this run by onPermissionRequest"],
    ["allow", "rule Bash(echo:*), allowed for this run by onPermissionRequest"],
    ["deny", "reviewer bot"],
  ]);
  assert.ok(log.indexOf(grants[0]) < log.indexOf(calls[0]));
  for (const c of calls) assert.ok(!Number.isNaN(Date.parse(String(c.decidedAt))));
  // The `decided` events carry the same who and when.
  assert.deepEqual(
    decided.map((e) => [e.decidedBy, e.decidedAt]),
    calls.map((c) => [c.decidedBy, c.decidedAt]),
  );
  // The history entries list the calls, briefly.
  const [analyse, implement] = result.state.history;
  assert.deepEqual(analyse.toolCalls?.map((c) => [c.tool, c.target, c.decision, c.isError]), [
    ["Bash", "echo one", "allow", false],
    ["Bash", "echo two", "allow", false],
  ]);
  assert.deepEqual(implement.toolCalls?.map((c) => [c.target, c.decision, c.decidedBy]), [
    ["echo three", "allow", "rule Bash(echo:*), allowed for this run by onPermissionRequest"],
    ["ls src", "deny", "reviewer bot"],
  ]);
  assert.equal(implement.toolCalls![1].decidedAt, calls[3].decidedAt);
  assert.equal(result.state.history[2].toolCalls, undefined); // a step that called no tool
  // The checkpoint keeps the grant.
  const checkpoint = await store.loadCheckpoint("asks-1");
  assert.deepEqual(
    (checkpoint!.state.permissionGrants as { rule: string }[]).map((g) => g.rule),
    ["Bash(echo:*)"],
  );
});

Deno.test("a refusal reply's message reaches the model; a failing or nonsense answerer refuses and warns", async () => {
  const { root, def } = await setup({
    allowedTools: ["Bash(npm test)"],
    permissionMode: "default",
  });
  const answers: unknown[] = [
    { allow: false, message: "Not on a Friday." },
    "yes",
    new Error("policy service down"),
  ];
  const warnings: string[] = [];
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [bash("echo one"), bash("echo two"), bash("echo three"), "Analysed."],
    s_b2c1: ["Implemented."],
    s_c9d4: ["Reviewed."],
  }));
  const result = await new StepFlowRunner(def, {
    backend,
    onWarning: (m) => void warnings.push(m),
    onPermissionRequest: () => {
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer as boolean;
    },
  }).run({ args: { topic: "x" }, cwd: root });
  assert.equal(result.success, true, JSON.stringify(result.error));
  const seen = toolResults(backend);
  assert.match(seen[0], /It was denied when asked: Not on a Friday\./);
  assert.match(seen[1], /Permission denied/);
  assert.match(seen[2], /could not be answered/);
  assert.deepEqual(result.state.history[0].toolCalls?.map((c) => [c.decision, c.decidedBy]), [
    ["deny", "onPermissionRequest"],
    ["deny", "onPermissionRequest (invalid answer)"],
    ["deny", "onPermissionRequest failed"],
  ]);
  assert.equal(warnings.length, 2);
  assert.match(
    warnings[0],
    /answered "yes"; expected true, false, "always" or \{ allow: boolean \}/,
  );
  assert.match(warnings[1], /onPermissionRequest failed \(policy service down\)/);
});

Deno.test("RunOptions.permissionMode is over agent.json's, recorded, and kept when the run is driven again", async () => {
  // A rule that covers nothing here: in default mode every edit asks.
  const { root, def } = await setup({
    allowedTools: ["Read", "Edit(docs/**)"],
    permissionMode: "default",
  });
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [edit("41", "42"), "Analysed."],
    s_b2c1: [edit("42", "43"), "Implemented."],
    s_c9d4: ["Reviewed."],
  }));
  const store = new MemoryRunStore();
  const stop = new AbortController();
  const first = await new StepFlowRunner(def, {
    backend,
    store,
    events: { onStepEnd: () => stop.abort() },
  }).run({
    args: { topic: "x" },
    cwd: root,
    runId: "mode-1",
    permissionMode: "acceptEdits",
    signal: stop.signal,
  });
  assert.equal(first.completionReason, "cancelled");
  assert.equal(await Deno.readTextFile(join(root, "src/app.ts")), "export const answer = 42;\n");
  assert.equal((await store.loadCheckpoint("mode-1"))!.state.permissionMode, "acceptEdits");
  // Driven again without saying: the run's mode still applies, and nobody is asked.
  const resumed = await new StepFlowRunner(def, { backend, store }).run({ redrive: "mode-1" });
  assert.equal(resumed.success, true, JSON.stringify(resumed.error));
  assert.equal(await Deno.readTextFile(join(root, "src/app.ts")), "export const answer = 43;\n");
  const decided = resumed.state.history.flatMap((h) => h.toolCalls ?? []).map((c) => c.decidedBy);
  assert.deepEqual(decided, ["acceptEdits mode", "acceptEdits mode"]);
  await assert.rejects(
    new StepFlowRunner(def, { backend, store }).run({
      permissionMode: "acceptEdit" as "acceptEdits",
    }),
    /PERMISSION_MODE_INVALID|did you mean "acceptEdits"/,
  );
});

Deno.test('a grant of "always" survives a redrive, even one logged after the last checkpoint', async () => {
  const { root, def } = await setup({
    allowedTools: ["Bash(npm test)", "Bash(ls src)"],
    permissionMode: "default",
  });
  const store = new MemoryRunStore();
  const stop = new AbortController();
  const backend = new ScriptedBackend(echoes());
  const first = await new StepFlowRunner(def, {
    backend,
    store,
    events: { onStepEnd: () => stop.abort() },
    onPermissionRequest: () => "always",
  }).run({ args: { topic: "x" }, cwd: root, runId: "grant-1", signal: stop.signal });
  assert.equal(first.completionReason, "cancelled");
  // As if the process died after the grant's log line but before the checkpoint that holds it.
  const checkpoint = (await store.loadCheckpoint("grant-1"))!;
  delete checkpoint.state.permissionGrants;
  await store.saveCheckpoint(checkpoint);
  let asked = 0;
  const resumed = await new StepFlowRunner(def, {
    backend,
    store,
    onPermissionRequest: () => {
      asked++;
      return false;
    },
  }).run({ redrive: "grant-1" });
  assert.equal(resumed.success, true, JSON.stringify(resumed.error));
  assert.equal(asked, 0);
  assert.deepEqual(
    resumed.state.history[1].toolCalls?.map((c) => c.decidedBy),
    ["rule Bash(echo:*), allowed for this run by onPermissionRequest", "rule Bash(ls src)"],
  );
});

Deno.test("a history entry lists at most MAX_HISTORY_TOOL_CALLS calls and counts the rest", async () => {
  const { root, def } = await setup({ allowedTools: ["Glob"], permissionMode: "default" });
  const glob = { name: "Glob", arguments: { pattern: "*.ts", path: "src" } };
  const many = MAX_HISTORY_TOOL_CALLS + 7;
  const turns = Array.from({ length: 3 }, (_, i) => ({
    toolCalls: Array.from({ length: i < 2 ? 25 : many - 50 }, () => glob),
  }));
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [...turns, "Analysed."],
    s_b2c1: ["Implemented."],
    s_c9d4: ["Reviewed."],
  }));
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "x" },
    cwd: root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  const entry = result.state.history[0];
  assert.equal(entry.toolCalls?.length, MAX_HISTORY_TOOL_CALLS);
  assert.equal(entry.toolCallsOmitted, 7);
  assert.deepEqual(entry.toolCalls![0].decidedBy, "rule Glob");
});

Deno.test("claude-code keeps Claude Code's own permission handling: the run's mode reaches it, nobody is asked here", async () => {
  const { root, def } = await setup({
    allowedTools: ["Read", "Bash(npm test)"],
    permissionMode: "default",
  });
  const check = { structured_output: { result: "ok", message: "fine" } };
  const fake = await fakeClaude([
    { result: "Analysed." },
    check,
    { result: "Implemented." },
    check,
    { result: "Reviewed." },
    check,
  ]);
  try {
    let asked = 0;
    const result = await new StepFlowRunner(def, {
      backend: new ClaudeCodeBackend(fake.options),
      onPermissionRequest: () => {
        asked++;
        return true;
      },
    }).run({ args: { topic: "x" }, cwd: root, permissionMode: "acceptEdits" });
    assert.equal(result.success, true, JSON.stringify(result.error));
    assert.equal(asked, 0);
    const runs = await fake.runs();
    assert.equal(runs.length, 6);
    for (const run of runs) {
      assert.equal(flag(run, "permission-mode"), "acceptEdits");
      assert.equal(flag(run, "allowedTools"), "Read,Bash(npm test)");
    }
    assert.ok(result.state.history.every((h) => h.toolCalls === undefined));
  } finally {
    await fake.cleanup();
  }
});

Deno.test("an answer that never comes ends with the step's timeout: the answerer's signal fires", async () => {
  const { root, def } = await setup({
    allowedTools: ["Bash(npm test)"],
    permissionMode: "default",
  });
  let withdrawn = false;
  const result = await new StepFlowRunner(def, {
    backend: new ScriptedBackend(echoes()),
    stepTimeoutMs: 200,
    onPermissionRequest: (ask) =>
      new Promise((_, reject) => {
        ask.signal.addEventListener("abort", () => {
          withdrawn = true;
          reject(ask.signal.reason);
        });
      }),
  }).run({ args: { topic: "x" }, cwd: root });
  assert.equal(result.success, false);
  assert.equal(result.error?.code, "STEP_TIMEOUT");
  assert.equal(withdrawn, true);
});
