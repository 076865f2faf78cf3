/**
 * Input steps through the real `run-agent`: without a terminal the run waits and the CLI says how
 * to answer (exit 4); `--answer RUN_ID --value` (or JSON on stdin) from another process records
 * and continues it; bad answers are refused with nothing recorded; two answering processes racing:
 * one wins; at a real terminal (util-linux `script`) the question is asked at once.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeAgent } from "../flow/fixtures.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { HAS_SCRIPT, readUntil, runTask, spawnAtTerminal, spawnCli } from "./helpers.ts";

const SCRIPT = JSON.stringify({
  "draft.release": [{ output: { plan: "tag, build, publish", next_action: { action: "next" } } }],
  "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
});

async function releaseAgent(): Promise<string> {
  const user = await Deno.makeTempDir({ prefix: "stepflow-input-cli-" });
  await writeAgent(user, "release", releaseFiles());
  await Deno.writeTextFile(join(user, "release.script.json"), SCRIPT);
  return user;
}

const START = ["--agent", "release", "--script", "release.script.json", "--version", "1.2.0"];
const ANSWER = ["--agent", "release", "--script", "release.script.json"];

/** Starts a run without a terminal; returns its id. */
async function startWaiting(user: string): Promise<string> {
  const started = await runTask(START, { userDir: user });
  assert.equal(started.code, 4, started.stderr);
  const id = started.stdout.match(/^Run (\S+) waits for an answer/m)?.[1];
  assert.ok(id, started.stdout);
  return id;
}

