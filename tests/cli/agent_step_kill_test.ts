/**
 * SIGKILL campaign of agent steps (tests/kill_campaign.ts): a real `run-agent` of the "ship" agent,
 * whose agent step runs the "release" agent as a child run, is killed while the child run is being
 * started (its lock just taken, nothing of it recorded; its log just begun, no checkpoint yet —
 * it then starts again under the same id), while the child writes its checkpoint
 * file, and while the child's model call is in flight. The parent's id of the child is
 * recorded before the child starts, so after the user's `--resume` of the parent (which waits at
 * the child's input step) and the answer, every campaign has exactly one child run, and both runs
 * have the history of an uninterrupted run.
 */
import assert from "node:assert/strict";
import { basename, join } from "node:path";
import { writeShipAgents } from "../flow/agent_step_fixtures.ts";
import { killAtMoment, pause } from "../kill_campaign.ts";
import { runTask, spawnCli } from "./helpers.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { historyFromLog } from "../../src/store/format.ts";

const SCRIPT = JSON.stringify({
  "plan.ship": [{ output: { version: "2.0.0", next_action: { action: "next" } } }],
  "draft.release": [{
    delayMs: 300,
    output: { plan: "tag, publish", next_action: { action: "next" } },
  }],
  "complete.release": [{
    output: { summary: "2.0.0 shipped", next_action: { action: "complete" } },
  }],
  "complete.ship": [{ output: { summary: "done", next_action: { action: "complete" } } }],
});
const ARGS = ["--agent", "ship", "--script", "ship.script.json"];

type Moment = "child-locked" | "child-log-begun" | "child-checkpointing" | "child-calling";

/**
 * Resolves once the child's file for `moment` was created in the watched runs folder: the second
 * run's lock (the first is the parent's), its checkpoint file's temp file (written mid-way), its
 * log (its first model call follows at once).
 */
async function childMoment(watcher: Deno.FsWatcher, moment: Moment): Promise<void> {
  const ids: string[] = [];
  for await (const event of watcher) {
    if (event.kind !== "create") continue;
    for (const path of event.paths) {
      const name = basename(path);
      const lock = /^(.+)\.lock$/.exec(name);
      if (lock && !ids.includes(lock[1])) ids.push(lock[1]);
      const child = ids[1];
      if (child === undefined) continue;
      if (moment === "child-locked" && lock?.[1] === child) return;
      if (moment === "child-log-begun" && name === `${child}.jsonl`) return;
      if (
        moment === "child-checkpointing" && name.includes(`${child}.checkpoint.json`) &&
        name.endsWith(".tmp")
      ) return;
      if (moment === "child-calling" && name === `${child}.jsonl`) {
        await pause(100); // inside the 300 ms of the child's first call
        return;
      }
    }
  }
}

Deno.test("run-agent killed (SIGKILL) while its agent step starts and runs the child: resume never starts a second child", async () => {
  const moments: Moment[] = [
    "child-locked",
    "child-log-begun",
    "child-checkpointing",
    "child-calling",
  ];
  for (const moment of moments) {
    const user = await Deno.makeTempDir({ prefix: "stepflow-agent-kill-" });
    try {
      await writeShipAgents(user);
      await Deno.writeTextFile(join(user, "ship.script.json"), SCRIPT);
      const runs = join(user, "tmp", "logs", "agents", "ship");
      await Deno.mkdir(runs, { recursive: true });
      await killAtMoment({
        describe: moment,
        tries: 3,
        watch: runs,
        spawn: () => spawnCli("run-agent", ARGS, { userDir: user, stdout: "null" }),
        arm: (watcher) => () => childMoment(watcher!, moment),
        // A try that ended before the moment (a late watcher event on a loaded machine: the run
        // reached its wait) leaves its runs behind; the next try starts from an empty folder, so
        // the campaign still has one parent and one child.
        afterRun: async (killed) => {
          if (killed) return;
          await Deno.remove(runs, { recursive: true });
          await Deno.mkdir(runs, { recursive: true });
        },
      });
      const store = new FileRunStore(runs);
      const parents = (await store.list()).filter((s) => s.agent === "ship");
      assert.equal(parents.length, 1, moment);
      const parentId = parents[0].runId;
      // The user resumes the parent: the same child goes on, and both wait for the answer.
      const resumed = await runTask([...ARGS, "--resume", parentId], { userDir: user });
      assert.equal(resumed.code, 4, `${moment}: ${resumed.stderr}`);
      const answered = await runTask(
        [...ARGS, "--answer", parentId, "--value", '{"decision":"next"}'],
        { userDir: user },
      );
      assert.equal(answered.code, 0, `${moment}: ${answered.stderr}`);

      const summaries = await store.list();
      const children = summaries.filter((s) => s.agent === "release");
      assert.equal(children.length, 1, `${moment}: exactly one child run`);
      assert.equal(children[0].parentRunId, parentId);
      assert.equal(children[0].status, "completed");
      const logs = [...Deno.readDirSync(runs)].filter((e) => e.name.endsWith(".jsonl"));
      assert.equal(logs.length, 2, `${moment}: no log of another child`);
      const history = async (runId: string) => {
        const checkpoint = (await store.loadCheckpoint(runId))!;
        return historyFromLog(await store.readLog(runId), checkpoint.state.historyLength as number)
          .map((e) => e.stepId);
      };
      assert.deepEqual(await history(parentId), ["plan.ship", "release.ship", "complete.ship"]);
      assert.deepEqual(await history(children[0].runId), [
        "draft.release",
        "approve.release",
        "complete.release",
      ]);
      const parentLog = await store.readLog(parentId);
      assert.equal(parentLog.filter((e) => e.type === "agent_start").length, 1, moment);
    } finally {
      await Deno.remove(user, { recursive: true });
    }
  }
});
