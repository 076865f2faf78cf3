import assert from "node:assert/strict";
import { join } from "node:path";
import { main } from "../../src/cli/run_plan.ts";
import type { Plan } from "../../src/plan/types.ts";
import { runMain, spawnCli } from "../cli/helpers.ts";

const REPO = new URL("../../", import.meta.url).pathname;

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** `run-plan …` in-process, as `deno task run-plan` from `cwd` would run it (no terminal). */
function runPlan(args: string[], cwd: string): Promise<Result> {
  return runMain(main, args, { userDir: cwd });
}

/** The real `deno task run-plan` in a subprocess (the smoke test). */
async function runPlanTask(args: string[], cwd: string): Promise<Result> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "run-plan", ...args],
    cwd: REPO,
    env: { INIT_CWD: cwd, NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

function planJson(steps: unknown[], extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    id: "plan_cli",
    taskId: "task_cli",
    version: 1,
    createdAt: "2025-01-01T00:00:00Z",
    ...extra,
    steps,
  });
}

const readPlan = async (file: string): Promise<Plan> => JSON.parse(await Deno.readTextFile(file));
const noStack = (r: Result) =>
  assert.doesNotMatch(r.stderr, /\n\s+at /, `no stack trace:\n${r.stderr}`);

Deno.test("run-plan --yes: shows the review, runs, writes files and saves statuses and results", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "config.json"), '{"version":"1.0.0"}');
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planJson([
      {
        id: "step_1",
        description: "Read config.json",
        tool: "read_file",
        args: { path: "config.json" },
      },
      {
        id: "step_2",
        description: "Create backup",
        tool: "write_file",
        args: { path: "backup/config.json", content: "$step_1" },
        dependsOn: ["step_1"],
      },
      {
        id: "step_3",
        description: "Update version",
        tool: "write_file",
        args: { path: "config.json", content: '{"version":"2.0.0"}' },
        dependsOn: ["step_2"],
      },
    ], { task: "Bump the version" }),
  );
  const r = await runPlan(["plan.json", "--yes"], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /│ Plan Review — Bump the version \(v1\)/);
  assert.match(r.stdout, /☐ 1\. Read config\.json/);
  assert.match(
    r.stdout,
    /Requires approval ⚠ \(write_file would overwrite the existing file "config\.json"\)/,
  );
  assert.match(r.stdout, /Plan completed: 3 completed, 0 failed, 0 skipped, 0 blocked, 0 pending/);
  assert.match(r.stderr, /\] step step_1 #1 started \("Read config\.json", read_file\)\n/);
  assert.match(r.stderr, /\] step step_3 #1 · approved automatically \(write_file would overwrite/);
  assert.match(r.stderr, /\] step step_3 #1 completed in \d+ ms → \{"path":"config\.json"/);
  assert.match(r.stderr, /\] run completed\n$/);
  assert.equal(await Deno.readTextFile(join(dir, "backup/config.json")), '{"version":"1.0.0"}');
  assert.equal(await Deno.readTextFile(join(dir, "config.json")), '{"version":"2.0.0"}');
  const saved = await readPlan(join(dir, "plan.json"));
  assert.deepEqual(saved.steps.map((s) => s.status), ["completed", "completed", "completed"]);
  assert.equal(saved.steps[0].result?.value, '{"version":"1.0.0"}');
  // Running again has nothing left to do.
  const again = await runPlan(["plan.json", "--yes"], dir);
  assert.equal(again.code, 0);
  assert.match(again.stderr, /Nothing to run: every step has completed/);
});

