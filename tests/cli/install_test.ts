/**
 * The one `stepflow` command: `deno task install` installs it (into a temporary DENO_INSTALL_ROOT
 * here), and from a folder outside the checkout every subcommand runs — its own `--help` with
 * examples, the agent subcommands end to end, the old `--agent NAME --show ID` form with its hint —
 * and what it prints names the installed command.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  commandLine,
  installedStepflow,
  STEPFLOW_SUBCOMMANDS,
  stepflowCommand,
  stepflowPrefix,
} from "../../src/invocation.ts";
import { installStepflow, REPO_ROOT } from "./helpers.ts";

Deno.test("deno task install: stepflow runs every subcommand from an unrelated folder", async () => {
  const stepflow = await installStepflow();
  const project = await Deno.makeTempDir({ prefix: "stepflow-project-" });
  const sh = (command: string) => stepflow.sh(command, project);
  try {
    // Each stepflow is a Deno process of its own: the ones that do not depend on each other start
    // together, in three rounds (before the agent exists, once it exists, once it has run).
    await Deno.writeTextFile(join(project, "hi.qplan"), 'step id="s" {\n  print "hi"\n}\n');
    const [help, helps, typo, init, qplan, qplanUsage, plan, uiUsage, bash, words] = await Promise
      .all([
        sh("stepflow --help"),
        // Each subcommand has its own help, with examples, written as it is typed here (the
        // servers' here; every other one's in-process in stepflow_test.ts, which checks them).
        Promise.all(["run", "ui", "mcp", "worker"].map((name) => sh(`stepflow ${name} --help`))),
        sh("stepflow run-plna plan.json"),
        sh("stepflow init my-agent"),
        // The other commands by name, with their files resolved in the project folder.
        sh("stepflow qplan run hi.qplan --quiet"),
        sh("stepflow qplan run"),
        sh("stepflow plan list"),
        sh("stepflow ui --prot 0"),
        // Completion comes from the declarations and the folder.
        sh("stepflow completions bash"),
        sh("stepflow __complete sh"),
      ]);
    assert.equal(help.code, 0, help.out);
    for (const name of STEPFLOW_SUBCOMMANDS) {
      assert.match(help.stdout, new RegExp(`^  ${name} +\\S`, "m"), name);
    }
    ["run", "ui", "mcp", "worker"].forEach((name, i) => {
      const result = helps[i];
      assert.equal(result.code, 0, `stepflow ${name} --help\n${result.out}`);
      assert.match(result.stdout, /^Examples:$/m, name);
      assert.match(result.stdout, new RegExp(`^ {2}(\\S+ \\| )?stepflow ${name}\\b`, "m"), name);
      assert.doesNotMatch(result.out, /deno task|deno run/, name);
    });
    // A mistyped subcommand is named, with the closest one.
    assert.equal(typo.code, 2, typo.out);
    assert.match(typo.stderr, /^error: Unknown subcommand "run-plna"\. Did you mean run-plan\?$/m);
    assert.match(typo.stderr, /Run `stepflow --help` for the subcommands\./);
    assert.deepEqual([qplan.code, qplan.out], [0, "hi\n"]);
    assert.equal(qplanUsage.code, 2);
    assert.match(qplanUsage.out, /needs a script file: stepflow qplan run FILE/);
    assert.match(plan.out, /Create one with: stepflow plan new/);
    assert.equal(uiUsage.code, 2, uiUsage.out);
    assert.match(uiUsage.out, /^Usage: stepflow ui /m);
    assert.match(bash.stdout, /complete .*-F _stepflow stepflow/);
    assert.equal(words.stdout, "words\nshow\n");

    // The agent subcommands, end to end.
    assert.equal(init.code, 0, init.out);
    assert.match(
      init.stdout,
      /^ {2}stepflow run my-agent --script \.agent\/my-agent\/demo\.script\.yaml --topic '…'$/m,
    );
    assert.match(init.stdout, /^ {2}stepflow validate my-agent$/m);
    const script = await Deno.readTextFile(join(project, ".agent/my-agent/demo.script.yaml"));
    assert.match(
      script,
      /^# {3}stepflow run my-agent --script \.agent\/my-agent\/demo\.script\.yaml \\$/m,
    );
    const [list, validate, graph, ran] = await Promise.all([
      sh("stepflow list"),
      sh("stepflow validate my-agent"),
      sh("stepflow graph my-agent"),
      sh("stepflow run my-agent --script .agent/my-agent/demo.script.yaml --topic notes --json"),
    ]);
    assert.match(list.stdout, /^Run one with: stepflow run my-agent --topic '…'$/m);
    assert.equal(validate.code, 0, validate.out);
    assert.match(graph.stdout, /^flowchart TD$/m);
    assert.equal(ran.code, 0, ran.out);
    const runId = JSON.parse(ran.stdout).runId as string;

    const [runs, agentRuns, show, resume, missing, old, runIds] = await Promise.all([
      sh("stepflow runs"),
      sh("stepflow runs my-agent"),
      // A run is found by its id alone.
      sh(`stepflow show ${runId}`),
      sh(`stepflow resume ${runId}`),
      sh("stepflow show 20200101T000000Z-000000"),
      // The old form keeps working for a release, with a one-line hint to the new one.
      sh(`stepflow --agent my-agent --show ${runId}`),
      sh("stepflow __complete show ''"),
    ]);
    assert.match(runs.stdout, new RegExp(`^${runId} +\\S+ \\S+ +completed`, "m"));
    assert.match(agentRuns.stdout, /^Runs of agent "my-agent"/);
    assert.equal(show.code, 0, show.out);
    assert.match(show.stdout, new RegExp(`^Run ${runId} · agent my-agent · completed`));
    assert.equal(resume.code, 2, resume.out);
    assert.match(resume.stderr, /already ended \(completed\); nothing to resume/);
    assert.equal(missing.code, 2, missing.out);
    assert.match(missing.stderr, /^Next: stepflow runs$/m);
    assert.equal(old.code, 0, old.out);
    assert.match(old.stdout, new RegExp(`^Run ${runId} · agent my-agent · completed`));
    assert.equal(
      old.stderr,
      `hint: this is now \`stepflow show ${runId}\` (run-agent's --show goes away in a later release)\n`,
    );
    assert.equal(runIds.stdout, `words\n${runId}\n`);
  } finally {
    await stepflow.remove();
    await Deno.remove(project, { recursive: true });
  }
});

Deno.test("stepflowPrefix: stepflow when installed, deno task in the checkout, --config or JSR otherwise", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-path-" });
  try {
    // Another program called stepflow is not ours.
    await Deno.writeTextFile(join(dir, "stepflow"), "#!/bin/sh\necho other tool\n");
    assert.equal(installedStepflow(dir), false);
    assert.match(stepflowPrefix("/elsewhere", { path: dir }), /^deno run -A --config /);
    await Deno.writeTextFile(
      join(dir, "stepflow"),
      `#!/bin/sh\nexec deno run --allow-all 'file://${REPO_ROOT}src/cli/mod.ts' "$@"\n`,
    );
    assert.equal(installedStepflow(dir), true);
    assert.equal(stepflowPrefix("/elsewhere", { path: dir }), "stepflow");
    assert.equal(stepflowCommand("run-plan", "/elsewhere", { path: dir }), "stepflow run-plan");
    // Installed, it is the command to print inside the checkout too.
    assert.equal(
      stepflowCommand("qplan", join(REPO_ROOT, "docs"), { path: dir }),
      "stepflow qplan",
    );
    assert.equal(
      stepflowCommand("qplan", join(REPO_ROOT, "docs"), { path: "" }),
      "deno task stepflow qplan",
    );
    assert.equal(
      stepflowCommand("ui", "/x", {
        path: "",
        moduleUrl: "https://jsr.io/@stepflow/core/0.1.0/src/invocation.ts",
      }),
      "deno run -A jsr:@stepflow/core/cli ui",
    );
    // One renderer for every printed command: subject, --agent, --store (password hidden), args.
    const place = { cwd: "/elsewhere", path: dir };
    assert.equal(commandLine({ action: "show", runId: "r1" }, place), "stepflow show r1");
    assert.equal(
      commandLine({
        action: "answer",
        runId: "r1",
        agent: "./agents/x y",
        store: "postgres://me:secret@db/runs",
        args: ["--value", '{"decision":"next"}'],
      }, place),
      `stepflow answer r1 --agent './agents/x y' --store 'postgres://me:***@db/runs' --value '{"decision":"next"}'`,
    );
    assert.equal(
      commandLine({ action: "run", agent: "haiku", args: ["--topic", "it's"] }, place),
      `stepflow run haiku --topic 'it'\\''s'`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
