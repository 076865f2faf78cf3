/**
 * The `stepflow` dispatcher, in-process: the registry holds every subcommand, a mistyped one gets
 * a did-you-mean, every example of every subcommand's help names real flags, runs are found by
 * their id alone (an id two agents hold is refused with their names; an agent outside `.agent/` is
 * named in the printed command), and the old `run-agent` form still works with its hint.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { COMMANDS } from "../../src/cli/commands/registry.ts";
import { declaredTable, type FlagDecls } from "../../src/cli/kit/flags.ts";
import { STEPFLOW_SUBCOMMANDS } from "../../src/invocation.ts";
import { copyDir, printedArgs, runCli, work, writeFiles, writeTinyAgent } from "./helpers.ts";

Deno.test("stepflow: the registry holds every subcommand; a mistyped one gets a did-you-mean", async () => {
  assert.deepEqual(COMMANDS.map((c) => c.name), [...STEPFLOW_SUBCOMMANDS]);
  const dir = await Deno.makeTempDir();
  try {
    const typo = await runCli(["run-plna", "plan.json"], { userDir: dir });
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /^error: Unknown subcommand "run-plna"\. Did you mean run-plan\?\n/);
    const far = await runCli(["deploy"], { userDir: dir });
    assert.equal(far.code, 2);
    assert.match(far.stderr, /^error: Unknown subcommand "deploy"\.\nRun `.* --help` for the/);
    const help = await runCli(["help", "resume"], { userDir: dir });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: .* resume RUN_ID \[options\]$/m);
    const none = await runCli([], { userDir: dir });
    assert.equal(none.code, 0);
    assert.match(none.stdout, /^Subcommands:$/m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The words of a shell command line (quotes kept together; no expansions in examples). */
function words(line: string): string[] {
  return [...line.matchAll(/'[^']*'|"[^"]*"|\S+/g)].map((m) => m[0]);
}

Deno.test("stepflow: every example of every subcommand's --help names the subcommand and its flags", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const entry of COMMANDS) {
      const loaded = await entry.load();
      if (!loaded.main) continue; // ui, mcp and worker serve; the install test runs their --help
      const help = await runCli([entry.name, "--help"], { userDir: dir });
      assert.equal(help.code, 0, `${entry.name}: ${help.stderr}`);
      const examples = help.stdout.split(/^Examples:$/m)[1]?.trim().split("\n") ?? [];
      assert.ok(examples.length > 0, `${entry.name} --help has examples`);
      for (const example of examples) {
        const w = words(example);
        const at = w.findIndex((x, i) => x === entry.name && /stepflow$|mod\.ts$/.test(w[i - 1]));
        assert.ok(at > 0, `${entry.name}: ${example}`);
        let decls: FlagDecls = loaded.flags;
        if (loaded.nested) decls = loaded.nested[w[at + 1]]?.flags ?? {};
        const known = new Set(declaredTable(decls).map((f) => `--${f.name}`));
        for (const word of w.slice(at + 1)) {
          if (word === "|" || word === ">") break;
          if (!word.startsWith("--")) continue;
          const flag = word.split("=")[0];
          assert.ok(
            known.has(flag) || loaded.parameters,
            `${entry.name}: ${example}: ${flag} is not one of its flags`,
          );
        }
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stepflow: runs by their id alone; two agents with one id are named; an agent elsewhere is named in the command", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-ids-" });
  try {
    await writeTinyAgent(dir, "a");
    await writeTinyAgent(dir, "b");
    await writeFiles(dir, { "abort.json": { "work.task": [work("abort")] } });
    const failed = await runCli(["run", "a", "--script", "abort.json", "--topic", "x"], {
      userDir: dir,
    });
    assert.equal(failed.code, 1, failed.stderr);
    const runId = /^Restart it from its failed step with: .* redrive (\S+)$/m.exec(failed.stderr)
      ?.[1];
    assert.ok(runId, failed.stderr);
    const shown = await runCli(["show", runId], { userDir: dir });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^Run ${runId} · agent a · aborted`));

    // The same id in b's store too: which one is meant must be said.
    const from = join(dir, "tmp/logs/agents/a");
    const to = join(dir, "tmp/logs/agents/b");
    await copyDir(from, to);
    const checkpoint = join(to, `${runId}.checkpoint.json`);
    const text = await Deno.readTextFile(checkpoint);
    await Deno.writeTextFile(checkpoint, text.replace('"agent":"a"', '"agent":"b"'));
    assert.notEqual(await Deno.readTextFile(checkpoint), text, "the copy is b's run");
    const ambiguous = await runCli(["show", runId], { userDir: dir });
    assert.equal(ambiguous.code, 2);
    assert.match(
      ambiguous.stderr,
      new RegExp(
        `Run ${runId} is recorded by more than one agent: a, b\\. Say which with --agent NAME`,
      ),
    );
    const chosen = await runCli(["show", runId, "--agent", "b"], { userDir: dir });
    assert.match(chosen.stdout, / · agent b · /);

    // An agent that is not under .agent/: the printed redrive names it, and works as printed.
    await Deno.mkdir(join(dir, "agents"));
    await Deno.rename(join(dir, ".agent/b"), join(dir, "agents/b"));
    const elsewhere = await runCli(
      ["run", "./agents/b", "--script", "abort.json", "--topic", "y"],
      {
        userDir: dir,
      },
    );
    const redrive = /^Restart it from its failed step with: (.*)$/m.exec(elsewhere.stderr)?.[1];
    assert.ok(redrive, elsewhere.stderr);
    assert.match(redrive, / redrive \S+ --agent \.\/agents\/b$/);
    const again = await runCli(printedArgs(redrive, dir), { userDir: dir });
    assert.equal(again.code, 1, again.stderr);
    assert.match(again.stderr, /redriven: agent b after iteration 1/);

    // The old form still works, with a one-line hint to the new one.
    const old = await runCli(["--agent", "a", "--runs"], { userDir: dir });
    assert.equal(old.code, 0, old.stderr);
    assert.match(old.stderr, /^hint: this is now `.* runs a` \(run-agent's --runs goes away/);
    assert.match(old.stdout, new RegExp(runId));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