Deno.test("run-plan: an invalid plan lists every problem and exits 2 without a stack trace", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    join(dir, "bad.json"),
    planJson([
      { id: "a", description: "A", tool: "delete_everything", args: {} },
      { id: "b", description: "B", tool: "read_file", args: { path: 1 }, dependsOn: ["c"] },
      { id: "c", description: "C", tool: "read_file", args: { path: "x" }, dependsOn: ["b"] },
    ]),
  );
  const r = await runPlan(["bad.json", "--yes"], dir);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /bad\.json: the plan has 3 problems:/);
  assert.match(r.stderr, /Step "a": Unknown tool: delete_everything/);
  assert.match(r.stderr, /Step "b": Invalid args for read_file at args\.path/);
  assert.match(r.stderr, /Plan contains circular dependencies: b → c → b/);
  noStack(r);

  // A misspelt key, a misspelt tool and an unknown reference: all three at once, each with the
  // name that was meant.
  await Deno.writeTextFile(
    join(dir, "typos.json"),
    planJson([
      { id: "a", description: "A", tool: "read_flie", args: { path: "x" }, depends_on: [] },
      { id: "b", description: "B", tool: "read_file", args: { path: "$nope.text" } },
    ]),
  );
  const typos = await runPlan(["typos.json", "--yes"], dir);
  assert.equal(typos.code, 2);
  assert.match(typos.stderr, /typos\.json: the plan has 3 problems:/);
  assert.match(typos.stderr, /steps\[0\]: unknown key "depends_on" \(did you mean "dependsOn"\?\)/);
  assert.match(typos.stderr, /Step "a": Unknown tool: read_flie\. Did you mean "read_file"\?/);
  assert.match(typos.stderr, /Step "b": args\.path references unknown step "nope"/);
  noStack(typos);

  await Deno.writeTextFile(join(dir, "broken.json"), '{\n  "id": "x",\n  oops\n}');
  const broken = await runPlan(["broken.json"], dir);
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, /broken\.json:3:3: not valid JSON/);
  noStack(broken);

  const missing = await runPlan(["nope.json"], dir);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /Cannot read plan file .*nope\.json: no such file/);

  const usage = await runPlan(["--frobnicate"], dir);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /Unknown option --frobnicate\..*--help/);
  noStack(usage);
});

Deno.test("deno task run-plan (subprocess smoke test): stdout, stderr and exit codes of the real process", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planJson([{ id: "a", description: "Read", tool: "read_file", args: { path: "in.txt" } }]),
  );
  await Deno.writeTextFile(join(dir, "in.txt"), "hello");
  const r = await runPlanTask(["plan.json", "--yes"], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^│ Plan Review — plan_cli \(v1\)/m);
  assert.match(r.stdout, /^Plan completed: 1 completed, 0 failed/m);
  assert.match(r.stderr, /^\[\d\d:\d\d\.\d{3}\] step a #1 completed in \d+ ms → "hello"$/m);
  const usage = await runPlanTask(["--frobnicate"], dir);
  assert.deepEqual([usage.code, usage.stdout], [2, ""]);
  assert.equal(
    usage.stderr,
    "run-plan: Unknown option --frobnicate. Run with --help to see every option.\n",
  );
});

Deno.test("run-plan without a terminal needs --yes or --approve; --approve approves only those tools", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "old.txt"), "old");
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planJson([
      { id: "cmd", description: "List files", tool: "run_command", args: { command: "ls" } },
      {
        id: "after_cmd",
        description: "After",
        tool: "read_file",
        args: { path: "old.txt" },
        dependsOn: ["cmd"],
      },
      {
        id: "over",
        description: "Overwrite",
        tool: "write_file",
        args: { path: "old.txt", content: "new" },
      },
    ]),
  );
  const refused = await runPlan(["plan.json", "--enable-commands"], dir);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /Not starting: stdin is not a terminal.*--yes.*--approve/);

  const r = await runPlan(["plan.json", "--enable-commands", "--approve", "write_file"], dir);
  assert.equal(r.code, 3, r.stderr); // incomplete: cmd was not approved
  assert.match(r.stdout, /Plan incomplete: 1 completed, 0 failed, 2 skipped/);
  const saved = await readPlan(join(dir, "plan.json"));
  assert.deepEqual(saved.steps.map((s) => [s.id, s.status]), [["cmd", "skipped"], [
    "after_cmd",
    "skipped",
  ], ["over", "completed"]]);
  assert.match(
    saved.steps[0].result!.error!,
    /User denied approval \(needs approval: run_command always needs approval; .*--approve run_command\)/,
  );
  assert.equal(await Deno.readTextFile(join(dir, "old.txt")), "new");
  // run_command is unknown unless enabled.
  const off = await runPlan(["plan.json", "--restart", "--yes"], dir);
  assert.equal(off.code, 2);
  assert.match(off.stderr, /Step "cmd": Unknown tool: run_command/);
});

