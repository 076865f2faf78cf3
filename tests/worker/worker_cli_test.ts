/**
 * The real CLIs against a real PostgreSQL: `run-agent` with the PostgreSQL store (`STEPFLOW_STORE`,
 * `--store`): `--runs`, `--show`, `--resume` after a SIGKILL, `--redrive`; `deno task worker` with
 * `--submit [--wait]`, the worker named by `--runs`, graceful SIGTERM, and a worker whose agent
 * differs from the submitted one.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { writeAgent } from "../flow/fixtures.ts";
import {
  finish,
  pipelineFiles,
  pipelineScript,
  pipelineWorkspace,
  REPO,
  runAgent,
  spawnRunAgent,
  waitFor,
} from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

const ignore = pg === undefined;

/** `deno run src/cli/worker.ts …` (not through `deno task`, so signals reach it directly). */
function spawnWorker(root: string, args: string[]): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(REPO, "src/cli/worker.ts"), ...args],
    cwd: REPO,
    env: { INIT_CWD: root, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
}

/** Collects a child's stderr as it comes, to wait for lines. */
function collect(stream: ReadableStream<Uint8Array>): { text: () => string; done: Promise<void> } {
  let text = "";
  const done = (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  })();
  return { text: () => text, done };
}

async function stepsOf(store: PostgresRunStore, runId?: string): Promise<number> {
  const runs = await store.list();
  const run = runId ? runs.find((r) => r.runId === runId) : runs[0];
  return run?.steps ?? 0;
}

