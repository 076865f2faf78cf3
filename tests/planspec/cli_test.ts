import assert from "node:assert/strict";
import { stepflowCommand } from "../../src/invocation.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { planMain } from "../../src/cli/plan.ts";
import { readHistory } from "../../src/planspec/mod.ts";
import { finish, readUntil, runMain, spawnCli } from "../cli/helpers.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `plan …` in-process, as `deno task plan` from `cwd` would run it. */
function plan(cwd: string, ...args: string[]): Promise<Run> {
  return runMain(planMain, args, { userDir: cwd });
}

/** The real `deno task plan` in a subprocess (the smoke test). */
async function planTask(cwd: string, ...args: string[]): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "plan", ...args],
    cwd: ROOT,
    env: { INIT_CWD: cwd, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeTextFile(path, text);
}

const GENERATED = `Sure, here is the plan.

\`\`\`markdown
# Plan: Release Checklist
Goal: Ship version 1.2 of the library
Constraints:
- no breaking changes
## Steps
1. [reason] List the changes since 1.1 from the commits → changes
2. [act] Write the release notes → notes
  > ← changes
\`\`\`

Let me know if you want changes.
`;

Deno.test("plan new: generates through the backend, writes planspec/<snake_name>.md, never overwrites", async () => {
  const dir = await Deno.makeTempDir();
  await write(join(dir, "gen.yaml"), `planspec.generate:\n  - ${JSON.stringify(GENERATED)}\n`);
  const first = await plan(dir, "new", "Ship", "release", "1.2", "--script", "gen.yaml");
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.stdout, "Created planspec/release_checklist.md (2 steps)\n");
  assert.equal(
    await Deno.readTextFile(join(dir, "planspec", "release_checklist.md")),
    `# Plan: Release Checklist
Goal: Ship version 1.2 of the library
Constraints:
- no breaking changes
## Steps
1. [reason] List the changes since 1.1 from the commits → changes
2. [act] Write the release notes → notes
  > ← changes
`,
  );
  const second = await plan(dir, "new", "Ship release 1.2", "--script", "gen.yaml", "--print");
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /═══ PlanSpec: Release Checklist ═══/);
  assert.match(second.stdout, /Created planspec\/release_checklist_2\.md \(2 steps\)\n$/);
  const named = await plan(dir, "new", "x", "--script", "gen.yaml", "--name", "my_release");
  assert.equal(named.stdout, "Created planspec/my_release.md (2 steps)\n");
});

Deno.test("plan new: an invalid plan is re-asked once with the errors, then rejected and saved", async () => {
  const dir = await Deno.makeTempDir();
  await write(
    join(dir, "gen.yaml"),
    `planspec.generate:\n  - "Goal: g\\n1. [think] Ponder\\n"\n  - "# Plan: Still bad\\n1. [act] No goal\\n"\n`,
  );
  const run = await plan(dir, "new", "Do the thing", "--script", "gen.yaml");
  assert.equal(run.code, 1);
  assert.match(run.stderr, /The generated plan is invalid after a re-ask:\n {2}- plan has no goal/);
  assert.match(run.stderr, /The last answer is saved in planspec\/do_the_thing\.rejected\.txt/);
  assert.equal(
    await Deno.readTextFile(join(dir, "planspec", "do_the_thing.rejected.txt")),
    "# Plan: Still bad\n1. [act] No goal\n",
  );
  const fixed = join(dir, "fixed.yaml");
  await write(
    fixed,
    `planspec.generate:\n  - "Goal: g\\n1. [think] Ponder\\n"\n  - "Goal: g\\n1. [reason] Ponder → idea\\n"\n`,
  );
  const ok = await plan(dir, "new", "Do the thing", "--script", "fixed.yaml");
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stderr, /re-asked once/);
  assert.equal(ok.stdout, "Created planspec/do_the_thing.md (1 steps)\n");
});

const SHOWN = `# Plan: Demo
Goal: Show the tree
Constraints:
- keep it short
## Steps
1. [x] [act] Load the data → raw | 10 rows
  > from disk
2. [>] [subtask] Clean the data → cleaned | Progress: 1/2
  > strict rules
  2.1. [x] [reason] Profile → profile | ok
  2.2. [>] [act] Apply the rules → cleaned
    > ← raw, profile
3. [decide] Is it good?
  3.1. [act] Yes → publish
  3.2. [act] No → report
`;

