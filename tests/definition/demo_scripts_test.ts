import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { loadScriptFile } from "../../src/llm/script_file.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { REPO_ROOT } from "./fixtures.ts";

async function runDemo(cwd: string, name: string, topic: string) {
  const definition = await loadAgentDefinition(name, { cwd });
  const backend = await loadScriptFile(join(cwd, ".agent", name, "demo.script.yaml"));
  const result = await new StepFlowRunner(definition, { backend }).run({ args: { topic }, cwd });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(result.completionReason, "completed");
  assert.equal(backend.remaining(), 0, "every scripted answer is used");
  return { result, backend };
}

Deno.test("code-improver demo: the review's check NG falls back to implement, then completes", async () => {
  const { result, backend } = await runDemo(REPO_ROOT, "code-improver", "auth refactor");
  assert.deepEqual(
    result.state.history.map((h) => [h.stepId, h.transition, h.checkResult?.result]),
    [
      ["s_a8f3", "next", "ok"],
      ["s_b2c1", "next", "ok"],
      ["s_c9d4", "fallback", "ng"],
      ["s_b2c1", "next", "ok"],
      ["s_c9d4", "complete", "ok"],
    ],
  );
  assert.equal(result.finalStepId, "s_c9d4");
  const first = backend.calls[0];
  assert.match(
    first.prompt,
    /^# Step: analyze \(iteration 1, step s_a8f3\)\n\nTopic: \*\*auth refactor\*\*/,
  );
  assert.doesNotMatch(first.prompt, /^---/, "frontmatter is stripped");
  assert.match(first.systemPrompt ?? "", /^You are Code Improver/);
  const check = backend.calls.find((c) => c.kind === "check")!;
  assert.match(check.prompt, /\{ "result": "ok", "message": /, "JSON examples are left as written");
});

Deno.test("issue-solver demo: repeat, handoff and the closing step's report", async () => {
  const { result, backend } = await runDemo(REPO_ROOT, "issue-solver", "Fix the flaky login test");
  assert.deepEqual(
    result.state.history.map((h) => [h.stepId, h.intent, h.transition]),
    [
      ["initial.issue", "next", "next"],
      ["continuation.issue", "repeat", "repeat"],
      ["continuation.issue", "complete", "complete"],
      ["complete.issue", undefined, "complete"],
    ],
  );
  assert.equal(result.finalStepId, "complete.issue");
  assert.equal((result.output as { stepId: string }).stepId, "complete.issue");
  assert.deepEqual(Object.keys(result.state.handoff["initial.issue"]), [
    "understanding",
    "approach",
    "issue",
  ]);
  assert.deepEqual(result.state.handoff["continuation.issue"].pending_tasks, []);
  const continuation = backend.calls.find((c) => c.stepId === "continuation.issue")!;
  assert.match(
    continuation.prompt,
    /- Understanding: The test waits on a real 100 ms session timer/,
  );
  assert.match(continuation.prompt, /- Issue: \{"title":"Login test is flaky"/);
});

Deno.test("the gate-routed template's demo script drives its flow to completion", async () => {
  const root = await Deno.makeTempDir();
  const dir = join(root, ".agent", "notes");
  await cp(join(REPO_ROOT, "agents", "templates", "gate-routed"), dir, { recursive: true });
  for (const file of await listFiles(dir)) {
    const text = await Deno.readTextFile(file);
    await Deno.writeTextFile(file, text.replaceAll("__AGENT_NAME__", "notes"));
  }
  const { result } = await runDemo(root, "notes", "Write the release notes");
  assert.deepEqual(result.state.history.map((h) => h.stepId), [
    "initial.task",
    "continuation.task",
    "continuation.task",
    "complete.task",
  ]);
});

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) out.push(...await listFiles(path));
    else out.push(path);
  }
  return out;
}

Deno.test("tool-fixer demo: a scripted model calls tools; the fix lands, the refused rm does not run", async () => {
  const cwd = await Deno.makeTempDir({ prefix: "stepflow_tool_fixer_" });
  await cp(join(REPO_ROOT, ".agent", "tool-fixer"), join(cwd, ".agent", "tool-fixer"), {
    recursive: true,
  });
  const { result, backend } = await runDemo(cwd, "tool-fixer", "the greeting misses a space");
  assert.deepEqual(result.state.history.map((h) => [h.stepId, h.transition]), [
    ["s_f1d0", "next"],
    ["s_f1e0", "complete"],
  ]);
  assert.equal(
    await Deno.readTextFile(join(cwd, "tmp/tool-fixer-demo/greet.ts")),
    'export function greet(name: string): string {\n  return "Hello, " + name;\n}\n',
  );
  // A demo script is a plain script (no replay header), so its backend is the scripted one.
  assert.ok(backend instanceof ScriptedBackend);
  const results = backend.toolTurns.flatMap((t) => {
    const last = t.messages.at(-1)!;
    return last.role === "tool" ? last.results : [];
  });
  assert.deepEqual(results.map((r) => [r.name, r.isError]), [
    ["Write", false],
    ["Grep", false],
    ["Read", false],
    ["Edit", false],
    ["Bash", true],
    ["Bash", false],
    ["Read", false],
  ]);
  assert.match(results[4].content, /refused by the rule "Bash\(rm:\*\)" in disallowedTools/);
  assert.equal(results[5].content, '2:  return "Hello, " + name;\n');
});