Deno.test({
  name: "run-agent on PostgreSQL: --runs, --show, --resume after SIGKILL, --redrive",
  ignore,
  async fn() {
    const db = await freshDatabase(pg!);
    const { root, script } = await pipelineWorkspace(250);
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    try {
      // STEPFLOW_STORE selects the store; the run is killed after its second iteration.
      const child = spawnRunAgent(
        root,
        ["--agent", "pipeline", "--script", script, "--topic", "x"],
        {
          STEPFLOW_STORE: db,
        },
      );
      // Kill the process that holds the run's lease (not `deno task`, its parent).
      const holder = await waitFor("two iterations", async () => {
        const [run] = await store.list();
        return (run?.steps ?? 0) >= 2 && run.worker ? run.worker : undefined;
      });
      Deno.kill(Number(holder.split(":").pop()), "SIGKILL");
      await finish(child);
      const [run] = await store.list();
      assert.equal(run.live, false, "a dead local holder's run is interrupted, not live");

      const listed = await runAgent(root, ["--agent", "pipeline", "--runs", "--store", db]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(`${run.runId}.*interrupted`));
      assert.match(listed.stdout, /postgres:\/\/.*pipeline|Runs of agent "pipeline" in postgres/);

      const resumed = await runAgent(root, [
        "--agent",
        "pipeline",
        "--script",
        script,
        "--resume",
        run.runId,
        "--store",
        db,
      ]);
      assert.equal(resumed.code, 0, resumed.stderr);
      const log = await store.readLog(run.runId);
      assert.deepEqual(
        log.filter((e) => e.type === "step_end").map((e) => e.iteration),
        [1, 2, 3, 4, 5, 6],
      );
      assert.equal(log.filter((e) => e.type === "run_resume").length, 1);

      const shown = await runAgent(root, ["--agent", "pipeline", "--show", run.runId], {
        STEPFLOW_STORE: db,
      });
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /completed/);
      assert.match(shown.stdout, /complete\.report/);
      assert.match(shown.stdout, /resumed/i);

      // A failing run, redriven from its failed step.
      const bad = pipelineScript();
      bad["work.test"] = [{ error: "the test runner crashed" }];
      const badScript = join(root, "bad.json");
      await Deno.writeTextFile(badScript, JSON.stringify(bad));
      const failed = await runAgent(root, [
        "--agent",
        "pipeline",
        "--script",
        badScript,
        "--topic",
        "y",
        "--store",
        db,
      ]);
      assert.equal(failed.code, 1);
      const failedId = /--redrive (\S+)/.exec(failed.stderr)?.[1];
      assert.ok(failedId, failed.stderr);
      const redriven = await runAgent(root, [
        "--agent",
        "pipeline",
        "--script",
        script,
        "--redrive",
        failedId,
        "--store",
        db,
      ]);
      assert.equal(redriven.code, 0, redriven.stderr);
      assert.equal((await store.loadCheckpoint(failedId))?.status, "completed");
    } finally {
      await store.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "worker CLI: --submit, --runs names the worker, SIGTERM hands the run back, --wait",
  ignore,
  async fn() {
    const db = await freshDatabase(pg!);
    const { root } = await pipelineWorkspace();
    // Iteration 3 is slow: --runs looks while it is in flight, and SIGTERM arrives during it.
    const slow = pipelineScript(150) as Record<string, Record<string, unknown>[]>;
    slow["work.test"][0].delayMs = 5_000;
    const script = join(root, "slow.json");
    await Deno.writeTextFile(script, JSON.stringify(slow));
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    const workerArgs = [
      "--store",
      db,
      "--script",
      script,
      "--lease-ms",
      "1500",
      "--poll-ms",
      "500",
    ];
    const first = spawnWorker(root, workerArgs);
    const firstErr = collect(first.stderr);
    let second: Deno.ChildProcess | undefined;
    try {
      await waitFor(
        "the worker",
        () => Promise.resolve(/taking runs/.test(firstErr.text()) || undefined),
      );
      const submitted = await runAgent(root, [
        "--agent",
        "pipeline",
        "--topic",
        "x",
        "--store",
        db,
        "--submit",
      ]);
      assert.equal(submitted.code, 0, submitted.stderr);
      const runId = submitted.stdout.trim();
      assert.match(runId, /^\d{8}T\d{6}Z-[0-9a-f]{6}$/);

      await waitFor("two iterations", async () => (await stepsOf(store, runId)) >= 2 || undefined);
      const listed = await runAgent(root, ["--agent", "pipeline", "--runs", "--store", db]);
      assert.match(listed.stdout, /WORKER/);
      assert.match(listed.stdout, new RegExp(`${runId}.*running.*:\\d+`));

      first.kill("SIGTERM");
      const status = await first.status;
      await firstErr.done;
      assert.equal(status.code, 0, firstErr.text());
      assert.match(firstErr.text(), /back on the queue/);
      // The iteration in flight was finished and committed before the worker let go.
      const paused = await store.loadCheckpoint(runId);
      assert.equal(paused?.status, "running");
      const committed = (await store.readLog(runId)).filter((e) => e.type === "step_end").length;
      assert.equal(committed, 3);
      assert.equal(paused?.state.historyLength, 3);

      second = spawnWorker(root, workerArgs);
      const secondErr = collect(second.stderr);
      await waitFor(
        "the handed-back run",
        async () => (await store.loadCheckpoint(runId))?.status === "completed" || undefined,
        30_000,
      );
      const log = await store.readLog(runId);
      assert.deepEqual(
        log.filter((e) => e.type === "step_end").map((e) => e.iteration),
        [1, 2, 3, 4, 5, 6],
      );

      // --wait follows a new run live and prints its history.
      const waited = await runAgent(root, [
        "--agent",
        "pipeline",
        "--topic",
        "z",
        "--store",
        db,
        "--submit",
        "--wait",
      ]);
      assert.equal(waited.code, 0, waited.stderr);
      assert.match(waited.stderr, /queued run \S+/);
      assert.match(waited.stderr, /driven by \S+:\d+/);
      assert.match(waited.stderr, /#6 complete\.report complete/);
      assert.match(waited.stdout, /· completed/);
      second.kill("SIGTERM");
      await second.status;
      await secondErr.done;
    } finally {
      for (const child of [first, second]) {
        try {
          child?.kill("SIGKILL");
        } catch {
          // already gone
        }
        await child?.status;
      }
      await store.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "worker CLI: a worker whose agent differs from the submitted one refuses the run",
  ignore,
  async fn() {
    const db = await freshDatabase(pg!);
    const { root, script } = await pipelineWorkspace(0);
    // The worker's own agent root holds an edited copy of the agent.
    const other = await Deno.makeTempDir({ prefix: "stepflow-other-" });
    const files = pipelineFiles();
    files.prompts["steps/complete/report/f_default.md"] = "Report briefly on {uv-topic}.";
    await writeAgent(other, "pipeline", files);
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    const worker = spawnWorker(root, [
      "--store",
      db,
      "--script",
      script,
      "--agents",
      join(other, ".agent"),
      "--poll-ms",
      "500",
    ]);
    const err = collect(worker.stderr);
    try {
      await waitFor(
        "the worker",
        () => Promise.resolve(/taking runs/.test(err.text()) || undefined),
      );
      const submitted = await runAgent(root, [
        "--agent",
        "pipeline",
        "--topic",
        "x",
        "--store",
        db,
        "--submit",
      ]);
      assert.equal(submitted.code, 0, submitted.stderr);
      const runId = submitted.stdout.trim();
      await waitFor(
        "the refusal",
        () =>
          Promise.resolve(
            /was submitted with agent "pipeline" at sha256:/.test(err.text()) || undefined,
          ),
      );
      assert.match(err.text(), new RegExp(`Run ${runId} was submitted .* this worker's copy`));
      assert.match(err.text(), /Deploy the same agent folder to every worker/);
      const [run] = await store.list();
      assert.equal(run.status, "queued");
    } finally {
      worker.kill("SIGKILL");
      await worker.status;
      await err.done;
      await store.close();
      await Deno.remove(root, { recursive: true });
      await Deno.remove(other, { recursive: true });
    }
  },
});
