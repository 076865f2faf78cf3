/**
 * End-to-end tests of `deno task migrate` and of the migrated agents through `deno task run-agent`:
 * real processes, checked on stdout, stderr and exit code.
 */
import { stepflowPrefix } from "../../src/invocation.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { hasStackTrace, runCli, runTask, writeFiles } from "./helpers.ts";
import { validatedFixerFiles, writeAgent } from "../flow/fixtures.ts";

const FIXTURES = fileURLToPath(new URL("../migrate/fixtures/climpt", import.meta.url));

async function withUserDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-migrate-cli-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The smoke command a MIGRATION.md gives, as `stepflow` arguments. */
async function smokeArgs(dir: string, agent: string): Promise<string[]> {
  const report = await Deno.readTextFile(join(dir, "agents", agent, "MIGRATION.md"));
  const line = report.split("\n").find((l) => l.includes("smoke.script.yaml"));
  assert.ok(line, "MIGRATION.md gives a smoke command");
  // In the form that works in the folder the migration ran in (a temp folder: not `deno task`).
  const command = `${stepflowPrefix(dir)} `;
  assert.ok(line.startsWith(command), `${line} does not start with ${command}`);
  return line.slice(command.length).split(" ");
}

Deno.test("cli migrate: converts the fixtures; each result validates and runs its smoke script", async () => {
  await withUserDir(async (dir) => {
    const migrated = await runCli(["climpt", FIXTURES, "--out", "agents"], {
      task: "migrate",
      userDir: dir,
    });
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, /^Converted 4 climpt agent\(s\):/);
    assert.match(migrated.stdout, /probe +loads with 2 warning\(s\); \d+ mapped/);
    assert.match(migrated.stdout, /→ agents\/probe/);

    const validate = await runCli(["--agent", "./agents/probe", "--validate"], { userDir: dir });
    assert.equal(validate.code, 0, validate.stderr);
    assert.match(validate.stdout + validate.stderr, /orphan\.probe" is unreachable/);

    for (const agent of ["probe", "deployer", "watcher", "scout"]) {
      const smoke = await runCli([...await smokeArgs(dir, agent), "--json"], { userDir: dir });
      assert.equal(smoke.code, 0, `${agent}: ${smoke.stderr}`);
      const result = JSON.parse(smoke.stdout);
      assert.equal(result.completionReason, "completed", agent);
    }

    // The command step needs --allow-run; without it the run fails and says how to fix it.
    const refused = await runCli(
      [
        "--agent",
        "./agents/deployer",
        "--backend",
        "scripted",
        "--script",
        "agents/deployer/smoke.script.yaml",
        "--target",
        "x",
      ],
      { userDir: dir },
    );
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /COMMAND_NOT_ALLOWED/);
    assert.match(refused.stderr, /Pass --allow-run/);
    assert.ok(!hasStackTrace(refused.stderr));

    // Array parameters: a repeated flag and a comma list; enums are checked.
    const scout = [
      "--agent",
      "./agents/scout",
      "--backend",
      "scripted",
      "--script",
      "agents/scout/smoke.script.yaml",
      "--json",
    ];
    const arrays = await runCli([...scout, "--label", "a,b", "--label", "c"], { userDir: dir });
    assert.equal(arrays.code, 0, arrays.stderr);
    const badEnum = await runCli([...scout, "--scan-mode", "slow"], { userDir: dir });
    assert.equal(badEnum.code, 2);
    assert.match(badEnum.stderr, /--scan-mode must be one of quick, deep \(got slow\)/);

    // A second run refuses to overwrite; --force replaces.
    const again = await runCli(["climpt", FIXTURES, "--out", "agents"], {
      task: "migrate",
      userDir: dir,
    });
    assert.equal(again.code, 2);
    assert.match(
      again.stderr,
      /Refusing to overwrite existing agent folder\(s\): agents\/deployer/,
    );
    assert.match(again.stderr, /--force/);
    const forced = await runCli(["climpt", FIXTURES, "--out", "agents", "--force", "--json"], {
      task: "migrate",
      userDir: dir,
    });
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(JSON.parse(forced.stdout).length, 4);
  });
});

Deno.test("cli migrate: usage errors and --dry-run", async () => {
  await withUserDir(async (dir) => {
    const none = await runTask([], { task: "migrate", userDir: dir });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /migrate climpt <path>/);
    const other = await runCli(["crewai", "x"], { task: "migrate", userDir: dir });
    assert.equal(other.code, 2);
    assert.match(other.stderr, /Unknown source format "crewai"/);
    const missing = await runCli(["climpt", "nowhere"], { task: "migrate", userDir: dir });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nowhere is not a folder/);
    const dry = await runCli(["climpt", join(FIXTURES, ".agent", "watcher"), "--dry-run"], {
      task: "migrate",
      userDir: dir,
    });
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /Would convert 1 climpt agent\(s\) \(dry run: nothing written\)/);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  });
});

Deno.test("cli run-agent: a parameter named like a CLI flag loads only with its own flag", async () => {
  await withUserDir(async (dir) => {
    const agent = (parameters: unknown) => ({
      "agent.json": { name: "p", behavior: { completionType: "x" }, parameters },
      "steps_registry.json": {
        version: "1",
        entryStep: "run.echo",
        steps: { "run.echo": { kind: "command", command: "echo" } },
      },
    });
    await writeFiles(join(dir, ".agent", "p"), {
      ...agent({ resume: { type: "boolean" } }),
    });
    const clash = await runCli(["--agent", "p", "--validate"], { userDir: dir });
    assert.equal(clash.code, 2);
    assert.match(
      clash.stdout,
      /parameters\.resume: its CLI flag --resume clashes with the CLI's own --resume/,
    );
    await writeFiles(join(dir, ".agent", "p"), {
      ...agent({ resume: { type: "boolean", flag: "resume-session" } }),
      "agent.json": {
        name: "p",
        behavior: { completionType: "x" },
        parameters: { resume: { type: "boolean", flag: "resume-session" } },
        commands: { echo: { argv: ["echo", "resume={uv-resume}"] } },
      },
    });
    const ok = await runCli(["--agent", "p", "--resume-session", "--allow-run", "--json"], {
      userDir: dir,
    });
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).state.handoff["run.echo"].stdout, "resume=true\n");
  });
});

Deno.test("cli run-agent: step validators run with --allow-run and report each failure", async () => {
  await withUserDir(async (dir) => {
    await writeAgent(dir, "fixer", validatedFixerFiles(1));
    await writeFiles(join(dir, ".agent", "fixer"), {
      "script.yaml": [
        "work.fix:",
        "  - output: { next_action: { action: complete } }",
        "complete.fix:",
        "  - output: { summary: one }",
        "  - output: { summary: two }",
      ].join("\n"),
    });
    const args = ["--agent", "fixer", "--script", ".agent/fixer/script.yaml"];
    const refused = await runCli(args, { userDir: dir });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /COMMAND_NOT_ALLOWED/);

    const failed = await runCli([...args, "--allow-run"], { userDir: dir });
    assert.equal(failed.code, 1);
    assert.match(
      failed.stderr,
      /validation failed, re-running with the retry prompt: Step "complete\.fix": validator "marker" failed \(exit 2, pattern missing\)/,
    );
    assert.match(failed.stdout, /VALIDATION_FAILED at step complete\.fix/);
    assert.match(failed.stdout, /validator marker: exit 2 \(missing\)/);
    assert.ok(!hasStackTrace(failed.stderr));

    const skipped = await runCli([...args, "--skip-validators"], { userDir: dir });
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.match(skipped.stderr, /validator\(s\) skipped/);
  });
});
