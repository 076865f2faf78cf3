/**
 * `--json` and `--show --json` on a run recorded with data nested thousands of levels deep (as older
 * versions stored it): both print bounded JSON instead of overflowing the stack.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { copyDir, hasStackTrace, REPO_ROOT, runTask } from "./helpers.ts";

Deno.test("--show --json and --resume --json print a run holding 10,000-deep data", async () => {
  const user = await Deno.makeTempDir({ prefix: "stepflow-cli-deep-" });
  try {
    await copyDir(join(REPO_ROOT, ".agent/issue-solver"), join(user, ".agent/issue-solver"));
    // The demo's answers without their delays; the closing step fails once, ending the first run.
    const demo = parseYaml(
      await Deno.readTextFile(join(REPO_ROOT, ".agent/issue-solver/demo.script.yaml")),
    ) as Record<string, Record<string, unknown>[]>;
    for (const list of Object.values(demo)) for (const entry of list) delete entry.delayMs;
    await Deno.writeTextFile(join(user, "resume.json"), JSON.stringify(demo));
    demo["complete.issue"].unshift({ error: "stop here" });
    await Deno.writeTextFile(join(user, "answers.json"), JSON.stringify(demo));
    const args = ["--agent", "issue-solver", "--script", "answers.json"];
    const first = await runTask([...args, "--topic", "t", "--json"], { userDir: user });
    assert.equal(first.code, 1, first.stderr);
    const runId = JSON.parse(first.stdout).runId as string;

    // Rewrite the checkpoint as a crashed older run holding a 10,000-deep handoff value.
    const def = await loadAgentDefinition("issue-solver", { cwd: user });
    const file = runStoreFor(def, { cwd: user }).files(runId).checkpoint;
    const checkpoint = JSON.parse(await Deno.readTextFile(file));
    checkpoint.status = "running";
    delete checkpoint.state.end;
    checkpoint.state.currentStepId = "complete.issue";
    checkpoint.state.handoff["initial.issue"].deep = "DEEP";
    const deep = "[".repeat(10_000) + "]".repeat(10_000);
    await Deno.writeTextFile(file, JSON.stringify(checkpoint).replace('"DEEP"', deep));

    const show = await runTask([...args, "--show", runId, "--json"], { userDir: user });
    assert.equal(show.code, 0, show.stderr);
    assert.ok(!hasStackTrace(show.stderr), show.stderr);
    assert.match(show.stdout, /\[nested deeper than 1000 levels: omitted\]/);
    assert.equal(JSON.parse(show.stdout).checkpoint.status, "running");

    const resumed = await runTask(
      ["--agent", "issue-solver", "--script", "resume.json", "--resume", runId, "--json"],
      { userDir: user },
    );
    assert.equal(resumed.code, 0, resumed.stderr);
    const result = JSON.parse(resumed.stdout);
    assert.equal(result.success, true);
    assert.match(resumed.stdout, /\[nested deeper than 1000 levels: omitted\]/);
    assert.match(resumed.stderr, /handoff holds data nested deeper than 1000 levels/);
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});