Deno.test("plan show: /showplan rendering with folding, flags, and the name lookup order", async () => {
  const dir = await Deno.makeTempDir();
  await write(join(dir, "planspec", "demo.md"), SHOWN);
  const run = await plan(dir, "show", "demo");
  assert.equal(run.code, 0, run.stderr);
  assert.equal(
    run.stdout,
    `═══ PlanSpec: Demo ═══

Goal: Show the tree

Constraints:
  - keep it short

Progress: 2/7 (28%)

1  [x]  [ACT]      Load the data → raw | 10 rows
2  [>]  [SUBTASK]  Clean the data → cleaned | Progress: 1/2
                   > strict rules
├─ 2.1  [x]  [REASON]   Profile → profile | ok
└─ 2.2  [>]  [ACT]      Apply the rules → cleaned
                        > ← raw, profile
3  [ ]  [DECIDE]   Is it good?
├─ 3.1  [ ]  [ACT]      Yes → publish
└─ 3.2  [ ]  [ACT]      No → report

───
Steps: 7 | reason: 1 | act: 4 | decide: 1 | subtask: 1
Progress: 2/7 (28%) | active: 2
`,
  );
  const flags = await plan(dir, "show", "demo", "--expand", "1", "--collapse", "2");
  assert.match(flags.stdout, /^ {19}> from disk$/m);
  assert.doesNotMatch(flags.stdout, /2\.1/);
  const full = await plan(dir, "show", "demo", "--full");
  assert.match(full.stdout, /> from disk/);
  const color = await plan(dir, "show", "demo", "--color");
  assert.ok(color.stdout.includes("\x1b["), "--color forces ANSI colours");
  // Tasks/<name>/plan.md and plain paths.
  await write(join(dir, "Tasks", "auth", "plan.md"), "Goal: task plan\n1. [act] A\n");
  assert.match((await plan(dir, "show", "auth")).stdout, /Goal: task plan/);
  await write(join(dir, "elsewhere", "p.md"), "Goal: by path\n1. [act] A\n");
  assert.match((await plan(dir, "show", "elsewhere/p.md")).stdout, /Goal: by path/);
  const missing = await plan(dir, "show", "nope");
  assert.equal(missing.code, 2);
  assert.match(
    missing.stderr,
    /error: No plan "nope": looked for .*planspec\/nope\.md, .*Tasks\/nope\/plan\.md, .*nope/,
  );
  const badId = await plan(dir, "show", "demo", "--expand", "9");
  assert.equal(badId.code, 2);
  assert.match(badId.stderr, /--expand 9: step 9 not found/);
});

Deno.test("plan show/list: a finished plan whose untaken decide branch was skipped reads as complete", async () => {
  const dir = await Deno.makeTempDir();
  await write(
    join(dir, "planspec", "decided.md"),
    "# Plan: Decided\nGoal: g\n1. [x] [act] Load\n2. [x] [decide] Good?\n   2.1. [x] [act] Yes → publish\n   2.2. [~] [act] No → report\n3. [x] [act] Tell\n",
  );
  const list = await plan(dir, "list");
  assert.equal(list.code, 0, list.stderr);
  assert.equal(list.stdout.split("\n")[0], "decided  5/5 (100%)      complete     Decided");
  const show = await plan(dir, "show", "decided");
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /^Progress: 5\/5 \(100%\)$/m);
  assert.match(show.stdout, /^Progress: 5\/5 \(100%\) \| skipped: 1$/m);
});

Deno.test("plan list: overview of planspec/, invalid files flagged, empty folder explained", async () => {
  const dir = await Deno.makeTempDir();
  const empty = await plan(dir, "list");
  assert.equal(empty.code, 0);
  assert.ok(
    empty.stdout.startsWith(
      `No plans in planspec/. Create one with: ${stepflowCommand("plan", dir)} new`,
    ),
    empty.stdout,
  );
  await write(join(dir, "planspec", "demo.md"), SHOWN);
  await write(join(dir, "planspec", "done_one.md"), "# Plan: Finished\nGoal: g\n1. [x] [act] A\n");
  await write(join(dir, "planspec", "broken.md"), "Goal: g\n1. nothing\n");
  await write(join(dir, "planspec", "notes.txt"), "not a plan");
  const run = await plan(dir, "list");
  assert.equal(run.code, 0, run.stderr);
  const lines = run.stdout.trimEnd().split("\n");
  assert.match(lines[0], /^broken {4}\(invalid\) .*broken\.md: line 2: step 1 has no \[type\]/);
  assert.equal(lines[1], "demo      2/7 (28%)       in progress  Demo");
  assert.equal(lines[2], "          Goal: Show the tree");
  assert.equal(lines[3], "done_one  1/1 (100%)      complete     Finished");
  assert.equal(lines.length, 5);
});

