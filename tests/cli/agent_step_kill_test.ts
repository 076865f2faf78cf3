/**
 * SIGKILL campaign of agent steps (tests/kill_campaign.ts): a real `run-agent` of the "ship" agent,
 * whose agent step runs the "release" agent as a child run, is killed while the child run is being
 * started (its lock just taken, nothing of it recorded; its log just begun, no checkpoint yet —
 * it then starts again under the same id), while the child writes its checkpoint
 * file, and while the child's model call is in flight. The parent's id of the child is
 * recorded before the child starts, so after the user's `--resume` of the parent (which waits at
 * the child's input step) and the answer, every campaign has exactly one child run, and both runs
 * have the history of an uninterrupted run. The child is recorded as a run of its own agent, in
 * that agent's folder (`tmp/logs/agents/release`), the parent in its own.
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
 * Resolves once the child's file for `moment` was created under the watched folder (both agents'
 * run folders): the second run's lock (the first is the parent's), its checkpoint file's temp file
 * (written mid-way), its log (its first model call follows at once).
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
      const agents = join(user, "tmp", "logs", "agents");
      const runs = join(agents, "ship");
      const childRuns = join(agents, "release");
      const fresh = async () => {
        for (const dir of [runs, childRuns]) {
          await Deno.remove(dir, { recursive: true }).catch(() => {});
          await Deno.mkdir(dir, { recursive: true });
        }
      };
      await fresh();
      await killAtMoment({
        describe: moment,
        // A loaded machine may deliver the watcher's event after the run's 300 ms call: try again.
        tries: 6,
        watch: agents,
        spawn: () => spawnCli("run-agent", ARGS, { userDir: user, stdout: "null" }),
        arm: (watcher) => () => childMoment(watcher!, moment),
        // A try that ended before the moment (a late watcher event on a loaded machine: the run
        // reached its wait) leaves its runs behind; the next try starts from an empty folder, so
        // the campaign still has one parent and one child.
        afterRun: async (killed) => {
          if (!killed) await fresh();
        },
      });
      const store = new FileRunStore(runs);
      const childStore = new FileRunStore(childRuns);
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

      const children = await childStore.list();
      assert.equal(children.length, 1, `${moment}: exactly one child run`);
      assert.equal(children[0].agent, "release");
      assert.equal(children[0].parentRunId, parentId);
      assert.equal(children[0].status, "completed");
      const logs = (dir: string) =>
        [...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".jsonl")).length;
      assert.equal(logs(runs), 1, `${moment}: only the parent's log beside the parent`);
      assert.equal(logs(childRuns), 1, `${moment}: no log of another child`);
      const history = async (where: FileRunStore, runId: string) => {
        const checkpoint = (await where.loadCheckpoint(runId))!;
        return historyFromLog(await where.readLog(runId), checkpoint.state.historyLength as number)
          .map((e) => e.stepId);
      };
      assert.deepEqual(await history(store, parentId), [
        "plan.ship",
        "release.ship",
        "complete.ship",
      ]);
      assert.deepEqual(await history(childStore, children[0].runId), [
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
