/**
 * Operating-system situations × every CLI: a read-only or unreadable run folder, `planspec/` or
 * `plans/` folder, a workspace that is a link loop, unreadable or too long a name, a plan file name
 * too long once suffixed, an `--out` that can never be written, an unreadable source, a host that
 * cannot be bound. Each is the user's situation: exit 2 with what, where and how to fix — never
 * "a bug in stepflow" (exit 70), never a stack — and nothing partial left behind.
 *
 * File modes mean nothing to root, and the suite runs as root on CI: there each CLI runs under
 * `setpriv` without the capabilities that ignore file modes (CAP_DAC_OVERRIDE,
 * CAP_DAC_READ_SEARCH), so modes apply to it as to any user. Where that is impossible the cases
 * that need it are skipped, loudly.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type CliName, copyDir, finish, REPO_ROOT, runCli, spawnCli } from "./helpers.ts";

/** How to run a CLI so that file modes apply to it, or why that is impossible here. */
function modeHonouringWrapper(): { wrapper: string[] } | { impossible: string } {
  if (Deno.uid() !== 0) return { wrapper: [] };
  const wrapper = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"];
  try {
    const dir = Deno.makeTempDirSync({ prefix: "stepflow-mode-probe-" });
    Deno.chmodSync(dir, 0o000);
    const probe = new Deno.Command(wrapper[0], {
      args: [...wrapper.slice(1), "ls", dir],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    Deno.chmodSync(dir, 0o700);
    Deno.removeSync(dir);
    if (probe.success) return { impossible: "setpriv ran, but root still read a mode-000 folder" };
    return { wrapper };
  } catch (error) {
    return { impossible: `setpriv is not usable here (${(error as Error).message})` };
  }
}

const MODES = modeHonouringWrapper();
if ("impossible" in MODES) {
  console.warn(
    `\n!!! SKIPPED: the file-mode cases of os_errors_test.ts: this test runs as root and ${MODES.impossible}. Install util-linux's setpriv, or run the suite as a normal user.\n`,
  );
}

const PLANSPEC = `# Plan: A
Goal: g
## Steps
1. [act] Do it → out
`;
const SCRIPT = `planspec.step.1:\n  - output: {status: OK, result: done, outputs: {out: yes}}\n`;
const TOOL_PLAN = JSON.stringify({
  id: "plan_t",
  taskId: "t",
  version: 1,
  createdAt: "2025-01-01T00:00:00Z",
  steps: [{ id: "r", description: "list", tool: "list_dir", args: { path: "." } }],
});
const LONG = "x".repeat(250);
const LONG_SPEC = "y".repeat(244);

/** A user folder with an agent and one run of it, PlanSpec and tool plans, a climpt source. */
async function project(): Promise<{ dir: string; runId: string }> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-os-errors-" });
  await copyDir(join(REPO_ROOT, ".agent", "issue-solver"), join(dir, ".agent", "issue-solver"));
  await Deno.writeTextFile(
    join(dir, "answers.yaml"),
    (await Deno.readTextFile(join(REPO_ROOT, ".agent/issue-solver/demo.script.yaml")))
      .replaceAll(/delayMs: \d+/g, "delayMs: 0"),
  );
  const first = await runCli(
    ["--agent", "issue-solver", "--script", "answers.yaml", "--topic", "x", "--json"],
    { userDir: dir },
  );
  assert.equal(first.code, 0, first.stderr);
  const runId = JSON.parse(first.stdout).runId;
  await Deno.mkdir(join(dir, "planspec"));
  await Deno.writeTextFile(join(dir, "planspec", "a.md"), PLANSPEC);
  await Deno.writeTextFile(join(dir, "planspec", `${LONG_SPEC}.md`), PLANSPEC);
  await Deno.writeTextFile(join(dir, "run.yaml"), SCRIPT);
  await Deno.mkdir(join(dir, "plans"));
  await Deno.writeTextFile(join(dir, "plans", "t.json"), TOOL_PLAN);
  await Deno.writeTextFile(join(dir, "plans", `${LONG}.json`), TOOL_PLAN);
  await copyDir(join(REPO_ROOT, "tests/migrate/fixtures/climpt"), join(dir, "climpt"));
  await Deno.symlink("loop2", join(dir, "loop1"));
  await Deno.symlink("loop1", join(dir, "loop2"));
  await Deno.symlink("/nonexistent/stepflow-target", join(dir, "dangling"));
  await Deno.writeTextFile(join(dir, "afile"), "");
  await Deno.mkdir(join(dir, "workspace"));
  return { dir, runId };
}

const RUNS = "tmp/logs/agents/issue-solver";

/** One situation: the folders whose mode changes, and the commands that meet it. */
interface Situation {
  name: string;
  /** `path → mode` applied before, restored after (needs {@linkcode MODES}). */
  modes?: Record<string, number>;
  /** The commands (CLI, arguments given the run id) and what stderr must say. */
  commands: { cli: CliName; args: (runId: string) => string[]; says: RegExp }[];
}

const ACCESS = /FILE_ACCESS|Cannot .*(permission denied|EACCES)/i;
const SITUATIONS: Situation[] = [
  {
    name: "read-only run folder",
    modes: { [RUNS]: 0o555 },
    commands: [
      {
        cli: "run-agent",
        args: () => ["--agent", "issue-solver", "--script", "answers.yaml", "--topic", "y"],
        says:
          /Cannot create the lock file .*tmp\/logs\/agents\/issue-solver\/.*\.lock: permission denied \(EACCES\)\. Fix: /,
      },
      {
        cli: "run-agent",
        args: (id) => ["--agent", "issue-solver", "--redrive", id, "--script", "answers.yaml"],
        says: /Cannot create the lock file .*\.lock: permission denied/,
      },
    ],
  },
  {
    name: "unreadable run folder (mode 000)",
    modes: { [RUNS]: 0o000 },
    commands: [
      {
        cli: "run-agent",
        args: () => ["--agent", "issue-solver", "--script", "answers.yaml", "--topic", "y"],
        says: /Cannot create the lock file .*: permission denied/,
      },
      {
        cli: "run-agent",
        args: (id) => ["--agent", "issue-solver", "--resume", id, "--script", "answers.yaml"],
        says: /issue-solver.*(permission denied|Permission denied)/,
      },
      {
        cli: "run-agent",
        args: () => ["--agent", "issue-solver", "--runs"],
        says: /issue-solver.*Permission denied.*Check that the run directory/,
      },
    ],
  },
  {
    name: "read-only planspec/",
    modes: { planspec: 0o555 },
    commands: [{
      cli: "plan",
      args: () => ["run", "a", "--script", "run.yaml"],
      says: /Cannot create the lock file .*planspec\/a\.md\.lock: permission denied/,
    }],
  },
  {
    name: "unreadable planspec/",
    modes: { planspec: 0o000 },
    commands: [
      { cli: "plan", args: () => ["run", "a", "--script", "run.yaml"], says: ACCESS },
      {
        cli: "plan",
        args: () => ["validate", "a"],
        says: /Cannot look for the plan .*planspec\/a\.md: permission denied/,
      },
      { cli: "plan", args: () => ["show", "a"], says: ACCESS },
    ],
  },
  {
    name: "read-only plans/",
    modes: { plans: 0o555 },
    commands: [{
      cli: "run-plan",
      args: () => ["plans/t.json", "--yes"],
      says: /Cannot create the lock file .*plans\/t\.json\.lock: permission denied/,
    }],
  },
  {
    name: "unreadable plans/",
    modes: { plans: 0o000 },
    commands: [{ cli: "run-plan", args: () => ["plans/t.json", "--yes"], says: ACCESS }],
  },
  {
    name: "unreadable workspace",
    modes: { workspace: 0o000 },
    commands: [{
      cli: "run-plan",
      args: () => ["plans/t.json", "--yes", "--workspace", "workspace"],
      says: /Cannot use the workspace .*workspace: permission denied .*\(--workspace\)/,
    }],
  },
  {
    name: "a workspace that is a symbolic-link loop or too long a name",
    commands: [
      {
        cli: "run-plan",
        args: () => ["plans/t.json", "--yes", "--workspace", "loop1"],
        says: /Cannot use the workspace .*loop1: a symbolic link loop .*\(ELOOP\)\. Fix: /,
      },
      {
        cli: "run-plan",
        args: () => ["plans/t.json", "--yes", "--workspace", "w".repeat(300)],
        says: /Cannot use the workspace .*: a name longer than the file system allows/,
      },
    ],
  },
  {
    name: "a plan file name too long once suffixed",
    commands: [
      {
        cli: "run-plan",
        args: () => [`plans/${LONG}.json`, "--yes"],
        says:
          /FILE_NAME_TOO_LONG|Cannot use .*: the file name .* is 255 bytes; .* Rename it to at most 233 bytes/,
      },
      {
        cli: "run-plan",
        args: () => [`plans/${LONG}.json`, "--dry-run"],
        says: /the file name .* Rename it to at most 233 bytes/,
      },
      {
        cli: "plan",
        args: () => ["run", LONG_SPEC, "--script", "run.yaml"],
        says: /the file name .* is 247 bytes; .* Rename it to at most 233 bytes/,
      },
    ],
  },
  {
    name: "migrate --out that can never be written, or an unreadable source",
    modes: { workspace: 0o555 },
    commands: [
      {
        cli: "migrate",
        args: () => ["climpt", "climpt", "--out", "afile"],
        says: /--out .*afile: is a file, not a folder/,
      },
      {
        cli: "migrate",
        args: () => ["climpt", "climpt", "--out", "/dev/null"],
        says: /--out \/dev\/null: is a special file/,
      },
      {
        cli: "migrate",
        args: () => ["climpt", "climpt", "--out", "dangling"],
        says: /dangling is a symbolic link to \/nonexistent\/stepflow-target, which does not exist/,
      },
      {
        cli: "migrate",
        args: () => ["climpt", "climpt", "--out", "workspace/agents"],
        says: /--out .*workspace\/agents: Cannot create folders in .*workspace: permission denied/,
      },
      {
        cli: "migrate",
        args: () => ["climpt", "climpt", "--out", "loop1/agents"],
        says: /--out .*loop1\/agents: .*symbolic link loop/,
      },
    ],
  },
  {
    name: "an unreadable migrate source",
    modes: { climpt: 0o000 },
    commands: [{
      cli: "migrate",
      args: () => ["climpt", "climpt", "--out", "fresh"],
      says: /Cannot use .*climpt: permission denied/,
    }],
  },
  {
    name: "ui --host that cannot be bound or resolved",
    commands: [
      {
        cli: "ui",
        args: () => ["--port", "0", "--host", "nosuch.invalid"],
        says: /UI_BIND_FAILED.*does not resolve/,
      },
      {
        cli: "ui",
        args: () => ["--port", "0", "--host", "10.255.255.1"],
        says: /UI_BIND_FAILED.*not an address of this machine/,
      },
    ],
  },
];

/** Every file and folder under `dir`, as relative paths (what a command left behind). */
function listing(dir: string, prefix = ""): string[] {
  const names: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(join(dir, prefix))];
  } catch {
    return names;
  }
  for (const entry of entries) {
    const rel = join(prefix, entry.name);
    names.push(rel);
    if (entry.isDirectory) names.push(...listing(dir, rel));
  }
  return names.sort();
}