Deno.test("run-agent without a terminal: the run waits, the CLI prints the question and the command, exit 4", async () => {
  const user = await releaseAgent();
  try {
    const started = await runTask(START, { userDir: user });
    assert.equal(started.code, 4, started.stderr);
    const id = started.stdout.match(/^Run (\S+) waits for an answer/m)?.[1]!;
    assert.match(
      started.stdout,
      /at input step "approve\.release":\n {2}Ship 1\.2\.0\? The plan: tag, build, publish/,
    );
    const command = started.stdout.match(/^Answer it with:\n {2}(.+)$/m)?.[1];
    assert.ok(command, started.stdout);
    assert.match(
      command,
      new RegExp(
        // No --script: the run recorded its backend, and the answer continues on it.
        ` answer ${id} --value '\\{"decision":"next"\\}'$`,
      ),
    );
    const waiting = await runTask(["--agent", "release", "--runs"], { userDir: user });
    assert.match(waiting.stdout, new RegExp(`${id} .* waiting · answer approve\\.release `));
    // The printed command is the one that answers: run it as a shell would, from the user's folder.
    // (Without the INIT_CWD of the `deno task test` running this test: deno task keeps one it
    // inherits, and a shell of the user has none.)
    const answered = await new Deno.Command("sh", {
      args: ["-c", `unset INIT_CWD; ${command}`],
      cwd: user,
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const answeredOut = new TextDecoder().decode(answered.stdout);
    assert.equal(answered.code, 0, new TextDecoder().decode(answered.stderr));
    assert.match(answeredOut, /completed/);
    assert.match(started.stderr, /waiting for an answer at approve\.release after 1 iteration/);

    const runs = await runTask(["--agent", "release", "--runs"], { userDir: user });
    assert.match(runs.stdout, new RegExp(`${id}.*completed`));
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("run-agent --answer: a bad answer is refused and nothing recorded; a good one completes the run; a second is refused", async () => {
  const user = await releaseAgent();
  try {
    const id = await startWaiting(user);
    const logFile = join(user, "tmp", "logs", "agents", "release");
    const logBefore = await logText(logFile, id);

    const bad = await runTask([...ANSWER, "--answer", id, "--value", '{"decision":"ship"}'], {
      userDir: user,
    });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /INPUT_ANSWER_INVALID|does not match #\/definitions\/approve/);
    assert.match(bad.stderr, /allowed values/);
    const notJson = await runTask([...ANSWER, "--answer", id, "--value", "{decision"], {
      userDir: user,
    });
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /The answer \(--value\) is not JSON/);
    assert.equal(await logText(logFile, id), logBefore, "a refused answer records nothing");

    const good = await runTask(
      [...ANSWER, "--answer", id, "--value", '{"decision":"next","note":"ship it"}'],
      { userDir: user, env: { USER: "dana" } },
    );
    assert.equal(good.code, 0, good.stderr);
    assert.match(good.stdout, /completed/);

    const again = await runTask([...ANSWER, "--answer", id, "--value", '{"decision":"next"}'], {
      userDir: user,
    });
    assert.equal(again.code, 2);
    assert.match(again.stderr, /cannot take this answer: it already ended/);

    const shown = await runTask(["--agent", "release", "--show", id], { userDir: user });
    assert.match(shown.stdout, /approve\.release .*answered by cli \(dana\)/);
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("run-agent: a person's abort ends the run declined — who and their note shown, no redrive hint, exit 3", async () => {
  const user = await releaseAgent();
  try {
    const id = await startWaiting(user);
    const no = await runTask(
      [...ANSWER, "--answer", id, "--value", '{"decision":"abort","note":"not this week"}'],
      { userDir: user, env: { USER: "erin" } },
    );
    assert.equal(no.code, 3, no.stdout + no.stderr);
    assert.match(
      no.stdout,
      /^■ release declined by cli \(erin\) at approve\.release after 2 iterations$/m,
    );
    assert.match(no.stdout, /^ {2}note: not this week$/m);
    assert.doesNotMatch(no.stdout + no.stderr, /ABORT_INTENT|failed|redrive|Restart it/);
    assert.match(no.stderr, /run declined by cli \(erin\) at approve\.release/);

    const shown = await runTask(["--agent", "release", "--show", id], { userDir: user });
    assert.match(shown.stdout, new RegExp(`^Run ${id} · agent release · declined$`, "m"));
    assert.match(shown.stdout, /^Declined by cli \(erin\) at .*, at step approve\.release\.$/m);
    assert.match(shown.stdout, /^Note: not this week$/m);
    assert.doesNotMatch(shown.stdout, /redrive|Error /);
    const listed = await runTask(["--agent", "release", "--runs"], { userDir: user });
    assert.match(listed.stdout, new RegExp(`^${id} .* declined `, "m"));
    assert.doesNotMatch(listed.stdout, /Restart a failed/);

    // --json carries who and the note, and no error.
    const json = await runTask(["--agent", "release", "--show", id, "--json"], { userDir: user });
    const end = JSON.parse(json.stdout).checkpoint.state.end;
    assert.equal(end.reason, "declined");
    assert.equal(end.declined.by, "cli (erin)");
    assert.deepEqual(end.declined.note, { note: "not this week" });
    assert.equal(end.error, undefined);
    const again = await startWaiting(user);
    const result = await runTask(
      [...ANSWER, "--answer", again, "--value", '{"decision":"abort"}', "--json"],
      { userDir: user, env: { USER: "erin" } },
    );
    assert.equal(result.code, 3, result.stderr);
    const parsed = JSON.parse(result.stdout);
    assert.equal(parsed.completionReason, "declined");
    assert.equal(parsed.declined.by, "cli (erin)");
    assert.equal(parsed.error, undefined);

    // A redrive asks the person again.
    const redriven = await runTask([...ANSWER, "--redrive", id], { userDir: user });
    assert.equal(redriven.code, 4, redriven.stdout + redriven.stderr);
    assert.match(redriven.stdout, new RegExp(`^Run ${id} waits for an answer at input step`, "m"));
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("run-agent --answer reads the JSON from stdin when --value is not given", async () => {
  const user = await releaseAgent();
  try {
    const id = await startWaiting(user);
    const piped = await runTask([...ANSWER, "--answer", id], {
      userDir: user,
      stdin: '{"decision":"abort"}\n',
    });
    assert.equal(piped.code, 3, piped.stderr);
    assert.match(piped.stdout, /declined/);
    const none = await runTask([...ANSWER, "--answer", id], { userDir: user, stdin: "" });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--answer needs the answer/);
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test("run-agent --answer from two processes at once: exactly one answer is recorded", async () => {
  const user = await releaseAgent();
  try {
    const id = await startWaiting(user);
    const children = ["next", "abort"].map((decision) =>
      spawnCli(
        "run-agent",
        [...ANSWER, "--answer", id, "--value", JSON.stringify({ decision })],
        { userDir: user },
      )
    );
    const results = await Promise.all(children.map((c) => c.output()));
    const codes = results.map((r) => r.code).sort();
    const stderr = results.map((r) => new TextDecoder().decode(r.stderr)).join("\n");
    assert.equal(codes.filter((c) => c === 2).length, 1, stderr);
    assert.match(stderr, /cannot take this answer/);
    const log = await logText(join(user, "tmp", "logs", "agents", "release"), id);
    assert.equal(log.split("\n").filter((l) => l.includes('"type":"input_answer"')).length, 1);
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test({
  name: "run-agent at a real terminal asks the question field by field and goes on",
  ignore: !(await HAS_SCRIPT),
  fn: async () => {
    const user = await releaseAgent();
    try {
      // The plan takes 0.8 s: the clock of the drive after the answer goes on from there.
      const slow = JSON.parse(SCRIPT);
      slow["draft.release"][0].delayMs = 800;
      await Deno.writeTextFile(join(user, "release.script.json"), JSON.stringify(slow));
      const child = spawnAtTerminal(START, { userDir: user, env: { USER: "erin" } });
      const out = { text: "" };
      const reader = child.stdout.getReader();
      const writer = child.stdin.getWriter();
      await readUntil(reader, out, "decision [1-2]: ");
      assert.match(out.text, /waits for your answer at step "approve\.release"/);
      assert.match(out.text, /Ship 1\.2\.0\? The plan: tag, build, publish/);
      assert.match(out.text, /1\) next\r?\n {2}2\) abort/);
      await writer.write(new TextEncoder().encode("ship\r"));
      await readUntil(reader, out, "Pick 1-2 or one of: next, abort.");
      await readUntil(reader, out, "decision [1-2]: ");
      await writer.write(new TextEncoder().encode("1\r"));
      await readUntil(reader, out, "note [empty to skip]: ");
      await writer.write(new TextEncoder().encode("all green\r"));
      await readUntil(reader, out);
      await writer.close().catch(() => {});
      const status = await child.status;
      await child.stderr.cancel();
      assert.equal(status.code, 0, out.text);
      assert.match(out.text, /completed/);
      // The live view's closing line counts from the run's start in this command, not from the
      // answer (it said 00:00.0 when the clock started again).
      const clock = out.text.match(/✓ succeeded: .* in (\d\d):(\d\d\.\d)/);
      assert.ok(clock, out.text);
      assert.ok(Number(clock[1]) * 60 + Number(clock[2]) >= 0.8, clock[0]);
      const shown = await runTask(["--agent", "release", "--runs"], { userDir: user });
      assert.match(shown.stdout, /completed/);
      const id = shown.stdout.match(/^(\d{8}T\d{6}Z-\w+)/m)?.[1]!;
      const history = await runTask(["--agent", "release", "--show", id], { userDir: user });
      assert.match(history.stdout, /answered by terminal \(erin\)/);
    } finally {
      await Deno.remove(user, { recursive: true });
    }
  },
});

async function logText(dir: string, runId: string): Promise<string> {
  return await Deno.readTextFile(join(dir, `${runId}.jsonl`));
}
