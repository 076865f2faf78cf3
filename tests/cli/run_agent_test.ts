/**
 * End-to-end tests of `deno task run-agent`: each spawns the real task from a temp user folder
 * (INIT_CWD) and checks stdout, stderr and the exit code.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { CLI_FLAGS } from "../../src/cli/args.ts";
import {
  copyDir,
  finish,
  hasStackTrace,
  printedArgs,
  REPO_ROOT,
  report,
  runCli,
  runTask,
  spawnCli,
  type Spawned,
  work,
  writeFiles,
  writeTinyAgent,
} from "./helpers.ts";

const LINE = /^\[\d{2}:\d{2}\.\d{3}\] /;

async function withUserDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-cli-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function assertUsageError(result: Spawned, ...expected: (string | RegExp)[]): void {
  const where = `stderr was:\n${result.stderr}`;
  assert.equal(result.code, 2, where);
  assert.equal(result.stdout, "", "usage errors print nothing on stdout");
  // (After the old form's one-line hint to its subcommand, when there is one.)
  assert.match(result.stderr, /^(hint: .*\n)?error: /, where);
  assert.ok(!hasStackTrace(result.stderr), `no stack trace expected; ${where}`);
  for (const e of expected) {
    if (typeof e === "string") assert.ok(result.stderr.includes(e), `missing "${e}"; ${where}`);
    else assert.match(result.stderr, e, where);
  }
}

Deno.test("run-agent: a successful run prints the summary, progress lines and --json result", async () => {
  await withUserDir(async (user) => {
    await copyDir(join(REPO_ROOT, ".agent/issue-solver"), join(user, ".agent/issue-solver"));
    // A relative --script resolves against the user's folder (INIT_CWD), not the repo.
    await Deno.copyFile(
      join(REPO_ROOT, ".agent/issue-solver/demo.script.yaml"),
      join(user, "answers.yaml"),
    );
    const args = ["--agent", "issue-solver", "--script", "answers.yaml", "--topic", "Fix it"];
    const [human, json] = await Promise.all([
      runCli(args, { userDir: user }),
      runCli([...args, "--json"], { userDir: user }),
    ]);

    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /^✓ issue-solver succeeded: completed at complete\.issue after 4 iterations\n/,
    );
    assert.match(human.stdout, /^History:$/m);
    assert.match(
      human.stdout,
      // The demo waits 500 ms per answer: on a loaded machine an iteration may pass 1 s ("1.1s").
      /^ {2}1 +initial\.issue +1 +next +next +continuation\.issue +(\d+ms|\d+\.\ds)$/m,
    );
    assert.match(human.stdout, /^ {2}4 +complete\.issue +1 +- +complete +- +(\d+ms|\d+\.\ds)$/m);
    assert.match(human.stdout, /^Output:\n {2}\{\n {4}"stepId": "complete\.issue",/m);
    assert.ok(!human.stdout.includes("\x1b["), "NO_COLOR: no escape codes on stdout");

    // Progress: one plain timestamped line per event on stderr, nothing else.
    const lines = human.stderr.trimEnd().split("\n");
    for (const line of lines) assert.match(line, LINE, `not a progress line: ${line}`);
    assert.match(
      human.stderr,
      /^\[\d\d:\d\d\.\d{3}\] run \S+ started: agent issue-solver, entry initial\.issue$/m,
    );
    assert.match(
      human.stderr,
      /^\[\d\d:\d\d\.\d{3}\] step initial\.issue #1 → next \(continuation\.issue\)$/m,
    );
    assert.match(
      human.stderr,
      /^\[\d\d:\d\d\.\d{3}\] step continuation\.issue #3 started \(attempt 2, "Issue Continuation Prompt"\)$/m,
    );
    assert.match(
      human.stderr,
      /^\[\d\d:\d\d\.\d{3}\] run succeeded: completed at complete\.issue after 4 iterations \(4 calls, tokens unknown for 4 calls\)$/m,
    );
    assert.ok(!human.stderr.includes("\x1b["), "no colour on a non-terminal stderr");

    // --json: exactly one JSON object, the StepFlowResult.
    assert.equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout);
    assert.equal(typeof result, "object");
    assert.equal(result.success, true);
    assert.equal(result.completionReason, "completed");
    assert.equal(result.finalStepId, "complete.issue");
    assert.equal(result.iterations, 4);
    assert.match(result.runId, /^\d{8}T\d{6}Z-[0-9a-f]{6}$/);
    assert.deepEqual(
      result.state.history.map((h: { stepId: string; transition: string }) =>
        `${h.stepId}:${h.transition}`
      ),
      [
        "initial.issue:next",
        "continuation.issue:repeat",
        "continuation.issue:complete",
        "complete.issue:complete",
      ],
    );
    assert.equal(result.output.stepId, "complete.issue");
    // The scripted backend reports no usage: the tokens are unknown, not 0, and so is the cost.
    assert.deepEqual(result.usage, {
      inputTokens: 0,
      outputTokens: 0,
      costUsd: null,
      calls: 4,
      callsWithoutUsage: 4,
      callsWithoutCost: 4,
    });
    assert.match(json.stderr, /run succeeded/, "progress still goes to stderr with --json");
  });
});

Deno.test("run-agent: a flow that does not succeed exits 1 with the reason", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "tiny");
    await writeFiles(user, {
      "abort.json": { "work.task": [work("abort")] },
      "broken.json": { "work.task": [{ error: "model overloaded" }] },
      "loop.json": { "work.task": [work("repeat"), work("repeat"), work("repeat")] },
    });
    const base = ["--agent", "tiny", "--topic", "x"];
    const [aborted, failed, looped] = await Promise.all([
      runCli([...base, "--script", "abort.json"], { userDir: user }),
      runCli([...base, "--script", "broken.json", "--json"], { userDir: user }),
      runCli([...base, "--script", "loop.json", "--max-iterations", "2"], { userDir: user }),
    ]);

    assert.equal(aborted.code, 1, aborted.stderr);
    assert.match(aborted.stdout, /^✗ tiny failed: aborted at work\.task after 1 iteration\n/);
    assert.match(aborted.stdout, /^Error ABORT_INTENT at step work\.task:$/m);
    assert.match(aborted.stderr, /^\[\d\d:\d\d\.\d{3}\] step work\.task #1 → abort$/m);
    assert.match(aborted.stderr, /run failed: aborted at work\.task after 1 iteration/);
    assert.ok(!hasStackTrace(aborted.stderr));

    assert.equal(failed.code, 1, failed.stderr);
    const result = JSON.parse(failed.stdout);
    assert.equal(result.success, false);
    assert.equal(result.completionReason, "step_failed");
    assert.equal(result.error.stepId, "work.task");
    assert.match(result.error.message, /model overloaded/);
    assert.match(failed.stderr, /step work\.task #1 error .*model overloaded/);

    assert.equal(looped.code, 1, looped.stderr);
    assert.match(looped.stdout, /^✗ tiny failed: max_iterations at work\.task after 2 iterations/);
    assert.match(looped.stdout, /--max-iterations/, "the error says how to raise the limit");
  });
});

Deno.test("run-agent: usage errors exit 2 with a clear message and no stack trace", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "tiny");
    const run = (...args: string[]) =>
      runCli(args, { userDir: user, env: { OPENAI_API_KEY: "", OPENAI_BASE_URL: "" } });
    const [unknown, noAgent, missing, badNumber, noSuchAgent, badBackend, noScript, noKey, badMax] =
      await Promise.all([
        run("--agent", "tiny", "--topik", "x"),
        run("--topic", "x"),
        run("--agent", "tiny"),
        run("--agent", "tiny", "--topic", "x", "--count", "abc"),
        run("--agent", "nope"),
        run("--agent", "tiny", "--topic", "x", "--backend", "nonesuch"),
        run("--agent", "tiny", "--topic", "x", "--script", "missing.yaml"),
        run("--agent", "tiny", "--topic", "x", "--backend", "openai"),
        run("--agent", "tiny", "--topic", "x", "--max-iterations", "many"),
      ]);
    assertUsageError(
      unknown,
      "Unknown option --topik. Did you mean --topic?",
      'Parameters of agent "tiny":',
      /--count <number> +How many \(default 1\)/,
      /--topic <string> +What to do \(required\)/,
      /--loud \[true\|false\] +Shout/,
    );
    assertUsageError(noAgent, "Missing --agent NAME", "Agents in .agent: tiny.");
    assertUsageError(
      missing,
      'Missing required parameter --topic for agent "tiny".',
      "--topic <string>",
    );
    assertUsageError(badNumber, '--count expects a number, got "abc".');
    assertUsageError(noSuchAgent, 'Agent "nope" not found', "tiny", " init nope`");
    assertUsageError(
      badBackend,
      'Unknown backend "nonesuch"',
      "claude-code, anthropic, openai, scripted",
    );
    assertUsageError(noScript, "Cannot read script file", join(user, "missing.yaml"));
    assertUsageError(noKey, "OPENAI_API_KEY", "--base-url");
    assertUsageError(badMax, '--max-iterations expects a positive integer, got "many".');
  });
});

Deno.test("run-agent: --script is a regular file of at most 16 MiB — a larger one, a device or a pipe is refused at once", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "tiny");
    // 17 MiB without writing them (a sparse file): refused by its size, before reading it.
    using big = await Deno.open(join(user, "big.yaml"), { write: true, create: true });
    await big.truncate(17 * 1024 * 1024);
    const fifo = join(user, "answers.pipe");
    await new Deno.Command("mkfifo", { args: [fifo] }).output();
    const run = (script: string) => {
      const child = spawnCli("run-agent", ["--agent", "tiny", "--topic", "x", "--script", script], {
        userDir: user,
      });
      // Bounded: before the fix /dev/zero was read until memory ran out, and a pipe waited for a
      // writer forever.
      const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
      return finish(child).finally(() => clearTimeout(timer));
    };
    const [tooBig, zero, pipe, folder] = await Promise.all([
      run("big.yaml"),
      run("/dev/zero"),
      run("answers.pipe"),
      run("."),
    ]);
    assertUsageError(
      tooBig,
      `Cannot read script file ${
        join(user, "big.yaml")
      }: it is 17825792 bytes; a script file is at most 16 MiB.`,
    );
    assertUsageError(zero, "Cannot read script file /dev/zero: it is a device, not a file.");
    assertUsageError(pipe, `Cannot read script file ${fifo}: it is a pipe, not a file.`);
    assertUsageError(folder, `Cannot read script file ${user}: it is a folder, not a file.`);
  });
});

Deno.test("run-agent: --help, --list, --validate and --graph", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "tiny");
    // Broken on purpose: a misspelt key, a missing target, a step without transitions, no prompt.
    await writeFiles(join(user, ".agent/broken"), {
      "agent.json": {
        name: "broken",
        description: "Has several problems",
        behaviour: {},
        behavior: { completionType: "task" },
      },
      "steps_registry.json": {
        version: "1",
        entryStep: "initial.task",
        steps: {
          "initial.task": {
            c2: "initial",
            c3: "task",
            outputSchemaRef: { file: "none.schema.json", schema: "#/definitions/initial.task" },
            structuredGate: { allowedIntents: ["next"], intentField: "next_action.action" },
            transitions: { next: { target: "nowhere.task" } },
          },
          "other.task": {
            c2: "other",
            c3: "task",
            structuredGate: { allowedIntents: ["next"], intentField: "a" },
          },
        },
      },
    });
    const [helpAll, helpAgent, list, listJson, valid, broken, graph] = await Promise.all([
      runCli(["run-agent", "--help"], { userDir: user }), // the old form: every flag
      runCli(["--agent", "tiny", "--help"], { userDir: user }),
      runCli(["--list"], { userDir: user }),
      runCli(["--list", "--json"], { userDir: user }),
      runCli(["--agent", "tiny", "--validate"], { userDir: user }),
      runCli(["--agent", "broken", "--validate"], { userDir: user }),
      runCli(["--agent", "tiny", "--graph"], { userDir: user }),
    ]);

    assert.equal(helpAll.code, 0);
    for (const flag of CLI_FLAGS) assert.ok(helpAll.stdout.includes(`--${flag.name}`), flag.name);
    assert.match(helpAll.stdout, /Exit codes: 0 success, 1 /);
    assert.equal(helpAgent.code, 0);
    assert.match(helpAgent.stdout, /Parameters of agent "tiny":\n {2}--topic <string> +What to do/);

    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^Agents in \.agent \(2\):$/m);
    assert.match(list.stdout, /^ {2}broken +Has several problems$/m);
    // An agent that does not load is marked, with its problems' count and the first of them.
    assert.match(
      list.stdout,
      /^ {2}broken +Has several problems\n {10}✗ does not load \(\d+ problems\): \S/m,
    );
    assert.match(list.stdout, /^ {2}tiny +Tiny test agent tiny\n(?! +✗)/m);
    assert.match(
      list.stdout,
      /^1 agent does not load; see why with: \S.* validate broken$/m,
    );
    const listed = JSON.parse(listJson.stdout) as {
      name: string;
      loads: boolean;
      problems?: string[];
    }[];
    assert.deepEqual(listed.map((a) => [a.name, a.loads]), [["broken", false], ["tiny", true]]);
    assert.ok(listed[0].problems!.length >= 3, "every problem in --json");
    assert.equal(listed[1].problems, undefined);

    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stdout, /^OK: agent "tiny" is valid \(2 steps, entry work\.task\)/);

    assert.equal(broken.code, 2, broken.stdout + broken.stderr);
    assert.match(broken.stdout, /^Agent "broken" is invalid: \d+ problems in \.agent\/broken$/m);
    assert.match(broken.stdout, /behaviour/);
    assert.match(broken.stdout, /nowhere\.task/);
    assert.match(broken.stdout, /missing transitions: .*other\.task/i);
    assert.match(broken.stdout, /^ {2}3\. /m, "several problems are listed, numbered");
    assert.ok(!hasStackTrace(broken.stdout + broken.stderr));

    assert.equal(graph.code, 0, graph.stderr);
    assert.match(graph.stdout, /^flowchart TD\n/);
    assert.match(graph.stdout, /work_task/);
    assert.match(graph.stdout, /complete_task/);
  });
});

Deno.test("run-agent: --validate prints warnings and still exits 0", async () => {
  await withUserDir(async (user) => {
    const dir = await writeTinyAgent(user, "tiny");
    // An extra step nothing routes to: unreachable (a warning, not an error).
    const registryFile = join(dir, "steps_registry.json");
    const registry = JSON.parse(await Deno.readTextFile(registryFile));
    registry.steps["spare.task"] = {
      ...registry.steps["work.task"],
      name: "Spare",
      structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
      transitions: { complete: { target: "complete.task" } },
    };
    await Deno.writeTextFile(registryFile, JSON.stringify(registry));
    const result = await runCli(["--agent", "tiny", "--validate"], { userDir: user });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /^OK: agent "tiny" is valid/);
    assert.match(result.stdout, /^1 warning:\n {2}1\. .*spare\.task/m);
  });
});

Deno.test("run-agent: --init scaffolds an agent that loads and runs with its demo script", async () => {
  await withUserDir(async (user) => {
    const init = await runCli(["--init", "my-agent"], { userDir: user });
    assert.equal(init.code, 0, init.stderr);
    assert.match(
      init.stdout,
      /^Created agent "my-agent" in \.agent\/my-agent from the gate-routed template/,
    );
    const agent = JSON.parse(await Deno.readTextFile(join(user, ".agent/my-agent/agent.json")));
    assert.equal(agent.name, "my-agent");
    // From a folder outside the checkout the next steps use `deno run --config …`: the user's own
    // deno.json has no `stepflow` task.
    const command = /^ {2}(\S.* run my-agent --script \S+ .*)$/m.exec(init.stdout);
    assert.ok(command, `the output shows how to run it:\n${init.stdout}`);

    const args = printedArgs(command[1], user);
    const [run, again, badName, validate] = await Promise.all([
      runCli(args, { userDir: user }),
      runCli(["--init", "my-agent"], { userDir: user }),
      runCli(["--init", "../escape"], { userDir: user }),
      runCli(["--agent", "my-agent", "--validate"], { userDir: user }),
    ]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /^✓ my-agent succeeded: completed at /);
    assertUsageError(again, "already exists", "never overwrites");
    assertUsageError(badName, 'Invalid agent name "../escape"');
    assert.equal(validate.code, 0, validate.stdout);
    assert.deepEqual(
      [...Deno.readDirSync(join(user, ".agent"))].map((e) => e.name),
      ["my-agent"],
      "no staging folder is left behind",
    );
  });
});

Deno.test("deno task demo runs the example agent end to end from any folder", async () => {
  await withUserDir(async (user) => {
    const demo = await runTask([], { userDir: user, task: "demo" });
    assert.equal(demo.code, 0, demo.stderr);
    assert.match(demo.stdout, /^✓ issue-solver succeeded: completed at complete\.issue/);
    assert.match(demo.stdout, /"summary": /);
    assert.match(demo.stderr, /step initial\.issue #1 → next \(continuation\.issue\)/);
  });
});

Deno.test("run-agent: piped stdin becomes {input_text}", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "reader", {
      prompt: "Review this text:\n{input_text}",
      parameters: {},
    });
    await writeFiles(user, {
      "ok.json": { "work.task": [work("complete")], "complete.task": [report("ok")] },
    });
    const args = ["--agent", "reader", "--script", "ok.json"];
    const [piped, none] = await Promise.all([
      runCli(args, { userDir: user, stdin: "diff --git a/x b/x\n+hello\n" }),
      runCli(args, { userDir: user }),
    ]);
    assert.equal(piped.code, 0, piped.stdout + piped.stderr);
    assert.match(piped.stdout, /^✓ reader succeeded/);
    // Without stdin the prompt's variable has no value: the run fails and says how to fix it.
    assert.equal(none.code, 1, none.stdout + none.stderr);
    assert.match(none.stdout, /\{input_text\} ← pipe text on stdin/);
  });
});

Deno.test("run-agent: Ctrl-C cancels the call in flight, prints the result and exits 130", async () => {
  await withUserDir(async (user) => {
    await writeTinyAgent(user, "tiny");
    await writeFiles(user, {
      "slow.json": { "work.task": [{ ...work("complete"), delayMs: 30_000 }] },
    });
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "src/cli/run_agent.ts",
        "--agent",
        "tiny",
        "--script",
        "slow.json",
        "--topic",
        "x",
      ],
      cwd: REPO_ROOT,
      env: { INIT_CWD: user, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // The run has started once its first step is announced; then interrupt it.
    const decoder = new TextDecoder();
    let stderr = "";
    const reader = child.stderr.getReader();
    while (!stderr.includes("step work.task #1 started")) {
      const chunk = await reader.read();
      if (chunk.done) break;
      stderr += decoder.decode(chunk.value, { stream: true });
    }
    const started = performance.now();
    child.kill("SIGINT");
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      stderr += decoder.decode(chunk.value, { stream: true });
    }
    const [status, stdout] = await Promise.all([
      child.status,
      new Response(child.stdout).text(),
    ]);
    assert.ok(performance.now() - started < 10_000, "the 30 s call was cancelled");
    assert.equal(status.code, 130, stderr);
    assert.match(stderr, /Cancelling the run… \(press Ctrl-C again to quit at once\)/);
    assert.match(stderr, /run cancelled at work\.task/);
    assert.match(stdout, /^■ tiny cancelled at work\.task after 1 iteration/);
    // Cancelled is not failed: no "Restart it from its failed step", and a command that continues.
    assert.doesNotMatch(stdout + stderr, /failed step|✗/);
    assert.match(stderr, /Continue it from step "work\.task" with: .* redrive \S+$/m);
  });
});
