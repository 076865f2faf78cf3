import assert from "node:assert/strict";
import { join } from "node:path";
import { writeShipAgents } from "../flow/agent_step_fixtures.ts";
import { runTask } from "./helpers.ts";

const SCRIPT = JSON.stringify({
  "plan.ship": [{ output: { version: "2.0.0", next_action: { action: "next" } } }],
  "draft.release": [{ output: { plan: "tag", next_action: { action: "next" } } }],
  "complete.release": [{
    output: { summary: "2.0.0 shipped", next_action: { action: "complete" } },
  }],
  "complete.ship": [{ output: { summary: "done", next_action: { action: "complete" } } }],
});

Deno.test("run-agent: --validate names each agent step's child; a waiting child makes the run wait, and --answer of the parent finishes both", async () => {
  const user = await Deno.makeTempDir({ prefix: "stepflow-agent-cli-" });
  try {
    await writeShipAgents(user);
    await Deno.writeTextFile(join(user, "ship.script.json"), SCRIPT);
    const validated = await runTask(["--agent", "ship", "--validate"], { userDir: user });
    assert.equal(validated.code, 0, validated.stderr);
    assert.match(
      validated.stdout,
      /agent step release\.ship runs agent "release" \(\.agent\/release\): valid/,
    );

    const args = ["--agent", "ship", "--script", "ship.script.json"];
    const started = await runTask(args, { userDir: user });
    assert.equal(started.code, 4, started.stderr);
    const [, runId, childId] = started.stdout.match(
      /^Run (\S+) waits for an answer at agent step "release\.ship" \(its child run (\S+) waits at input step "approve\.release"/m,
    )!;
    assert.match(started.stderr, new RegExp(`child run ${childId} \\(agent release\\) started`));
    const answered = await runTask([...args, "--answer", runId, "--value", '{"decision":"next"}'], {
      userDir: user,
    });
    assert.equal(answered.code, 0, answered.stderr);
    assert.match(answered.stdout, new RegExp(`child run ${childId} \\(release\\): completed`));
    // The child is a run of its own agent: listed and shown with it, naming its parent.
    const shown = await runTask(["--agent", "release", "--show", childId], { userDir: user });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      new RegExp(`child run of ${runId} \\(its agent step "release\\.ship"\\)`),
    );
    const childRuns = await runTask(["--agent", "release", "--runs"], { userDir: user });
    assert.match(childRuns.stdout, /PARENT/);
    assert.match(childRuns.stdout, new RegExp(`${childId} .* ${runId}`));
    const childJson = await runTask(["--agent", "release", "--runs", "--json"], { userDir: user });
    assert.equal(JSON.parse(childJson.stdout)[0].parentRunId, runId);
    // The parent's --runs lists the parent only; its --show lists its child and how to see it.
    const parentRuns = await runTask(["--agent", "ship", "--runs"], { userDir: user });
    assert.doesNotMatch(parentRuns.stdout, new RegExp(childId));
    const parentShown = await runTask(["--agent", "ship", "--show", runId], { userDir: user });
    assert.match(parentShown.stdout, /Child runs \(1\):/);
    assert.match(
      parentShown.stdout,
      new RegExp(`${childId} +release +release\\.ship +completed +\\S.* show ${childId}$`, "m"),
    );
    const parentJson = await runTask(["--agent", "ship", "--show", runId, "--json"], {
      userDir: user,
    });
    assert.deepEqual(
      JSON.parse(parentJson.stdout).children.map((c: { runId: string; shownStatus: string }) => [
        c.runId,
        c.shownStatus,
      ]),
      [[childId, "completed"]],
    );
    // Asked as a run of the parent's agent, the child is not there.
    const misplaced = await runTask(["--agent", "ship", "--show", childId], { userDir: user });
    assert.notEqual(misplaced.code, 0);
    assert.match(misplaced.stderr, /No run .* of agent "ship"/);
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});
