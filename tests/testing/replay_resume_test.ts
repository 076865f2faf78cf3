/**
 * A run killed mid-iteration (SIGKILL) and resumed becomes one replay file: the interrupted
 * iteration left no calls in the log, the resumed run made them again, and replaying the file from
 * the start gives the resumed run's history.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { copyDir, finish, REPO_ROOT, spawnCli } from "../cli/helpers.ts";

Deno.test("replay: a killed and resumed run replays from its start with the resumed run's history", async () => {
  const userDir = await Deno.makeTempDir({ prefix: "stepflow-replay-resume-" });
  try {
    await copyDir(join(REPO_ROOT, ".agent", "haiku"), join(userDir, ".agent", "haiku"));
    await Deno.writeTextFile(
      join(userDir, "first.yaml"),
      [
        "draft.haiku:",
        "  - 'Leaves fall on the path'",
        "  - { text: 'never answered', delayMs: 60000 }",
        "draft.haiku#check:",
        "  - { output: { result: ng, message: too short } }",
      ].join("\n"),
    );
    await Deno.writeTextFile(
      join(userDir, "second.yaml"),
      "draft.haiku: ['Red leaves on the path']\ndraft.haiku#check: [{ output: { result: ok } }]\n",
    );
    const args = ["--agent", "haiku", "--topic", "autumn", "--verbose"];
    const child = spawnCli("run-agent", [...args, "--script", "first.yaml"], { userDir });
    const stdout = new Response(child.stdout).text();
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    while (!/step draft\.haiku #2 started/.test(seen)) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
    }
    const runId = /run (\S+) started/.exec(seen)?.[1];
    assert.ok(runId, seen);
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel().catch(() => {});
    await stdout;

    const resumed = await finish(
      spawnCli("run-agent", [
        "--agent",
        "haiku",
        "--resume",
        runId,
        "--script",
        "second.yaml",
        "--json",
      ], { userDir }),
    );
    assert.equal(resumed.code, 0, resumed.stderr);
    const shown = await finish(
      spawnCli("run-agent", ["--agent", "haiku", "--show", runId, "--as-script"], { userDir }),
    );
    assert.equal(shown.code, 0, shown.stderr);
    assert.doesNotMatch(shown.stdout, /never answered/);
    await Deno.writeTextFile(join(userDir, "replay.yaml"), shown.stdout);
    const replayed = await finish(
      spawnCli("run-agent", [...args, "--script", "replay.yaml", "--json"], { userDir }),
    );
    assert.equal(replayed.code, 0, replayed.stderr);
    const path = (out: string) =>
      JSON.parse(out).state.history.map((h: Record<string, unknown>) => [
        h.stepId,
        h.transition,
        (h.checkResult as { result?: string } | undefined)?.result,
      ]);
    assert.deepEqual(path(replayed.stdout), path(resumed.stdout));
    assert.deepEqual(path(replayed.stdout), [
      ["draft.haiku", "retry", "ng"],
      ["draft.haiku", "complete", "ok"],
    ]);
  } finally {
    await Deno.remove(userDir, { recursive: true });
  }
});
