/**
 * SIGKILL campaign of answers (tests/kill_campaign.ts): a real `run-agent --answer` process is
 * killed with its run's lock just taken (before anything is recorded), in the middle of the
 * checkpoint that records the answer, and while the answered run goes on (the next model call in
 * flight). After each kill the run is recovered the way a user would — answered again while it
 * still waits, resumed once the answer is recorded — and in the end every run has its answer
 * recorded exactly once and the history of an uninterrupted run.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeAgent } from "../flow/fixtures.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { killAtMoment, pause, tempFilesCreated } from "../kill_campaign.ts";
import { runTask, spawnCli } from "./helpers.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { historyFromLog } from "../../src/store/format.ts";

/** Resolves once `file` exists (a lock file is created in one step), or when the process ended. */
async function pathAppears(file: string, ended: AbortSignal): Promise<void> {
  while (!ended.aborted) {
    try {
      await Deno.lstat(file);
      return;
    } catch {
      await pause(2);
    }
  }
}

/** Resolves once `file` holds `text` (checked every 2 ms), or when the process ended. */
async function fileHas(file: string, text: string, ended: AbortSignal): Promise<void> {
  while (!ended.aborted) {
    const content = await Deno.readTextFile(file).catch(() => "");
    if (content.includes(text)) return;
    await pause(2);
  }
}

const SCRIPT = JSON.stringify({
  "draft.release": [{ output: { plan: "tag, build, publish", next_action: { action: "next" } } }],
  "complete.release": [{
    delayMs: 400,
    output: { summary: "shipped", next_action: { action: "complete" } },
  }],
});
const ARGS = ["--agent", "release", "--script", "release.script.json"];

type Moment = "locked" | "recording" | "continuing";

Deno.test("run-agent --answer killed (SIGKILL) at every moment: the answer is recorded exactly once", async () => {
  const user = await Deno.makeTempDir({ prefix: "stepflow-input-kill-" });
  try {
    await writeAgent(user, "release", releaseFiles());
    await Deno.writeTextFile(join(user, "release.script.json"), SCRIPT);
    const runs = join(user, "tmp", "logs", "agents", "release");
    for (const moment of ["locked", "recording", "continuing"] as Moment[]) {
      const started = await runTask([...ARGS, "--version", "1"], { userDir: user });
      assert.equal(started.code, 4, started.stderr);
      const runId = started.stdout.match(/^Run (\S+) waits/m)![1];
      const store = () => new FileRunStore(runs);
      await killAtMoment({
        describe: moment,
        tries: 3,
        watch: runs,
        spawn: () =>
          spawnCli("run-agent", [...ARGS, "--answer", runId, "--value", '{"decision":"next"}'], {
            userDir: user,
            stdout: "null",
          }),
        arm: (watcher) => async (child, ended) => {
          if (moment === "locked") {
            return await pathAppears(join(runs, `${runId}.lock`), ended);
          }
          if (moment === "recording") {
            // Mid-write of the checkpoint that records the answer (its temp file) — or, when that
            // event reaches a loaded machine's watcher late, the moment the answer's line is in
            // the log, before the next step starts: both are the answer's recording.
            return await Promise.race([
              tempFilesCreated(watcher!, 1), // <runId>.checkpoint.json.tmp
              fileHas(join(runs, `${runId}.jsonl`), '"type":"input_answer"', ended),
            ]);
          }
          // The answered run goes on: the next step's call is in flight.
          const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
          let text = "";
          while (!text.includes("step complete.release #3 started")) {
            const chunk = await reader.read();
            if (chunk.done) return;
            text += chunk.value;
          }
          reader.releaseLock();
        },
        afterRun: () => {},
      });
      // Recover as a user would: answer again while it waits, resume once the answer is in.
      const status = (await store().loadCheckpoint(runId))?.status;
      const recorded = (await store().readLog(runId)).filter((e) => e.type === "input_answer");
      if (moment === "locked") {
        assert.equal(status, "waiting", "killed before recording: the run still waits");
        assert.equal(recorded.length, 0);
      }
      if (moment === "continuing") {
        assert.equal(status, "running", "killed after recording: an interrupted run");
        assert.equal(recorded.length, 1);
      }
      // The checkpoint that moves the run on records the answer; its log line follows it. So a run
      // that still waits has no answer line, and one killed between the two gets its line from the
      // next drive (checked below: exactly one in the end).
      if (status === "waiting") {
        assert.equal(recorded.length, 0, `${moment}: no line while it waits`);
      }
      assert.ok(recorded.length <= 1, `${moment}: at most one answer line`);
      const recovered = status === "waiting"
        ? await runTask([...ARGS, "--answer", runId, "--value", '{"decision":"next"}'], {
          userDir: user,
        })
        : status === "running"
        ? await runTask([...ARGS, "--resume", runId], { userDir: user })
        : undefined;
      if (recovered) assert.equal(recovered.code, 0, `${moment}: ${recovered.stderr}`);
      const checkpoint = await store().loadCheckpoint(runId);
      assert.equal(checkpoint?.status, "completed", moment);
      const log = await store().readLog(runId);
      const answers = log.filter((e) => e.type === "input_answer");
      assert.equal(answers.length, 1, `${moment}: one answer recorded`);
      const history = historyFromLog(log, checkpoint!.state.historyLength as number).map((e) =>
        e.stepId
      );
      assert.deepEqual(
        history,
        ["draft.release", "approve.release", "complete.release"],
        `${moment}: the history of an uninterrupted run`,
      );
      // And a late second answer is refused.
      const late = await runTask([...ARGS, "--answer", runId, "--value", '{"decision":"next"}'], {
        userDir: user,
      });
      assert.equal(late.code, 2);
    }
  } finally {
    await Deno.remove(user, { recursive: true });
  }
});