for (const situation of SITUATIONS) {
  const needsModes = situation.modes !== undefined;
  Deno.test({
    name: `OS situation × CLI: ${situation.name} → exit 2 with what, where, how to fix`,
    ignore: needsModes && "impossible" in MODES,
    fn: async () => {
      const { dir, runId } = await project();
      const wrapper = "wrapper" in MODES ? MODES.wrapper : [];
      const before = listing(dir);
      const modes = Object.entries(situation.modes ?? {});
      for (const [path, mode] of modes) Deno.chmodSync(join(dir, path), mode);
      try {
        for (const { cli, args, says } of situation.commands) {
          const argv = args(runId);
          const what = `${cli} ${argv.join(" ").slice(0, 120)}`;
          const result = await finish(spawnCli(cli, argv, { userDir: dir, wrapper }));
          assert.equal(result.code, 2, `${what}: exit ${result.code}\n${result.stderr}`);
          assert.match(result.stderr, says, what);
          assert.doesNotMatch(result.stderr, /bug in stepflow|this is a bug|\n\s+at /, what);
        }
      } finally {
        for (const [path] of modes.reverse()) Deno.chmodSync(join(dir, path), 0o755);
      }
      // Nothing partial: no lock, temp file, half-written agent or plan is left behind.
      assert.deepEqual(listing(dir), before, situation.name);
    },
  });
}

