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
    const shown = await runTask(["--agent", "ship", "--show", childId], { userDir: user });
    assert.match(
      shown.stdout,
      new RegExp(`child run of ${runId} \\(its agent step "release\\.ship"\\)`),
    );
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});
