/**
 * A run's waits answered from a list, as a person answered them: a recording holds the answers the
 * run was given (`_answers`: an input step's, a tool call's permission) and the test kit replays
 * the run to its end with them; a test's own `answers` replace them; a hand-written script may
 * hold `_answers` too; an answer for another step than the one that waits is
 * `REPLAY_ANSWER_MISMATCH`; a run left waiting says what to add.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { assertCompleted, assertPath, runAgentForTest } from "../../src/testing/mod.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { seed001Files, seed001Script, writeAgent } from "../flow/fixtures.ts";

const RELEASE_SCRIPT = {
  "draft.release": [{ output: { plan: "tag, build, publish", next_action: { action: "next" } } }],
  "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
};

async function withTemp(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-answers-test-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("answers: a recording holds the person's answer; the replay gives it again and ends as recorded", async () => {
  await withTemp(async (root) => {
    await writeAgent(root, "release", releaseFiles());
    const recording = join(root, "release.replay.yaml");
    const recorded = await runAgentForTest({
      agent: "release",
      cwd: root,
      script: RELEASE_SCRIPT,
      args: { version: "1.2.0" },
      answers: [{ step: "approve.release", value: { decision: "next", note: "go" }, by: "erin" }],
      record: recording,
      env: {},
    });
    assertCompleted(recorded);
    assert.equal(recorded.answered, 1);
    const doc = parseYaml(await Deno.readTextFile(recording)) as Record<string, unknown>;
    assert.deepEqual(doc._answers, [
      { step: "approve.release", value: { decision: "next", note: "go" }, by: "erin" },
    ]);
    assert.equal((doc._replay as Record<string, unknown>).answers, 1);

    const replayed = await runAgentForTest({
      agent: "release",
      cwd: root,
      script: recording,
      args: { version: "1.2.0" },
      env: {},
    });
    assertCompleted(replayed);
    assertPath(replayed, ["draft.release", "approve.release", "complete.release"]);
    assert.equal(replayed.history[1].input?.answeredBy, "erin");
    assert.deepEqual(replayed.result.state.handoff, recorded.result.state.handoff);

    // A test's own answers replace the recording's: a "no" this time.
    const declined = await runAgentForTest({
      agent: "release",
      cwd: root,
      script: recording,
      args: { version: "1.2.0" },
      answers: [{ value: { decision: "abort", note: "not today" } }],
      env: {},
    });
    assert.equal(declined.result.completionReason, "declined");
    assert.equal(declined.result.declined?.by, "test");
  });
});

Deno.test("answers: a run that waits with no answer left says what to add; a wrong step is REPLAY_ANSWER_MISMATCH", async () => {
  await withTemp(async (root) => {
    await writeAgent(root, "release", releaseFiles());
    const unanswered = await runAgentForTest({
      agent: "release",
      cwd: root,
      script: RELEASE_SCRIPT,
      args: { version: "1" },
    });
    assert.equal(unanswered.result.completionReason, "waiting");
    assert.throws(
      () => assertCompleted(unanswered),
      /waits for an answer at step "approve\.release" and no answer was left: give it in `answers`/,
    );
    await assert.rejects(
      () =>
        runAgentForTest({
          agent: "release",
          cwd: root,
          script: RELEASE_SCRIPT,
          args: { version: "1" },
          answers: [{ step: "confirm.release", value: { decision: "next" } }],
        }),
      (error) => {
        assert.ok(error instanceof StepflowError, String(error));
        assert.equal(error.code, "REPLAY_ANSWER_MISMATCH");
        assert.match(
          error.message,
          /waits for an answer at step "approve\.release", but answer 1 of the test's answers is for step "confirm\.release"/,
        );
        return true;
      },
    );
  });
});

Deno.test("answers: a hand-written script's _answers answer the run; a bad list is SCRIPT_INVALID", async () => {
  await withTemp(async (root) => {
    await writeAgent(root, "release", releaseFiles());
    const file = join(root, "release.script.json");
    await Deno.writeTextFile(
      file,
      JSON.stringify({ ...RELEASE_SCRIPT, _answers: [{ value: { decision: "next" } }] }),
    );
    const run = await runAgentForTest({
      agent: "release",
      cwd: root,
      script: file,
      args: { version: "1" },
    });
    assertCompleted(run);
    assert.equal(run.history[1].input?.answeredBy, "test");
    await Deno.writeTextFile(
      file,
      JSON.stringify({ ...RELEASE_SCRIPT, _answers: [{ decision: "next" }] }),
    );
    await assert.rejects(
      () => runAgentForTest({ agent: "release", cwd: root, script: file, args: { version: "1" } }),
      /SCRIPT_INVALID|_answers entry 1 has no "value"/,
    );
  });
});

Deno.test("answers: a tool call's permission is recorded and replayed: the call waits, is allowed again, and runs", async () => {
  await withTemp(async (root) => {
    const files = seed001Files();
    Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
      // Bash is offered, but only `npm test` runs without asking: this call asks.
      allowedTools: ["Read", "Bash(npm test)"],
      permissionMode: "default",
    });
    await writeAgent(root, "code-improver", files);
    const definition = await loadAgentDefinition("code-improver", { cwd: root });
    const script = seed001Script({
      s_a8f3: ["Plan: append a line."],
      s_b2c1: [
        { toolCalls: [{ name: "Bash", arguments: { command: "echo done >> out.txt" } }] },
        "Done.",
      ],
    });
    const recording = join(root, "fix.replay.yaml");
    const [first, second] = [join(root, "recorded"), join(root, "replayed")];
    await Deno.mkdir(first);
    await Deno.mkdir(second);
    const recorded = await runAgentForTest({
      agent: definition,
      cwd: first,
      script,
      args: { topic: "t" },
      answers: [{ step: "s_b2c1", tool: "Bash", value: { decision: "allow" } }],
      record: recording,
      env: {},
    });
    assertCompleted(recorded);
    const doc = parseYaml(await Deno.readTextFile(recording)) as Record<string, unknown>;
    assert.deepEqual(doc._answers, [
      { step: "s_b2c1", tool: "Bash", value: { decision: "allow" }, by: "test" },
    ]);
    const replayed = await runAgentForTest({
      agent: definition,
      cwd: second,
      script: recording,
      args: { topic: "t" },
      env: {},
    });
    assertCompleted(replayed);
    assert.equal(replayed.answered, 1);
    const calls = (run: typeof recorded) => run.toolCalls?.map((c) => [c.tool, c.decision]);
    assert.deepEqual(calls(replayed), [["Bash", "allow"]]);
    assert.deepEqual(calls(replayed), calls(recorded));
    assert.equal(await Deno.readTextFile(join(second, "out.txt")), "done\n", "the call ran again");
  });
});
