/**
 * The real CLIs against a real PostgreSQL: `run-agent` with the PostgreSQL store (`STEPFLOW_STORE`,
 * `--store`): `--runs`, `--show`, `--resume` after a SIGKILL, `--redrive`; `deno task worker` with
 * `--submit [--wait]`, the worker named by `--runs`, graceful SIGTERM, and a worker whose agent
 * differs from the submitted one.
 *
 * What is about the process (a run-agent killed with SIGKILL, a worker stopped with SIGTERM) is a
 * real subprocess; the other `run-agent` calls go through its `main(argv, io)` in-process, which
 * spares a `deno` start-up (~0.5 s) each.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { main as runAgentMain } from "../../src/cli/run_agent.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { type RunWorker, startWorker } from "../../src/worker/worker.ts";
import { finish, spawnCli, type Spawned } from "../cli/helpers.ts";
import {
  pipelineFiles,
  pipelineScript,
  pipelineWorkspace,
  REPO,
  waitFor,
} from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

const ignore = pg === undefined;

/** Idle workers poll the queue this often here (the default, 2 s, would dominate the tests). */
const POLL_MS = "100";

/**
 * `run-agent …` in-process (its `main(argv, io)`), from the user folder `root`, its output
 * captured; `onStderr` sees the error output as it is written.
 */
async function runAgent(
  root: string,
  args: string[],
  env: Record<string, string> = {},
  onStderr: (text: string) => void = () => {},
): Promise<Spawned> {
  let stdout = "";
  let stderr = "";
  const code = await runAgentMain(args, {
    stdout: { write: (t) => void (stdout += t) },
    stderr: {
      write: (t) => {
        stderr += t;
        onStderr(stderr);
      },
    },
    stdin: null,
    env: { INIT_CWD: root, NO_COLOR: "1", ...env },
    cwd: REPO,
    isTerminal: { stdin: false, stdout: false, stderr: false },
  });
  return { code, stdout, stderr };
}

/** A copy of the pipeline script whose answers wait `delayMs` each (default: none). */
async function scriptFile(root: string, delayMs = 0): Promise<string> {
  const path = join(root, `script-${delayMs}.json`);
  await Deno.writeTextFile(path, JSON.stringify(pipelineScript(delayMs)));
  return path;
}

/** The worker CLI in its own process (signals reach it directly). */
function spawnWorker(root: string, args: string[]): Deno.ChildProcess {
  return spawnCli("worker", args, { userDir: root });
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
    // 250 ms per answer: the killed run is still well inside its six iterations at the kill.
    const { root, script: slowScript } = await pipelineWorkspace(250);
    const script = await scriptFile(root);
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    try {
      // STEPFLOW_STORE selects the store; the run is killed after its second iteration.
      const child = spawnCli(
        "run-agent",
        ["--agent", "pipeline", "--script", slowScript, "--topic", "x"],
        { userDir: root, env: { STEPFLOW_STORE: db } },
      );
      // Kill the process that holds the run's lease.
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
      const failedId = / redrive (\S+)/.exec(failed.stderr)?.[1];
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
    // The first worker's iteration 3 is slow: --runs looks while it is in flight, and SIGTERM
    // arrives during it. Both happen right after iteration 2 is committed (in-process, tens of
    // milliseconds), so 1.2 s leave ample room; SIGTERM before iteration 3 even starts is as good,
    // since the suspension takes effect at the next commit.
    const slow = pipelineScript(50) as Record<string, Record<string, unknown>[]>;
    slow["work.test"][0].delayMs = 1_200;
    const slowScript = join(root, "slow.json");
    await Deno.writeTextFile(slowScript, JSON.stringify(slow));
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    const first = spawnWorker(root, [
      "--store",
      db,
      "--script",
      slowScript,
      "--lease-ms",
      "1500",
      "--poll-ms",
      POLL_MS,
    ]);
    const firstErr = collect(first.stderr);
    let second: RunWorker | undefined;
    try {
      // Submitting does not need a worker: the job waits in the queue while the worker starts.
      const [submitted] = await Promise.all([
        // The run's permission mode travels with it to the worker that starts it.
        runAgent(root, [
          "--agent",
          "pipeline",
          "--topic",
          "x",
          "--store",
          db,
          "--submit",
          "--permission-mode",
          "acceptEdits",
        ]),
        waitFor(
          "the worker",
          () => Promise.resolve(/taking runs/.test(firstErr.text()) || undefined),
        ),
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
      assert.equal(paused?.state.permissionMode, "acceptEdits");

      // Any worker resumes the handed-back run: the second one runs in this process. Its answer to
      // the first step of a new run waits until --wait has named the worker driving that run.
      let named = Promise.withResolvers<void>();
      const answers = pipelineScript() as Record<string, { output: unknown }[]>;
      const secondLines: string[] = [];
      second = await startWorker({
        store: db,
        agentRoot: join(root, ".agent"),
        cwd: root,
        leaseMs: 1500,
        pollMs: Number(POLL_MS),
        log: (line) => void secondLines.push(line),
        backendFor: () =>
          Promise.resolve(
            new ScriptedBackend(async (req) => {
              if (req.stepId === "work.plan") await named.promise;
              return answers[req.stepId][0];
            }),
          ),
      });
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

      // --wait follows a new run live and prints its history. (A worker that never shows up in
      // its output lets the run go on after 20 s, and the assertion below says so.)
      named = Promise.withResolvers<void>();
      const giveUp = setTimeout(named.resolve, 20_000);
      const waited = await runAgent(
        root,
        ["--agent", "pipeline", "--topic", "z", "--store", db, "--submit", "--wait"],
        {},
        (text) => /driven by /.test(text) && named.resolve(),
      );
      clearTimeout(giveUp);
      assert.equal(waited.code, 0, waited.stderr);
      assert.match(waited.stderr, /queued run \S+/);
      assert.match(waited.stderr, new RegExp(`driven by ${second.owner}\n`));
      assert.match(second.owner, /\S+:\d+/);
      assert.match(waited.stderr, /#6 complete\.report complete/);
      assert.match(waited.stdout, /· completed/);
      assert.deepEqual(secondLines.filter((l) => /^(error|warning)/.test(l)), []);
    } finally {
      try {
        first.kill("SIGKILL");
      } catch {
        // already gone
      }
      await first.status;
      await second?.stop();
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
      POLL_MS,
    ]);
    const err = collect(worker.stderr);
    try {
      const [submitted] = await Promise.all([
        runAgent(root, ["--agent", "pipeline", "--topic", "x", "--store", db, "--submit"]),
        waitFor(
          "the worker",
          () => Promise.resolve(/taking runs/.test(err.text()) || undefined),
        ),
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
