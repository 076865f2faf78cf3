/**
 * Answers on workers, with two real worker processes (`deno task worker`) on a real PostgreSQL,
 * each with one slot and a poll of an hour — so a run is only ever picked up because the queue's
 * notification woke a worker (LISTEN/NOTIFY), never by a poll:
 *
 * - a submitted run is taken at once and ends its drive waiting (`--submit --wait`, exit 4); it
 *   holds no worker (no lease), and two more runs complete meanwhile;
 * - `--answer RUN_ID --value … --wait` records the answer in the answering process (exactly once)
 *   and puts the run back on the queue; a worker (not the answering process) continues it to its
 *   end, which `--wait` follows;
 * - backend flags on such an answer are ignored with a warning (the worker chooses the backend);
 *   a second answer is refused; SIGTERM stops both workers cleanly (their listening connections closed).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { submissionOf } from "../../src/worker/submissions.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { finish, spawnCli } from "../cli/helpers.ts";
import { pipelineFiles, pipelineScript } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

/** Scripted answers of both agents' model steps (a worker takes one `--script`). */
const SCRIPT = {
  ...pipelineScript(),
  "draft.release": [{ output: { plan: "tag, build, publish", next_action: { action: "next" } } }],
  "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
};

/** An idle worker would look for work once an hour: only a notification gets a run taken. */
const POLL_MS = "3600000";

/** A real worker process, its stderr collected. */
interface WorkerProcess {
  child: Deno.ChildProcess;
  log: () => string;
  done: Promise<void>;
}

async function startWorkerProcess(userDir: string, store: string): Promise<WorkerProcess> {
  const child = spawnCli("worker", [
    "--store",
    store,
    "--script",
    "workers.script.json",
    "--poll-ms",
    POLL_MS,
  ], { userDir, stdout: "null" });
  let text = "";
  let ready: () => void;
  const isReady = new Promise<void>((r) => ready = r);
  const done = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({
      write(chunk) {
        text += chunk;
        if (text.includes("taking runs")) ready();
      },
    }),
  ).catch(() => {});
  const ended = child.status.then((s) => {
    throw new Error(`a worker ended before it was ready (${s.code}): ${text}`);
  });
  await Promise.race([isReady, ended]);
  ended.catch(() => {});
  return { child, log: () => text, done };
}

/** Runs `run-agent` as its own process; a guard kills it when it hangs (a run never taken). */
async function runAgent(userDir: string, args: string[]) {
  const child = spawnCli("run-agent", args, { userDir });
  const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
  try {
    const result = await finish(child);
    assert.notEqual(result.signal, "SIGKILL", `run-agent ${args.join(" ")} hung: ${result.stderr}`);
    return result;
  } finally {
    clearTimeout(guard);
  }
}

Deno.test({
  name:
    "workers: an answer re-queues the submitted run and a worker, woken by the queue's notification, continues it",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow-answer-requeue-" });
    await writeAgent(root, "release", releaseFiles());
    await writeAgent(root, "pipeline", pipelineFiles());
    await Deno.writeTextFile(join(root, "workers.script.json"), JSON.stringify(SCRIPT));
    // The schemas exist before two workers race to create them.
    const store = new PostgresRunStore(db, { agent: "release" });
    await store.list();
    const workers = [
      await startWorkerProcess(root, db),
      await startWorkerProcess(root, db),
    ];
    try {
      const waited = await runAgent(root, [
        "--agent",
        "release",
        "--version",
        "5",
        "--store",
        db,
        "--submit",
        "--wait",
      ]);
      assert.equal(waited.code, 4, waited.stderr);
      const runId = /queued run (\S+)/.exec(waited.stderr)?.[1] ?? "";
      assert.match(waited.stdout, /Ship 5\? The plan: tag, build, publish/);
      // The waiting run holds no worker: no lease, and both slots take and finish other runs.
      assert.equal((await submissionOf(store, runId))?.worker, undefined);
      const others = await Promise.all(
        [1, 2].map((i) =>
          runAgent(root, [
            "--agent",
            "pipeline",
            "--topic",
            `t${i}`,
            "--store",
            db,
            "--submit",
            "--wait",
          ])
        ),
      );
      for (const other of others) assert.equal(other.code, 0, other.stderr);
      assert.equal((await store.loadCheckpoint(runId))?.status, "waiting");

      const answered = await runAgent(root, [
        "--agent",
        "release",
        "--store",
        db,
        "--answer",
        runId,
        "--value",
        '{"decision":"next","note":"go"}',
        "--wait",
        // The dashboard passes its own backend flags to every answer: ignored, with a warning.
        "--script",
        "workers.script.json",
      ]);
      assert.equal(answered.code, 0, answered.stderr);
      assert.match(
        answered.stderr,
        /submitted to the workers: a worker continues it .* --script is ignored/,
      );
      assert.match(
        answered.stderr,
        /answer recorded for run \S+ \(step approve\.release\); back on the queue/,
      );
      assert.match(answered.stdout, /completed/);
      assert.equal((await store.loadCheckpoint(runId))?.status, "completed");

      // Recorded once, by the answering process; continued by a worker after it.
      const log = await store.readLog(runId);
      const types = log.map((e) => e.type);
      assert.equal(types.filter((t) => t === "input_answer").length, 1);
      const answer = log.find((e) => e.type === "input_answer")!;
      assert.equal(
        answer.answeredBy,
        "cli" + (Deno.env.get("USER") ? ` (${Deno.env.get("USER")})` : ""),
      );
      const after = types.slice(types.indexOf("input_answer") + 1);
      assert.deepEqual(after.slice(0, 1), ["run_resume"], "a new drive continues the answered run");
      assert.ok(after.includes("run_end"));
      assert.ok(
        workers.some((w) => w.log().includes(`run ${runId} (release): resuming`)),
        "a worker resumed the answered run",
      );

      // A person's "no" to a run the workers drive: the worker ends it declined, --wait exits 3.
      const second = await runAgent(root, [
        "--agent",
        "release",
        "--version",
        "6",
        "--store",
        db,
        "--submit",
        "--wait",
      ]);
      assert.equal(second.code, 4, second.stderr);
      const secondId = /queued run (\S+)/.exec(second.stderr)?.[1] ?? "";
      const declined = await runAgent(root, [
        "--agent",
        "release",
        "--store",
        db,
        "--answer",
        secondId,
        "--value",
        '{"decision":"abort","note":"freeze"}',
        "--wait",
      ]);
      assert.equal(declined.code, 3, declined.stdout + declined.stderr);
      assert.match(declined.stdout, /· declined\n[^]*Note: freeze/);
      assert.equal((await store.loadCheckpoint(secondId))?.status, "declined");

      const late = await runAgent(root, [
        "--agent",
        "release",
        "--store",
        db,
        "--answer",
        runId,
        "--value",
        '{"decision":"next"}',
      ]);
      assert.equal(late.code, 2, late.stderr);
      assert.match(late.stderr, /INPUT_NOT_WAITING|it already ended/);
    } finally {
      for (const w of workers) w.child.kill("SIGTERM");
      const statuses = await Promise.all(workers.map((w) => w.child.status));
      await Promise.all(workers.map((w) => w.done));
      await store.close();
      await Deno.remove(root, { recursive: true });
      for (const [i, s] of statuses.entries()) {
        assert.equal(s.code, 0, `worker ${i} stopped cleanly: ${workers[i].log()}`);
      }
    }
  },
});
