/**
 * Ctrl-C: under `deno task` one Ctrl-C can reach the CLI twice within a
 * millisecond; that must cancel cleanly and print the result, like one SIGINT does. Tested with real
 * signals and with a real pseudo-terminal (util-linux `script`) driving `deno task run-agent`.
 */
import assert from "node:assert/strict";
import { createInterruptHandler, INTERRUPT_GRACE_MS } from "../../src/cli/run_agent.ts";
import {
  HAS_SCRIPT,
  readUntil,
  REPO_ROOT,
  spawnAtTerminal,
  work,
  writeFiles,
  writeTinyAgent,
} from "./helpers.ts";

Deno.test("interrupt handler: first cancels, a repeat within the grace window is ignored, a later one quits", () => {
  let clock = 0;
  const calls: string[] = [];
  const handler = createInterruptHandler({
    cancel: () => calls.push(`cancel@${clock}`),
    quit: () => calls.push(`quit@${clock}`),
    now: () => clock,
  });
  handler();
  clock = 2;
  handler(); // the same Ctrl-C, forwarded by deno task
  clock = INTERRUPT_GRACE_MS - 1;
  handler();
  clock = INTERRUPT_GRACE_MS + 10;
  handler();
  assert.deepEqual(calls, ["cancel@0", `quit@${INTERRUPT_GRACE_MS + 10}`]);
});

/** A user folder with the tiny agent whose only call takes 300 s (a cancel ends it long before). */
async function slowAgent(): Promise<string> {
  const user = await Deno.makeTempDir({ prefix: "stepflow-cli-int-" });
  await writeTinyAgent(user, "tiny");
  await writeFiles(user, {
    "slow.json": { "work.task": [{ ...work("complete"), delayMs: 300_000 }] },
  });
  return user;
}

Deno.test("run-agent: the same Ctrl-C delivered twice (as deno task does) still cancels and prints the result", async () => {
  const user = await slowAgent();
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "src/cli/run_agent.ts", "--agent", "tiny", "--script", "slow.json"]
        .concat(["--topic", "x"]),
      cwd: REPO_ROOT,
      env: { INIT_CWD: user, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stderr = { text: "" };
    const reader = child.stderr.getReader();
    await readUntil(reader, stderr, "step work.task #1 started");
    const started = performance.now();
    // Two signals sent back to back merge in the kernel; deno task's copy arrives just after the
    // first was handled — so send the second once the first has been seen.
    child.kill("SIGINT");
    await readUntil(reader, stderr, "Cancelling the run");
    child.kill("SIGINT");
    const stdout = new Response(child.stdout).text();
    await readUntil(reader, stderr);
    const status = await child.status;
    assert.ok(performance.now() - started < 120_000, "the 300 s call was cancelled");
    assert.equal(status.code, 130, stderr.text);
    assert.match(stderr.text, /run cancelled at work\.task/);
    assert.match(await stdout, /^■ tiny cancelled at work\.task after 1 iteration/);
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});

Deno.test({
  name: "run-agent: one Ctrl-C on a real terminal under deno task cancels and prints the result",
  ignore: !(await HAS_SCRIPT),
  fn: async () => {
    const user = await slowAgent();
    try {
      // A \x03 written to the pseudo-terminal is a real Ctrl-C: the terminal sends SIGINT to the
      // whole foreground process group (deno task and the CLI).
      const child = spawnAtTerminal(["--agent", "tiny", "--script", "slow.json", "--topic", "x"], {
        userDir: user,
      });
      const out = { text: "" };
      const reader = child.stdout.getReader();
      await readUntil(reader, out, "work.task");
      const writer = child.stdin.getWriter();
      const started = performance.now();
      await writer.write(new TextEncoder().encode("\x03"));
      await readUntil(reader, out);
      await writer.close().catch(() => {});
      const status = await child.status;
      await child.stderr.cancel();
      assert.ok(performance.now() - started < 120_000, "the 300 s call was cancelled");
      assert.equal(status.code, 130, out.text);
      assert.match(out.text, /Cancelling the run… \(press Ctrl-C again to quit at once\)/);
      assert.match(out.text, /■ tiny cancelled at work\.task after 1 iteration/);
      assert.match(out.text, /History:/);
    } finally {
      await Deno.remove(user, { recursive: true });
    }
  },
});

Deno.test("run-plan: the same Ctrl-C delivered twice (as deno task does) still cancels and saves the plan", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-run-plan-int-" });
  try {
    await writeFiles(dir, {
      "plan.json": {
        id: "plan_int",
        taskId: "task_int",
        version: 1,
        createdAt: "2025-01-01T00:00:00Z",
        steps: [{
          id: "wait",
          description: "Work for a while",
          tool: "run_command",
          args: { command: "sleep", args: ["300"] },
        }],
      },
    });
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "src/cli/run_plan.ts", "plan.json", "--yes", "--enable-commands"],
      cwd: REPO_ROOT,
      env: { INIT_CWD: dir, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stderr = { text: "" };
    const reader = child.stderr.getReader();
    await readUntil(reader, stderr, "approved automatically");
    const started = performance.now();
    child.kill("SIGINT");
    await readUntil(reader, stderr, "Cancelling");
    child.kill("SIGINT"); // deno task's copy of the same key press: not a second Ctrl-C
    const stdout = new Response(child.stdout).text();
    await readUntil(reader, stderr);
    const status = await child.status;
    assert.ok(performance.now() - started < 120_000, "the 300 s step was stopped");
    assert.equal(status.code, 130, stderr.text);
    assert.match(await stdout, /^Plan cancelled: .*Saved to /m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