Deno.test("plan archive: refuses unfinished plans unless --force, moves the history, never overwrites", async () => {
  const dir = await Deno.makeTempDir();
  await write(join(dir, "planspec", "demo.md"), SHOWN);
  await write(join(dir, "planspec", "demo.history.jsonl"), "{}\n");
  const refused = await plan(dir, "archive", "demo");
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /Plan demo is not complete \(2\/7 done, 3 pending, 2 active, 0 blocked\).*--force/,
  );
  const forced = await plan(dir, "archive", "demo", "--force");
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(forced.stdout, "Archived demo → planspec/archive/demo.md\n");
  assert.equal(await Deno.readTextFile(join(dir, "planspec", "archive", "demo.md")), SHOWN);
  assert.equal(
    await Deno.readTextFile(join(dir, "planspec", "archive", "demo.history.jsonl")),
    "{}\n",
  );
  await assert.rejects(() => Deno.stat(join(dir, "planspec", "demo.md")), Deno.errors.NotFound);
  await write(join(dir, "planspec", "demo.md"), "Goal: g\n1. [x] [act] A\n");
  const clash = await plan(dir, "archive", "demo");
  assert.equal(clash.code, 1);
  assert.match(clash.stderr, /archive\/demo\.md already exists/);
  const listed = await plan(dir, "list", "--archive");
  assert.match(listed.stdout, /^demo {2}2\/7 \(28%\)/);
  const traversal = await plan(dir, "archive", "../demo");
  assert.equal(traversal.code, 2);
});

Deno.test("deno task plan (subprocess smoke test): stdout, stderr and exit codes of the real process", async () => {
  const dir = await Deno.makeTempDir();
  await write(join(dir, "bad.md"), "1. [LLM] Ask\n  1.1. [act] x\n");
  const bad = await planTask(dir, "validate", "bad.md");
  assert.deepEqual([bad.code, bad.stderr], [1, ""]);
  assert.match(bad.stdout, /^bad\.md: error: step 1: invalid type 'LLM'\n/);
  const usage = await planTask(dir, "list", "--bogus");
  assert.deepEqual([usage.code, usage.stdout], [2, ""]);
  assert.equal(usage.stderr, "error: plan list: Unknown option --bogus. (see plan --help)\n");
});

Deno.test("plan validate: ok, warnings, rule errors and parse errors with file:line", async () => {
  const dir = await Deno.makeTempDir();
  await write(join(dir, "good.md"), SHOWN);
  await write(join(dir, "warn.md"), "Goal: g\n1. [subtask] Nothing inside\n");
  await write(join(dir, "bad.md"), "1. [LLM] Ask\n  1.1. [act] x\n");
  await write(join(dir, "broken.md"), "Goal: g\n## Steps\n1. [act] A\n3. [act] C\n");
  const good = await plan(dir, "validate", "good.md");
  assert.deepEqual([good.code, good.stdout], [0, "good.md: ok (7 steps, 0 warning(s))\n"]);
  const warn = await plan(dir, "validate", "warn.md");
  assert.equal(warn.code, 0);
  assert.equal(
    warn.stdout,
    "warn.md: warning: step 1: type 'subtask' has no children\nwarn.md: ok (1 steps, 1 warning(s))\n",
  );
  const bad = await plan(dir, "validate", "bad.md");
  assert.equal(bad.code, 1);
  assert.equal(
    bad.stdout,
    "bad.md: error: step 1: invalid type 'LLM'\nbad.md: error: plan has no goal\nbad.md: 2 error(s), 0 warning(s)\n",
  );
  const broken = await plan(dir, "validate", "broken.md");
  assert.equal(broken.code, 1);
  assert.equal(
    broken.stdout,
    'broken.md:4: error: step 3 is out of sequence: expected 2 (the k-th child of step P is numbered P.k): "3. [act] C"\n',
  );
});

