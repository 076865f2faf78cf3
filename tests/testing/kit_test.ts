/**
 * `@stepflow/core/testing` through the real runner: assertions pass on the path taken and fail
 * with the whole path and the step where it went wrong; golden prompts fail on a changed prompt
 * with a diff and are rewritten on request.
 */
import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import {
  assertCompleted,
  assertGoldenPrompts,
  assertHandoff,
  assertIntents,
  assertNoToolCall,
  assertOutput,
  assertPath,
  assertToolCall,
  runAgentForTest,
  type TestRun,
} from "../../src/testing/mod.ts";

import { ScriptedBackend } from "../../src/llm/scripted.ts";
import type { LlmBackend } from "../../src/llm/types.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

async function issueSolver(): Promise<TestRun> {
  const dir = join(ROOT, ".agent/issue-solver");
  return await runAgentForTest({
    agent: dir,
    script: join(dir, "demo.script.yaml"),
    args: { topic: "Fix the flaky login test" },
    cwd: ROOT,
    env: {},
  });
}

function failure(fn: () => void): string {
  try {
    fn();
  } catch (error) {
    assert.equal((error as Error).name, "AssertionError");
    return (error as Error).message;
  }
  assert.fail("the assertion passed");
}

Deno.test("testing: the path, intents, handoff and output of a run are asserted as the flow reads", async () => {
  const run = await issueSolver();
  assertCompleted(run);
  const steps = run.history.filter((h) => !h.validation).map((h) => h.stepId);
  assertPath(run, steps);
  assertIntents(run, run.history.filter((h) => !h.validation).map((h) => h.intent));
  const [stepId, handoff] = Object.entries(run.result.state.handoff)[0];
  assertHandoff(run, stepId, handoff as Record<string, unknown>);
  assertOutput(run, run.result.output as Record<string, unknown>);
  assertOutput(run, z.object({}).passthrough());
  assert.ok(run.events.some((e) => e.name === "onStepEnd" && e.stepId === steps[0]));

  const wrongPath = failure(() => assertPath(run, [steps[0], "nowhere.step"]));
  assert.match(wrongPath, /Iteration #2: expected step "nowhere\.step", got step /);
  assert.match(wrongPath, /Path taken by "issue-solver"/);
  assert.match(wrongPath, new RegExp(`^> #2 `, "m")); // the step where it went wrong is marked
  assert.match(wrongPath, /run completed at/);
  const wrongHandoff = failure(() => assertHandoff(run, stepId, { nope: 1 }));
  assert.match(wrongHandoff, /handoff\.nope is missing/);
  const wrongOutput = failure(() => assertOutput(run, z.object({ missing: z.string() })));
  assert.match(wrongOutput, /does not match the schema/);
});

Deno.test("testing: tool-call assertions read the run's tool_call lines: made, refused, with arguments", async () => {
  const cwd = await Deno.makeTempDir({ prefix: "stepflow_kit_tools_" });
  try {
    await cp(join(ROOT, ".agent/tool-fixer"), join(cwd, ".agent/tool-fixer"), { recursive: true });
    const run = await runAgentForTest({
      agent: "tool-fixer",
      cwd,
      script: ".agent/tool-fixer/demo.script.yaml",
      args: { topic: "the greeting misses a space" },
      env: {},
    });
    assertCompleted(run);
    assertToolCall(run, "Edit", {
      stepId: "s_f1e0",
      input: { file_path: "tmp/tool-fixer-demo/greet.ts", new_string: '"Hello, " + name' },
      decision: "allow",
    });
    assertToolCall(run, "Bash", {
      input: { command: "rm -rf tmp/tool-fixer-demo" },
      decision: "deny",
    });
    assertNoToolCall(run, "Glob");
    assertNoToolCall(run, "Edit", { stepId: "s_f1d0" });
    assert.match(
      failure(() => assertToolCall(run, "Bash", { input: { command: "ls" } })),
      /tools called: Write, Grep, Read, Edit, Bash \(deny\), Bash, Read\./,
    );
    assert.match(
      failure(() => assertToolCall(run, "Edit", { stepId: "s_f1d0" })),
      /in step "s_f1d0"; tools called: Write, Grep, Read\./,
    );
    assert.match(failure(() => assertNoToolCall(run, "Bash")), /step "s_f1e0" made one \(deny\)/);
    // The calls keep what the model asked for, turn by turn, with the ids the loop gave them.
    const fix = run.calls.find((c) => c.stepId === "s_f1e0" && c.kind === "step")!;
    assert.deepEqual(fix.toolCalls?.map((c) => c.name), ["Edit", "Bash", "Bash"]);
    assert.deepEqual(run.toolCalls?.map((c) => c.id), [
      ...run.calls.flatMap((c) => c.toolCalls ?? []).map((c) => c.id),
    ]);
  } finally {
    await Deno.remove(cwd, { recursive: true });
  }
});

Deno.test("testing: tool-call assertions refuse to guess when the backend runs its tools itself", async () => {
  const dir = join(ROOT, ".agent/haiku");
  const script = new ScriptedBackend({
    "draft.haiku": [
      "Red leaves on the path\nthe old gate creaks in the wind\nautumn walks us home",
    ],
    "draft.haiku#check": [{ output: { result: "ok", message: "5-7-5" } }],
  });
  // A backend without tool turns (as claude-code, which runs its own tools): nobody can tell.
  const selfTooled: LlmBackend = { name: "self-tooled", complete: (req) => script.complete(req) };
  const run = await runAgentForTest({
    agent: dir,
    script: selfTooled,
    args: { topic: "autumn" },
    env: {},
  });
  assert.equal(run.toolCalls, undefined);
  assert.match(failure(() => assertNoToolCall(run, "Bash")), /reports no tool calls/);
  assert.match(failure(() => assertToolCall(run, "Read")), /cannot be told/);
  // The scripted backend's calls go through the tool loop: "no call" is known.
  const scripted = await runAgentForTest({
    agent: dir,
    script: join(dir, "demo.script.yaml"),
    args: { topic: "autumn" },
    env: {},
  });
  assert.deepEqual(scripted.toolCalls, []);
  assertNoToolCall(scripted, "Bash");
});

Deno.test("testing: golden prompts fail on a changed prompt with a diff and are rewritten on request", async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const dir = join(ROOT, ".agent/haiku");
    const golden = join(tmp, "golden");
    const run = (topic: string) =>
      runAgentForTest({
        agent: dir,
        script: join(dir, "demo.script.yaml"),
        args: { topic },
        env: {},
      });
    const autumn = await run("autumn");
    await assertGoldenPrompts(autumn, golden, { update: true });
    assert.deepEqual([...Deno.readDirSync(golden)].map((e) => e.name).sort(), [
      "01-draft.haiku.md",
      "02-draft.haiku.check.md",
      "03-draft.haiku.md",
      "04-draft.haiku.check.md",
    ]);
    await assertGoldenPrompts(autumn, golden, { update: false });
    const winter = await run("winter");
    const error = await assertGoldenPrompts(winter, golden, { update: false }).then(
      () => assert.fail("passed"),
      (e: Error) => e.message,
    );
    assert.match(error, /01-draft\.haiku\.md changed:/);
    assert.match(error, /^- Write a haiku about autumn/m);
    assert.match(error, /^\+ Write a haiku about winter/m);
    assert.match(error, /STEPFLOW_UPDATE_GOLDEN=1/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("testing: STEPFLOW_UPDATE_GOLDEN=1 rewrites the golden files and removes stale ones", async () => {
  const tmp = await Deno.makeTempDir();
  const before = Deno.env.get("STEPFLOW_UPDATE_GOLDEN");
  try {
    const dir = join(ROOT, ".agent/haiku");
    const golden = join(tmp, "golden");
    await Deno.mkdir(golden);
    await Deno.writeTextFile(join(golden, "01-draft.haiku.md"), "an old prompt");
    await Deno.writeTextFile(join(golden, "09-gone.step.md"), "a call the run no longer makes");
    const run = await runAgentForTest({
      agent: dir,
      script: join(dir, "demo.script.yaml"),
      args: { topic: "autumn" },
      env: {},
    });
    await assert.rejects(assertGoldenPrompts(run, golden), /01-draft\.haiku\.md changed/);
    Deno.env.set("STEPFLOW_UPDATE_GOLDEN", "1");
    await assertGoldenPrompts(run, golden);
    Deno.env.delete("STEPFLOW_UPDATE_GOLDEN");
    await assertGoldenPrompts(run, golden);
    assert.ok(!(await Deno.readTextFile(join(golden, "01-draft.haiku.md"))).includes("old"));
    assert.ok(![...Deno.readDirSync(golden)].some((e) => e.name === "09-gone.step.md"));
  } finally {
    if (before === undefined) Deno.env.delete("STEPFLOW_UPDATE_GOLDEN");
    else Deno.env.set("STEPFLOW_UPDATE_GOLDEN", before);
    await Deno.remove(tmp, { recursive: true });
  }
});
