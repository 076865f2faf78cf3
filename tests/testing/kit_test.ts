/**
 * `@stepflow/core/testing` through the real runner: assertions pass on the path taken and fail
 * with the whole path and the step where it went wrong; golden prompts fail on a changed prompt
 * with a diff and are rewritten on request.
 */
import assert from "node:assert/strict";
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

Deno.test("testing: tool-call assertions read the answers' tool calls, and refuse to guess without any", async () => {
  const dir = join(ROOT, ".agent/haiku");
  const run = await runAgentForTest({
    agent: dir,
    script: join(dir, "demo.script.yaml"),
    args: { topic: "autumn" },
    env: {},
  });
  assert.match(failure(() => assertNoToolCall(run, "Bash")), /reported no tool calls at all/);
  // A recording whose answers carry tool calls (as backends with tools report them).
  const tmp = await Deno.makeTempDir();
  try {
    const recording = join(tmp, "r.yaml");
    await runAgentForTest({
      agent: dir,
      script: join(dir, "demo.script.yaml"),
      args: { topic: "autumn" },
      record: recording,
      env: {},
    });
    const text = await Deno.readTextFile(recording);
    await Deno.writeTextFile(
      recording,
      text.replace(
        "    kind: step\n",
        '    kind: step\n    toolCalls: [{ name: Read, input: { file: "a.md" } }]\n',
      ),
    );
    const withTools = await runAgentForTest({
      agent: dir,
      script: recording,
      args: { topic: "autumn" },
      env: {},
    });
    assertToolCall(withTools, "Read", { stepId: "draft.haiku", input: { file: "a.md" } });
    assertNoToolCall(withTools, "Bash");
    assert.match(failure(() => assertToolCall(withTools, "Bash")), /tools called: Read/);
    assert.match(
      failure(() => assertNoToolCall(withTools, "Read")),
      /step "draft\.haiku" made one/,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
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