Deno.test("plan: usage errors exit 2 with a hint", async () => {
  const dir = await Deno.makeTempDir();
  const unknown = await plan(dir, "frobnicate");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /Unknown command "frobnicate"/);
  const flag = await plan(dir, "list", "--bogus");
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /plan list: .*bogus/);
  const noDesc = await plan(dir, "new", "--script", "x.yaml");
  assert.equal(noDesc.code, 2);
  assert.match(noDesc.stderr, /plan new needs a task description/);
  const noScript = await plan(dir, "new", "x", "--backend", "scripted");
  assert.equal(noScript.code, 2);
  const help = await plan(dir, "--help");
  assert.equal(help.code, 0);
  assert.match(help.stdout, /planspec\.step\.<id>/);
  const badRounds = await plan(dir, "run", "x", "--max-rounds", "0");
  assert.equal(badRounds.code, 2);
});

const RUN_PLAN = `# Plan: Pipeline
Goal: Produce the weekly numbers
## Steps
1. [act] Download the raw numbers → raw
2. [reason] Check the numbers for gaps → check
  > ← raw
3. [act] Publish the numbers → published
  > ← raw, check
`;

Deno.test("plan run: scripted backend, summary on stdout, progress on stderr, --json", async () => {
  const dir = await Deno.makeTempDir();
  await write(join(dir, "planspec", "pipeline.md"), RUN_PLAN);
  await write(
    join(dir, "run.yaml"),
    `planspec.step.1:
  - output: {status: OK, result: 120 rows, outputs: {raw: [1, 2]}}
planspec.step.2:
  - output: {status: UNCERTAIN, result: one week looks odd, outputs: {check: odd}}
planspec.reflect.2:
  - output: {decision: ACCEPT, reason: publishing is not sensitive to it}
planspec.step.3:
  - output: {status: OK, result: published, outputs: {published: true}}
`,
  );
  const run = await plan(dir, "run", "pipeline", "--script", "run.yaml");
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stdout,
    /Run completed: 3\/3 done, 0 skipped, 0 blocked after 1 round\(s\), 3 step execution\(s\)/,
  );
  assert.match(
    run.stderr,
    new RegExp(
      [
        String.raw`\] step 2 #1 started \("Check the numbers for gaps", reason\)\n`,
        String.raw`\[\d\d:\d\d\.\d{3}\] step 2 #1 UNCERTAIN in \d+ ms: one week looks odd\n`,
        String.raw`\[\d\d:\d\d\.\d{3}\] · step 2: UNCERTAIN → ACCEPT`,
      ].join(""),
    ),
  );
  assert.match(
    await Deno.readTextFile(join(dir, "planspec", "pipeline.md")),
    /2\. \[x\] \[reason\] Check the numbers for gaps → check \| one week looks odd/,
  );
  await write(join(dir, "planspec", "again.md"), RUN_PLAN);
  await write(
    join(dir, "blocked.yaml"),
    `planspec.step.1:\n  - output: {status: FAIL, result: server down}\nplanspec.reflect.1:\n  - output: {decision: PLAN_CMD, reason: give up, commands: "nothing useful"}\nplanspec.replan:\n  - no idea\n`,
  );
  const json = await plan(dir, "run", "again", "--script", "blocked.yaml", "--json");
  assert.equal(json.code, 1);
  assert.equal(json.stderr, "");
  const result = JSON.parse(json.stdout);
  assert.equal(result.status, "blocked");
  assert.deepEqual(result.blocked, [
    { stepId: "1", result: "FAIL: server down (reflection gave no usable PLAN_CMD)" },
    { stepId: "2", result: "missing input raw (step 1 is blocked)" },
    { stepId: "3", result: "missing input raw (step 1 is blocked), check (step 2 is blocked)" },
  ]);
});

Deno.test("plan run: SIGTERM stops the run like Ctrl-C, exit 143 (the plan file is kept)", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "planspec", "pipeline.md");
  await write(file, RUN_PLAN);
  await write(
    join(dir, "slow.yaml"),
    `planspec.step.1:
  - {output: {status: OK, result: never seen, outputs: {raw: [1]}}, delayMs: 60000}
`,
  );
  const child = spawnCli("plan", ["run", "pipeline", "--script", "slow.yaml"], { userDir: dir });
  const reader = child.stderr.getReader();
  const sink = { text: "" };
  await readUntil(reader, sink, "step 1 #1 started");
  child.kill("SIGTERM");
  await readUntil(reader, sink);
  reader.releaseLock();
  const out = await finish(child);
  assert.equal(out.code, 143, sink.text);
  assert.match(sink.text, /SIGTERM: interrupted: stopping after the current call/);
  assert.match(await Deno.readTextFile(file), /# Plan: Pipeline/);
});

