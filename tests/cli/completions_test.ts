/**
 * Shell completion: `stepflow __complete` answers from the subcommands' flag declarations and the
 * folder (agents, run ids, an agent's parameters), and the scripts of `stepflow completions
 * bash|zsh|fish` complete through it in the real shells (each shell test is skipped when that
 * shell is not installed; CI installs them).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { complete } from "../../src/cli/complete.ts";
import { command as resume } from "../../src/cli/commands/resume.ts";
import { declaredTable } from "../../src/cli/kit/flags.ts";
import { STEPFLOW_SUBCOMMANDS } from "../../src/invocation.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { installStepflow, report, runCli, work, writeFiles, writeTinyAgent } from "./helpers.ts";

/** A project with two agents, a completed run, a failed one and one waiting for an answer. */
async function project(): Promise<{ dir: string; done: string; failed: string; waiting: string }> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-complete-" });
  await writeTinyAgent(dir, "tiny");
  await writeAgent(dir, "release", releaseFiles());
  await writeFiles(dir, {
    "ok.json": { "work.task": [work("complete")], "complete.task": [report("done")] },
    "abort.json": { "work.task": [work("abort")] },
    "release.json": {
      "draft.release": [{ output: { plan: "p", next_action: { action: "next" } } }],
    },
  });
  const id = async (args: string[]) =>
    JSON.parse((await runCli([...args, "--json"], { userDir: dir })).stdout).runId as string;
  return {
    dir,
    done: await id(["run", "tiny", "--script", "ok.json", "--topic", "x"]),
    failed: await id(["run", "tiny", "--script", "abort.json", "--topic", "x"]),
    waiting: await id(["run", "release", "--script", "release.json", "--version", "1"]),
  };
}

Deno.test("__complete: subcommands, flags from the declarations, values, agents, runs, parameters", async () => {
  const p = await project();
  try {
    const at = { cwd: p.dir, env: {} };
    const words = async (...w: string[]) => {
      const result = await complete(w, at);
      assert.equal(result.kind, "words", w.join(" "));
      return result.candidates;
    };
    assert.deepEqual(await words(""), [...STEPFLOW_SUBCOMMANDS, "--help"]);
    assert.deepEqual(await words("re"), ["resume", "redrive"]);
    // Every flag resume declares, as its declaration names it.
    const flags = declaredTable(resume.flags).map((f) => `--${f.name}`);
    assert.deepEqual((await words("resume", p.done, "--")).sort(), flags.sort());
    assert.deepEqual(await words("run", "--backend", "o"), ["openai"]);
    assert.deepEqual(await words("validate", ""), ["release", "tiny"]);
    assert.deepEqual(await words("run", "--agent-typo", "t"), ["tiny"]);
    // Run ids, each subcommand offering the runs it can act on.
    assert.deepEqual((await words("show", "")).sort(), [p.done, p.failed, p.waiting].sort());
    assert.deepEqual(await words("answer", ""), [p.waiting]);
    assert.deepEqual(await words("redrive", ""), [p.failed]);
    // The named agent's parameters; a flag given once is not offered again.
    assert.deepEqual(await words("run", "tiny", "--to"), ["--topic"]);
    assert.deepEqual(await words("run", "tiny", "--topic", "x", "--to"), []);
    assert.deepEqual(await words("qplan", "v"), ["validate"]);
    assert.deepEqual(await words("completions", ""), ["bash", "zsh", "fish"]);
    assert.deepEqual(await words("nonsense", ""), []);
    assert.equal((await complete(["run", "tiny", "--script", ""], at)).kind, "files");
    assert.equal((await complete(["worker", "--agents", ""], at)).kind, "dirs");
  } finally {
    await Deno.remove(p.dir, { recursive: true });
  }
});

const HAS = async (shell: string) =>
  await new Deno.Command("sh", { args: ["-c", `command -v ${shell}`], stdout: "null" }).output()
    .then((o) => o.success, () => false);

Deno.test("stepflow completions bash|zsh|fish: each shell completes through stepflow __complete", async () => {
  const shells = { bash: await HAS("bash"), zsh: await HAS("zsh"), fish: await HAS("fish") };
  const stepflow = await installStepflow();
  const p = await project();
  try {
    const sh = (command: string) => stepflow.sh(command, p.dir);
    // The scripts as `stepflow completions SHELL` prints them (in-process: install_test.ts spawns
    // it); the shells then call the installed stepflow's __complete.
    const script = async (shell: string) => {
      const printed = await runCli(["completions", shell], { userDir: p.dir });
      assert.equal(printed.code, 0, printed.stderr);
      const path = join(p.dir, `completion.${shell}`);
      await Deno.writeTextFile(path, printed.stdout);
      return path;
    };
    const unknown = await runCli(["completions", "tcsh"], { userDir: p.dir });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /No completion for the shell "tcsh"/);
    // Each shell sources the script and completes as on a Tab; the test lines are a file of
    // their own (no quoting of quotes). The shells run at once.
    const run = async (shell: string, lines: string[]) => {
      const file = join(p.dir, `complete-test.${shell}`);
      await Deno.writeTextFile(file, [`source ${await script(shell)}`, ...lines, ""].join("\n"));
      return await sh(`${shell} ${file}`);
    };
    const tab = (...words: string[]) =>
      `COMP_WORDS=(${words.map((w) => `"${w}"`).join(" ")}); COMP_CWORD=${
        words.length - 1
      }; _stepflow; echo "[\${COMPREPLY[*]}]"`;
    await Promise.all([
      shells.bash && run("bash", [tab("stepflow", "res"), tab("stepflow", "answer", "")]).then(
        (out) => assert.equal(out.stdout, `[resume]\n[${p.waiting}]\n`, out.out),
      ),
      shells.zsh && run("zsh", [
        'compadd() { print -r -- "$@" }',
        "words=(stepflow res); CURRENT=2; _stepflow",
        'words=(stepflow answer ""); CURRENT=3; _stepflow',
      ]).then((out) => assert.equal(out.stdout, `-- resume\n-- ${p.waiting}\n`, out.out)),
      shells.fish && run("fish", [
        'complete -C "stepflow res"',
        'complete -C "stepflow answer "',
      ]).then((out) => assert.equal(out.stdout, `resume\n${p.waiting}\n`, out.out)),
    ]);
  } finally {
    await stepflow.remove();
    await Deno.remove(p.dir, { recursive: true });
  }
});