Deno.test("plan validate: a plan name too long once suffixed is an error, not OK", async () => {
  const { dir } = await project();
  const result = await finish(spawnCli("plan", ["validate", LONG_SPEC], { userDir: dir }));
  assert.equal(result.code, 1, result.stdout + result.stderr);
  assert.match(
    result.stdout,
    /error: the file name .* is 247 bytes; with the temp file it is saved through it would be longer than the 255 bytes a file name may have\. Rename it to at most 233 bytes: 'plan run' could not save it\./,
  );
  const short = await finish(spawnCli("plan", ["validate", "a"], { userDir: dir }));
  assert.equal(short.code, 0, short.stdout);
});

Deno.test("plan run: a history file that cannot be written ends the run with exit 2 and the fix", async () => {
  const { dir } = await project();
  await Deno.mkdir(join(dir, "planspec", "a.history.jsonl"));
  const result = await finish(
    spawnCli("plan", ["run", "a", "--script", "run.yaml"], { userDir: dir }),
  );
  assert.equal(result.code, 2, result.stderr);
  assert.match(
    result.stderr,
    /error: Cannot use .*planspec\/a\.history\.jsonl: it is a folder, where a file was expected \(EISDIR\)\. Fix: /,
  );
  assert.match(result.stdout, /fix the above, then run the same command to continue/);
  assert.doesNotMatch(result.stderr + result.stdout, /bug in stepflow/);
});