Deno.test("plan run: a killed run continues where it stopped", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "planspec", "pipeline.md");
  await write(file, RUN_PLAN);
  await write(
    join(dir, "first.yaml"),
    `planspec.step.1:
  - output: {status: OK, result: 120 rows, outputs: {raw: [1, 2]}}
planspec.step.2:
  - {output: {status: OK, result: never seen, outputs: {check: x}}, delayMs: 60000}
`,
  );
  const child = spawnCli("plan", ["run", "pipeline", "--script", "first.yaml"], {
    userDir: dir,
    stdout: "null",
    stderr: "null",
  });
  const deadline = Date.now() + 30_000;
  let text = "";
  while (Date.now() < deadline) {
    text = await Deno.readTextFile(file);
    if (text.includes("2. [>] [reason]")) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.match(
    text,
    /1\. \[x\] \[act\] Download the raw numbers → raw \| 120 rows\n2\. \[>\] \[reason\]/,
  );
  child.kill("SIGKILL");
  await child.status;
  // The lock of the killed run is stale; the second run takes it over and skips step 1.
  await Deno.stat(`${file}.lock`);
  await write(
    join(dir, "second.yaml"),
    `planspec.step.2:
  - output: {status: OK, result: no gaps, outputs: {check: fine}}
planspec.step.3:
  - output: {status: OK, result: published, outputs: {published: true}}
`,
  );
  const second = await plan(dir, "run", "pipeline", "--script", "second.yaml");
  assert.equal(second.code, 0, second.stderr + second.stdout);
  assert.match(second.stderr, /continuing the interrupted run at round 1/);
  assert.equal(
    await Deno.readTextFile(file),
    `# Plan: Pipeline
Goal: Produce the weekly numbers
## Steps
1. [x] [act] Download the raw numbers → raw | 120 rows
2. [x] [reason] Check the numbers for gaps → check | no gaps
  > ← raw
3. [x] [act] Publish the numbers → published | published
  > ← raw, check
`,
  );
  const history = await readHistory(join(dir, "planspec", "pipeline.history.jsonl"));
  assert.deepEqual(
    history.filter((e) => e.kind === "step").map((e) => `${e.stepId}:${e.status}`),
    ["1:OK", "2:OK", "3:OK"],
  );
  await assert.rejects(() => Deno.stat(`${file}.lock`), Deno.errors.NotFound);
});

Deno.test("planMain on a terminal: plan new confirms first, plan run --interactive asks the user", async () => {
  const dir = await Deno.makeTempDir();
  let stdout = "";
  let stderr = "";
  const questions: string[] = [];
  let answer = "n";
  const io = {
    cwd: dir,
    stdout: { write: (t: string) => void (stdout += t) },
    stderr: { write: (t: string) => void (stderr += t) },
    isTerminal: { stdin: true, stdout: false, stderr: false },
    ask: (q: string) => {
      questions.push(q);
      return answer;
    },
  };
  await write(join(dir, "gen.yaml"), `planspec.generate:\n  - ${JSON.stringify(GENERATED)}\n`);
  assert.equal(await planMain(["new", "Ship 1.2", "--script", "gen.yaml"], io), 1);
  assert.match(questions[0], /^Generate a plan for "Ship 1\.2" with scripted\? \[Y\/n\]$/);
  assert.match(stderr, /Cancelled: no plan was generated/);
  answer = "";
  assert.equal(await planMain(["new", "Ship 1.2", "--script", "gen.yaml"], io), 0);
  assert.match(stdout, /Created planspec\/release_checklist\.md/);

  await write(
    join(dir, "planspec", "trip.md"),
    "Goal: Book a trip\n## Steps\n1. [act] Book the flight → booking\n",
  );
  await write(
    join(dir, "trip.yaml"),
    `planspec.step.1:
  - output: {status: LACK_OF_INFO, result: dates unknown}
  - output: {status: OK, result: booked, outputs: {booking: XK12}}
planspec.reflect.1:
  - output: {decision: INTERACT, reason: only the user knows, question: Which dates?}
`,
  );
  answer = "May 3 to 7";
  questions.length = 0;
  assert.equal(await planMain(["run", "trip", "--script", "trip.yaml", "--interactive"], io), 0);
  assert.deepEqual(questions, ["? Which dates?\n>"]);
  assert.match(stdout, /Run completed: 1\/1 done/);
});
