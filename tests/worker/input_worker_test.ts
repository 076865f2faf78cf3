/**
 * Input steps on workers (PostgreSQL): a worker's drive ends when the run starts waiting, so the
 * waiting run holds no worker slot — with one slot, a second run completes while the first waits;
 * `--submit --wait` ends with the question and exit 4; `--answer` over the same store records the
 * answer and re-queues the run, which the worker continues (tests/worker/answer_requeue_test.ts
 * does the same with two worker processes).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { runCli } from "../cli/helpers.ts";
import { pipelineFiles, pipelineScript, waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

const RELEASE_SCRIPT = {
  "draft.release": [{ output: { plan: "tag, build, publish", next_action: { action: "next" } } }],
  "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
};

Deno.test({
  name:
    "worker: a waiting run holds no slot; --submit --wait exits 4; the answered run goes back to the worker",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow-input-worker-" });
    await writeAgent(root, "release", releaseFiles());
    await writeAgent(root, "pipeline", pipelineFiles());
    await Deno.writeTextFile(join(root, "release.script.json"), JSON.stringify(RELEASE_SCRIPT));
    const lines: string[] = [];
    const worker = await startWorker({
      store: db,
      agentRoot: join(root, ".agent"),
      concurrency: 1,
      pollMs: 100,
      log: (line) => void lines.push(line),
      backendFor: (definition) =>
        Promise.resolve(
          new ScriptedBackend(
            (definition.name === "release"
              ? RELEASE_SCRIPT
              : pipelineScript()) as ConstructorParameters<
                typeof ScriptedBackend
              >[0],
          ),
        ),
    });
    const store = new PostgresRunStore(db, { agent: "release" });
    try {
      const waited = await runCli(
        ["--agent", "release", "--version", "5", "--store", db, "--submit", "--wait"],
        { userDir: root },
      );
      assert.equal(waited.code, 4, waited.stderr);
      const runId = /queued run (\S+)/.exec(waited.stderr)?.[1] ?? "";
      assert.match(waited.stderr, /approve\.release waits for an answer/);
      assert.match(waited.stdout, /Waiting for an answer at input step "approve\.release"/);
      assert.match(waited.stdout, /Ship 5\? The plan: tag, build, publish/);
      await waitFor(
        "the worker to finish its drive",
        () => Promise.resolve(lines.find((l) => l.includes(`run ${runId}: waiting`))),
        20_000,
      );

      // The only slot is free: another run completes while the first one waits.
      const other = await runCli(
        ["--agent", "pipeline", "--topic", "t", "--store", db, "--submit", "--wait"],
        { userDir: root },
      );
      assert.equal(other.code, 0, other.stderr);
      assert.equal((await store.loadCheckpoint(runId))?.status, "waiting");
      const listed = await runCli(["--agent", "release", "--store", db, "--runs"], {
        userDir: root,
      });
      assert.match(listed.stdout, new RegExp(`${runId} .* waiting`));

      const answered = await runCli(
        [
          "--agent",
          "release",
          "--store",
          db,
          "--answer",
          runId,
          "--value",
          '{"decision":"next"}',
        ],
        { userDir: root },
      );
      assert.equal(answered.code, 0, answered.stderr);
      assert.match(
        answered.stdout,
        /answer recorded \(step approve\.release\); the run is back on the queue/,
      );
      await waitFor(
        "the worker to finish the answered run",
        () => Promise.resolve(lines.find((l) => l.includes(`run ${runId}: completed`))),
        20_000,
      );
      assert.ok(
        lines.some((l) => l.includes(`run ${runId} (release): resuming`)),
        lines.join("\n"),
      );
      assert.equal((await store.loadCheckpoint(runId))?.status, "completed");
      const answers = (await store.readLog(runId)).filter((e) => e.type === "input_answer");
      assert.equal(answers.length, 1);
    } finally {
      await worker.stop();
      await store.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});
