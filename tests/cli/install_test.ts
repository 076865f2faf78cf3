/**
 * The one `stepflow` command: `deno task install` installs it (into a temporary DENO_INSTALL_ROOT
 * here), and from a folder outside the checkout it runs every command, and what it prints — next
 * steps, hints, the `--init` script's comment — works there as printed.
 */
import assert from "node:assert/strict";
import { delimiter, join } from "node:path";
import { installedStepflow, runAgentCommand, stepflowCommand } from "../../src/invocation.ts";
import { REPO_ROOT } from "./helpers.ts";

async function sh(
  command: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; out: string }> {
  // As typed in a shell: no INIT_CWD from an enclosing `deno task` (the test runner's own).
  const result = await new Deno.Command("env", {
    args: ["-u", "INIT_CWD", "sh", "-c", command],
    cwd,
    env: { NO_COLOR: "1", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: result.code, out: decoder.decode(result.stdout) + decoder.decode(result.stderr) };
}

Deno.test("deno task install: one stepflow command that runs every command outside the checkout, and prints commands that work there", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-install-" });
  const project = await Deno.makeTempDir({ prefix: "stepflow-project-" });
  try {
    const install = await sh(`"${Deno.execPath()}" task --quiet install`, REPO_ROOT, {
      DENO_INSTALL_ROOT: root,
      PATH: Deno.env.get("PATH") ?? "",
    });
    assert.equal(install.code, 0, install.out);
    const bin = join(root, "bin");
    // deno's install script calls `deno`: the one running this test.
    const path = [bin, join(Deno.execPath(), ".."), Deno.env.get("PATH") ?? ""].join(delimiter);
    const env = { PATH: path };

    const init = await sh("stepflow --init my-agent", project, env);
    assert.equal(init.code, 0, init.out);
    assert.doesNotMatch(
      init.out,
      /deno task|deno run/,
      "the installed command is the one to print",
    );
    const printed = init.out.split("\n").filter((l) => l.startsWith("  stepflow "));
    assert.equal(printed.length, 3, init.out);
    for (const line of [printed[0], printed[2]]) {
      const result = await sh(line.trim().replace('"…"', '"from elsewhere"'), project, env);
      assert.equal(result.code, 0, `${line}\n${result.out}`);
    }
    // The command written into the scaffold's script file works here too.
    const script = await Deno.readTextFile(join(project, ".agent/my-agent/demo.script.yaml"));
    assert.match(script, /^# {3}stepflow --agent my-agent --backend scripted \\$/m);

    const list = await sh("stepflow --list", project, env);
    assert.match(list.out, /Run one with: stepflow --agent NAME/);
    const help = await sh("stepflow --help", project, env);
    assert.equal(help.code, 0, help.out);
    for (const name of ["run-agent", "plan", "run-plan", "qplan", "ui", "worker", "migrate"]) {
      assert.match(help.out, new RegExp(`^  ${name} `, "m"));
    }
    // Each command's help shows itself as it is typed here.
    const usages: [string, RegExp][] = [
      ["stepflow run-agent --help", /^Usage: stepflow --agent NAME/m],
      ["stepflow run-plan --help", /^ {2}stepflow run-plan <plan\.json> \[options\]/m],
      ["stepflow qplan --help", /^ {2}stepflow qplan run FILE/m],
      ["stepflow plan --help", /^Usage: stepflow plan <command>/m],
      ["stepflow ui --help", /^Usage: stepflow ui /m],
      ["stepflow worker --help", /^Usage: stepflow worker /m],
      ["stepflow migrate --help", /stepflow migrate climpt/],
    ];
    for (const [command, usage] of usages) {
      const result = await sh(command, project, env);
      assert.equal(result.code, 0, `${command}\n${result.out}`);
      assert.match(result.out, usage, command);
      assert.doesNotMatch(result.out, /deno task/, command);
    }
    // A usage error shows the help as typed here too.
    const uiUsage = await sh("stepflow ui --prot 0", project, env);
    assert.equal(uiUsage.code, 2, uiUsage.out);
    assert.match(uiUsage.out, /^Usage: stepflow ui /m);
    assert.doesNotMatch(uiUsage.out, /deno task/);
    // Other commands by name, with their files resolved in the project folder.
    await Deno.writeTextFile(join(project, "hi.qplan"), 'step id="s" {\n  print "hi"\n}\n');
    const qplan = await sh("stepflow qplan run hi.qplan --quiet", project, env);
    assert.deepEqual([qplan.code, qplan.out], [0, "hi\n"]);
    const qplanUsage = await sh("stepflow qplan run", project, env);
    assert.equal(qplanUsage.code, 2);
    assert.match(qplanUsage.out, /needs a script file: stepflow qplan run FILE/);
    const plan = await sh("stepflow plan list", project, env);
    assert.match(plan.out, /Create one with: stepflow plan new/);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(project, { recursive: true });
  }
});

Deno.test("stepflowCommand: deno task in the checkout, stepflow when installed, --config or JSR otherwise", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-path-" });
  try {
    // Another program called stepflow is not ours.
    await Deno.writeTextFile(join(dir, "stepflow"), "#!/bin/sh\necho other tool\n");
    assert.equal(installedStepflow(dir), false);
    assert.match(runAgentCommand("/elsewhere", undefined, dir), /^deno run -A --config /);
    await Deno.writeTextFile(
      join(dir, "stepflow"),
      `#!/bin/sh\nexec deno run --allow-all 'file://${REPO_ROOT}src/cli/mod.ts' "$@"\n`,
    );
    assert.equal(installedStepflow(dir), true);
    assert.equal(runAgentCommand("/elsewhere", undefined, dir), "stepflow");
    assert.equal(stepflowCommand("run-plan", "/elsewhere", { path: dir }), "stepflow run-plan");
    assert.equal(
      stepflowCommand("qplan", join(REPO_ROOT, "docs"), { path: dir }),
      "deno task qplan",
    );
    assert.equal(
      stepflowCommand("ui", "/x", {
        path: "",
        moduleUrl: "https://jsr.io/@stepflow/core/0.1.0/src/invocation.ts",
      }),
      "deno run -A jsr:@stepflow/core/cli ui",
    );
    assert.equal(
      stepflowCommand("worker", "/elsewhere", { path: "" }),
      `deno run -A --config ${join(REPO_ROOT, "deno.json")} ${
        join(REPO_ROOT, "src/cli/worker.ts")
      }`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
