/**
 * Record → replay through the real runner: every example agent under .agent/ and the converted
 * climpt fixture, run on its script in a store, turned into a replay file from the run log, and
 * replayed, take the same path (steps, intents, transitions, next steps) and hand off the same
 * values; a step with tools asks for the same tool calls, which run again; a run that waits for a
 * person is recorded with the answer and replayed to its end (a parent whose child asks too, the
 * child's calls recorded with it). A changed prompt, a call past the end and a step the recording
 * never saw fail clearly.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { migrateClimpt } from "../../src/migrate/migrate.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { AgentDefinition } from "../../src/definition/types.ts";
import { runAgentForTest, type ScriptAnswer, type TestRun } from "../../src/testing/mod.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLIMPT = fileURLToPath(new URL("../migrate/fixtures/climpt", import.meta.url));

function path(run: TestRun) {
  return run.history.map((h) => [h.stepId, h.intent, h.transition, h.nextStepId]);
}

async function withTemp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-replay-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function recordThenReplay(
  agentDir: string | AgentDefinition,
  script: string,
  args: Record<string, unknown>,
  runner = {},
  file = "run.replay.yaml",
  answers?: ScriptAnswer[],
) {
  await withTemp(async (tmp) => {
    const recording = join(tmp, file);
    // Each run works in its own folder, so tools that write start from the same (empty) place.
    const [first, second] = [join(tmp, "recorded"), join(tmp, "replayed")];
    await Deno.mkdir(first);
    await Deno.mkdir(second);
    const recorded = await runAgentForTest({
      agent: agentDir,
      script,
      args,
      cwd: first,
      record: recording,
      runner: { skipValidators: true, ...runner },
      env: {},
      ...(answers ? { answers } : {}),
    });
    assert.equal(
      recorded.result.completionReason,
      "completed",
      JSON.stringify(recorded.result.error),
    );
    const replayed = await runAgentForTest({
      agent: agentDir,
      script: recording,
      args,
      cwd: second,
      runner: { skipValidators: true, ...runner },
      env: {},
    });
    assert.deepEqual(path(replayed), path(recorded));
    assert.deepEqual(replayed.result.state.handoff, recorded.result.state.handoff);
    assert.deepEqual(replayed.result.output, recorded.result.output);
    assert.equal(replayed.calls.length, recorded.calls.length);
    const toolCalls = (run: TestRun) =>
      run.toolCalls?.map((c) => [c.stepId, c.id, c.tool, c.decision, c.result]);
    assert.deepEqual(toolCalls(replayed), toolCalls(recorded));
    assert.deepEqual(replayed.drifts, []);
    if (file.endsWith(".json")) JSON.parse(await Deno.readTextFile(recording));
    if (answers) {
      // The recording holds the person's answers, and the replay gave them again, as recorded.
      const doc = parseYaml(await Deno.readTextFile(recording)) as Record<string, unknown>;
      const recordedAnswers = doc._answers as ScriptAnswer[];
      assert.deepEqual(recordedAnswers.map((a) => a.value), answers.map((a) => a.value));
      assert.equal(recorded.answered, answers.length);
      assert.equal(replayed.answered, answers.length);
      const inputs = (run: TestRun) =>
        run.history.flatMap((h) => h.input ? [h.input.answeredBy] : []);
      assert.deepEqual(inputs(replayed), inputs(recorded));
      assert.deepEqual(replayed.warnings, []);
    }
  });
}

// The agents with an input step: the person's answer is recorded and replayed (a parent waiting on
// its child's input step too).
for (const agent of ["release-approval", "release-train"]) {
  Deno.test(`replay: example agent ${agent} records the person's answer and replays to the end`, async () => {
    const dir = join(ROOT, ".agent", agent);
    // Loaded here: the parent finds its child agent beside it, whatever the run's folder.
    await recordThenReplay(
      await loadAgentDefinition(agent, { cwd: ROOT }),
      join(dir, "demo.script.yaml"),
      agent === "release-approval" ? { version: "1.4.0" } : { train: "november" },
      {},
      "run.replay.yaml",
      [{ value: { decision: "next", note: "ship it" } }],
    );
  });
}

for (const agent of ["haiku", "issue-solver", "code-improver", "tool-fixer"]) {
  Deno.test(`replay: example agent ${agent} replays its recorded run with the same history`, async () => {
    const dir = join(ROOT, ".agent", agent);
    await recordThenReplay(dir, join(dir, "demo.script.yaml"), {
      topic: "Fix the flaky login test",
    });
  });
}

// Every converted climpt agent that calls a model (deployer is one command step: nothing to record).
const CLIMPT_AGENTS: [string, Record<string, unknown>][] = [
  ["probe", { issue: 1, completed_iterations: "0", target_label: "x" }],
  ["watcher", {}],
  ["scout", { labels: ["bug"], mode: "quick", limit: 5 }],
];

Deno.test("replay: the converted climpt agents replay their recorded smoke runs with the same history", async () => {
  await withTemp(async (out) => {
    await migrateClimpt(CLIMPT, { out });
    for (const [name, args] of CLIMPT_AGENTS) {
      const dir = join(out, name);
      // Recorded as JSON for one of them: a .json recording is written and read as JSON.
      const file = name === "probe" ? "run.replay.json" : "run.replay.yaml";
      await recordThenReplay(dir, join(dir, "smoke.script.yaml"), args, {}, file);
    }
  });
});

async function haikuRecording(tmp: string): Promise<{ agent: string; recording: string }> {
  const agent = join(tmp, "haiku");
  await Deno.mkdir(agent);
  for await (const e of Deno.readDir(join(ROOT, ".agent", "haiku"))) {
    if (e.isFile) await Deno.copyFile(join(ROOT, ".agent/haiku", e.name), join(agent, e.name));
  }
  await copyTree(join(ROOT, ".agent/haiku/prompts"), join(agent, "prompts"));
  const recording = join(tmp, "haiku.yaml");
  await runAgentForTest({
    agent,
    script: join(agent, "demo.script.yaml"),
    args: { topic: "autumn" },
    cwd: tmp,
    record: recording,
    env: {},
  });
  return { agent, recording };
}

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyTree(join(from, e.name), join(to, e.name));
    else await Deno.copyFile(join(from, e.name), join(to, e.name));
  }
}

Deno.test("replay: an edited prompt fails strictly with the step, the call and a diff; lenient warns", async () => {
  await withTemp(async (tmp) => {
    const { agent, recording } = await haikuRecording(tmp);
    const prompt = join(agent, "prompts/steps/draft/haiku/f_default.md");
    const text = await Deno.readTextFile(prompt);
    await Deno.writeTextFile(prompt, text.replace("three lines only", "three lines, lower case"));
    const strict = await runAgentForTest({
      agent,
      script: recording,
      args: { topic: "autumn" },
      cwd: tmp,
      env: {},
    });
    assert.equal(strict.result.completionReason, "step_failed");
    assert.equal(strict.result.error?.code, "REPLAY_PROMPT_CHANGED");
    const message = strict.result.error!.message;
    assert.match(message, /step prompt of step "draft\.haiku" changed/);
    assert.match(message, /entry 1 of "draft\.haiku"/);
    assert.match(message, /^- .*three lines only\.$/m);
    assert.match(message, /^\+ .*three lines, lower case\.$/m);
    assert.match(message, /--replay lenient/);
    // onError never swallows a drift: no retry, no second call.
    assert.equal(strict.calls.length, 0);

    const lenient = await runAgentForTest({
      agent,
      script: recording,
      args: { topic: "autumn" },
      cwd: tmp,
      env: {},
      replay: "lenient",
    });
    assert.equal(lenient.result.completionReason, "completed");
    assert.equal(lenient.drifts.length, 2); // the step prompt in both iterations
    assert.equal(lenient.warnings.filter((w) => w.startsWith("replay drift")).length, 2);
  });
});

Deno.test("replay: a call past the end and a step never recorded name the step and the recording", async () => {
  await withTemp(async (tmp) => {
    const { agent, recording } = await haikuRecording(tmp);
    const doc = parseYaml(await Deno.readTextFile(recording)) as Record<string, unknown[]>;
    // Past the end: the check's second verdict is gone, so the second draft's check has none.
    const short = join(tmp, "short.yaml");
    await Deno.writeTextFile(
      short,
      JSON.stringify({ ...doc, "draft.haiku#check": doc["draft.haiku#check"].slice(0, 1) }),
    );
    const past = await runAgentForTest({
      agent,
      script: short,
      args: { topic: "autumn" },
      cwd: tmp,
      env: {},
    });
    assert.equal(past.result.error?.code, "REPLAY_EXHAUSTED");
    assert.match(past.result.error!.message, /went past the end of .*short\.yaml/);
    assert.match(past.result.error!.message, /check call of step "draft\.haiku" \(iteration 2\)/);
    // Never seen: the checks were not recorded at all.
    const noCheck = join(tmp, "nocheck.yaml");
    const { "draft.haiku#check": _dropped, ...rest } = doc;
    await Deno.writeTextFile(noCheck, JSON.stringify(rest));
    const unknown = await runAgentForTest({
      agent,
      script: noCheck,
      args: { topic: "autumn" },
      cwd: tmp,
      env: {},
    });
    assert.equal(unknown.result.error?.code, "REPLAY_STEP_UNKNOWN");
    assert.match(
      unknown.result.error!.message,
      /check call of step "draft\.haiku".*nocheck\.json|nocheck\.yaml/,
    );
    assert.match(unknown.result.error!.message, /it recorded "draft\.haiku"/);
  });
});

Deno.test("replay: credential values are redacted from the recording, and the replay still matches", async () => {
  await withTemp(async (tmp) => {
    const secret = "sk-test-9f8e7d6c5b4a";
    const { agent } = await haikuRecording(tmp);
    const recording = join(tmp, "secret.yaml");
    const env = { OPENAI_API_KEY: secret, STEPFLOW_STORE: "postgres://me:hunter22secret@db/x" };
    const recorded = await runAgentForTest({
      agent,
      // The model echoes the key and the database password it somehow saw.
      script: {
        "draft.haiku": [`key ${secret}\nline two\npassword hunter22secret`],
        "draft.haiku#check": [{ output: { result: "ok" } }],
      },
      args: { topic: secret },
      cwd: tmp,
      record: recording,
      env,
    });
    assert.equal(recorded.result.completionReason, "completed");
    const text = await Deno.readTextFile(recording);
    assert.ok(!text.includes(secret), text);
    assert.ok(!text.includes("hunter22secret"), text);
    assert.match(text, /\[redacted:OPENAI_API_KEY\]/);
    assert.match(text, /\[redacted:STEPFLOW_STORE\]/);
    const replayed = await runAgentForTest({
      agent,
      script: recording,
      args: { topic: secret },
      cwd: tmp,
      env,
    });
    assert.equal(replayed.result.completionReason, "completed", replayed.result.error?.message);
  });
});

Deno.test("replay: a tool step whose call failed after a tool turn replays the turn, then the failure", async () => {
  await withTemp(async (tmp) => {
    const agent = join(ROOT, ".agent", "tool-fixer");
    const recording = join(tmp, "failed.yaml");
    const [first, second] = [join(tmp, "recorded"), join(tmp, "replayed")];
    await Deno.mkdir(first);
    await Deno.mkdir(second);
    const script = {
      s_f1d0: [
        {
          toolCalls: [{ id: "w1", name: "Write", arguments: { file_path: "a.txt", content: "x" } }],
        },
        { error: "server overloaded" },
      ],
    };
    const args = { topic: "t" };
    const recorded = await runAgentForTest({
      agent,
      script,
      args,
      cwd: first,
      record: recording,
      env: {},
    });
    assert.equal(recorded.result.success, false);
    const doc = parseYaml(await Deno.readTextFile(recording)) as Record<
      string,
      Record<string, unknown>[]
    >;
    assert.deepEqual(doc.s_f1d0.map((e) => [e.toolCalls !== undefined, e.error !== undefined]), [
      [true, false],
      [false, true],
    ]);
    const replayed = await runAgentForTest({
      agent,
      script: recording,
      args,
      cwd: second,
      env: {},
    });
    assert.equal(replayed.result.error?.code, recorded.result.error?.code);
    assert.deepEqual(replayed.toolCalls?.map((c) => [c.id, c.tool, c.result]), [
      ["w1", "Write", "Created a.txt (1 bytes)."],
    ]);
    assert.equal(await Deno.readTextFile(join(second, "a.txt")), "x");
  });
});