Deno.test("run-plan --generate plans with the scripted backend, writes the plan, and runs it", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "notes.txt"), "hello");
  await Deno.writeTextFile(
    join(dir, "answers.yaml"),
    `
plan.generate:
  - output:
      steps:
        - id: read
          description: Read the notes
          tool: read_file
          args: { path: notes.txt }
        - id: copy
          description: Copy them
          tool: write_file
          args: { path: copy.txt, content: "Notes: \${read}" }
          dependsOn: [read]
`,
  );
  const r = await runPlan([
    "--generate",
    "Copy my notes",
    "out.json",
    "--script",
    "answers.yaml",
    "--yes",
  ], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Plan written to .*out\.json \(2 steps\)/);
  assert.match(r.stdout, /Plan Review — Copy my notes/);
  assert.equal(await Deno.readTextFile(join(dir, "copy.txt")), "Notes: hello");
  const saved = await readPlan(join(dir, "out.json"));
  assert.equal(saved.task, "Copy my notes");
  assert.deepEqual(saved.steps.map((s) => s.status), ["completed", "completed"]);
  // The plan file is not replaced without --force.
  const again = await runPlan(["--generate", "Other", "out.json", "--script", "answers.yaml"], dir);
  assert.equal(again.code, 2);
  assert.match(again.stderr, /out\.json exists already\. Pass --force/);
  const noBackend = await runPlan(["--generate", "Other", "new.json"], dir);
  assert.equal(noBackend.code, 2);
  assert.match(noBackend.stderr, /needs an LLM.*--backend NAME.*--script FILE/);
});

Deno.test('run-plan: onError "recover" asks the scripted backend (key plan.recover)', async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "data.txt"), "data");
  await Deno.writeTextFile(
    join(dir, "answers.json"),
    JSON.stringify({
      "plan.recover": [{
        output: { action: "retry", args: { path: "data.txt" }, reason: "the file is data.txt" },
      }],
    }),
  );
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planJson([
      {
        id: "read",
        description: "Read the data",
        tool: "read_file",
        args: { path: "dta.txt" },
        onError: "recover",
      },
    ]),
  );
  const missing = await runPlan(["plan.json", "--yes"], dir);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /needs an LLM/);
  const r = await runPlan(["plan.json", "--yes", "--script", "answers.json"], dir);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /recovery: retry with new args: the file is data\.txt/);
  const saved = await readPlan(join(dir, "plan.json"));
  assert.equal(saved.version, 2);
  assert.deepEqual(saved.steps[0].args, { path: "data.txt" });
  assert.equal(saved.steps[0].result?.value, "data");
});

Deno.test("run-plan: a step that escapes the workspace fails; the summary says how to continue", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(join(dir, "ws"));
  await Deno.writeTextFile(join(dir, "secret.txt"), "secret");
  await Deno.writeTextFile(
    join(dir, "ws", "plan.json"),
    planJson([
      {
        id: "peek",
        description: "Peek outside",
        tool: "read_file",
        args: { path: "../secret.txt" },
      },
    ]),
  );
  const r = await runPlan(["plan.json", "--yes", "--json"], join(dir, "ws"));
  assert.equal(r.code, 1);
  const summary = JSON.parse(r.stdout);
  assert.equal(summary.status, "failed");
  assert.match(
    summary.plan.steps[0].result.error,
    /Refused path "\.\.\/secret\.txt": it leaves the workspace/,
  );
  assert.match(r.stderr, /Plan Review/, "with --json the review goes to stderr");
});

Deno.test("run-plan: a killed run continues where it stopped", async () => {
  const dir = await Deno.makeTempDir();
  let hits = 0;
  let release = () => {};
  const hanging = new Promise<void>((r) => (release = r));
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async () => {
    hits++;
    // The first request hangs until the process is killed; later ones answer at once.
    if (hits === 1) await hanging;
    return Response.json({ ok: true });
  });
  try {
    await Deno.writeTextFile(
      join(dir, "plan.json"),
      planJson([
        {
          id: "log",
          description: "Append to the log",
          tool: "write_file",
          args: { path: "log.txt", content: "ran\n", append: true },
        },
        {
          id: "fetch",
          description: "Fetch",
          tool: "http_get",
          args: { url: `http://127.0.0.1:${server.addr.port}/` },
          dependsOn: ["log"],
        },
        {
          id: "save",
          description: "Save",
          tool: "write_file",
          args: { path: "out.json", content: "$fetch.body" },
          dependsOn: ["fetch"],
        },
      ]),
    );
    // The CLI itself, not `deno task`: killing the task runner would leave its child running.
    const child = spawnCli("run-plan", ["plan.json", "--yes", "--enable-http"], {
      userDir: dir,
      stdout: "null",
      stderr: "null",
    });
    // Wait until the first step is saved as completed and the request is in flight, then kill.
    const deadline = Date.now() + 15_000;
    for (;;) {
      const plan = await readPlan(join(dir, "plan.json")).catch(() => undefined);
      if (plan?.steps[0].status === "completed" && hits >= 1) break;
      if (Date.now() > deadline) throw new Error("the run never reached the second step");
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill("SIGKILL");
    await child.status;
    const killed = await readPlan(join(dir, "plan.json")); // still valid JSON: writes are atomic
    assert.equal(killed.steps[0].status, "completed");
    assert.notEqual(killed.steps[2].status, "completed");

    const r = await runPlan(["plan.json", "--yes", "--enable-http"], dir);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /Continuing: 1 of 3 steps completed in an earlier run/);
    assert.equal(
      await Deno.readTextFile(join(dir, "log.txt")),
      "ran\n",
      "the completed step did not run again",
    );
    assert.equal(await Deno.readTextFile(join(dir, "out.json")), '{\n  "ok": true\n}\n');
    const saved = await readPlan(join(dir, "plan.json"));
    assert.deepEqual(saved.steps.map((s) => s.status), ["completed", "completed", "completed"]);
  } finally {
    release();
    await server.shutdown();
  }
});

Deno.test("run-plan on a terminal asks to start and asks for each approval (in-process)", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "a.txt"), "old a");
  await Deno.writeTextFile(join(dir, "b.txt"), "old b");
  await Deno.writeTextFile(
    join(dir, "plan.json"),
    planJson([
      {
        id: "wa",
        description: "Overwrite a",
        tool: "write_file",
        args: { path: "a.txt", content: "new a" },
      },
      {
        id: "wb",
        description: "Overwrite b",
        tool: "write_file",
        args: { path: "b.txt", content: "new b" },
        dependsOn: ["wa"],
      },
      {
        id: "after_b",
        description: "After b",
        tool: "read_file",
        args: { path: "b.txt" },
        dependsOn: ["wb"],
      },
    ]),
  );
  let stdout = "";
  let stderr = "";
  const answers = ["y", "y", "n"].map((a) => `${a}\n`).join("");
  const code = await main(["plan.json"], {
    cwd: dir,
    env: {},
    isTerminal: { stdin: true, stdout: false, stderr: false },
    stdin: ReadableStream.from([new TextEncoder().encode(answers)]),
    stdout: { write: (t) => void (stdout += t) },
    stderr: { write: (t) => void (stderr += t) },
  });
  assert.equal(code, 3, stderr); // incomplete: steps did not run for want of approval
  assert.match(
    stderr,
    /Start execution\? \[y\]es \/ \[N\]o \/ \[r\]evise the plan with feedback: /,
  );
  assert.match(
    stderr,
    /Approve step "wa" \(Overwrite a\)\?\n {2}write_file \{ path: "a\.txt", content: "new a" \}\n {2}Reason: write_file would overwrite the existing file "a\.txt"/,
  );
  assert.match(stderr, /Approve step "wb"/);
  assert.equal(await Deno.readTextFile(join(dir, "a.txt")), "new a");
  assert.equal(await Deno.readTextFile(join(dir, "b.txt")), "old b");
  const saved = await readPlan(join(dir, "plan.json"));
  assert.deepEqual(saved.steps.map((s) => s.status), ["completed", "skipped", "skipped"]);
  assert.equal(saved.steps[1].result?.error, "User denied approval (denied at the prompt)");
  assert.match(stdout, /Plan incomplete: 1 completed, 0 failed, 2 skipped/);
  assert.match(stdout, /2 step\(s\) did not run because approval was not given \(wb, after_b\)/);

  // Declining the start runs nothing.
  let err2 = "";
  const declined = await main(["plan.json", "--restart"], {
    cwd: dir,
    env: {},
    isTerminal: { stdin: true, stdout: false, stderr: false },
    stdin: ReadableStream.from([new TextEncoder().encode("n\n")]),
    stdout: { write: () => {} },
    stderr: { write: (t) => void (err2 += t) },
  });
  assert.equal(declined, 0);
  assert.match(err2, /Not started; nothing ran\./);
});
