/**
 * A real PostgreSQL stopped mid-run (SIGSTOP of the server's processes, SIGCONT in cleanup): the
 * run gives up within the store URL's `statement_timeout` with `RUN_STORE_TIMEOUT` naming the
 * server, and resumes from its last committed iteration once the server runs again; and Ctrl-C while it waits quits at once.
 */
import assert from "node:assert/strict";
import { finish, hasStackTrace, report, spawnCli, work, writeTinyAgent } from "../cli/helpers.ts";
import { startPrivateCluster } from "./pg_server.ts";

const cluster = await startPrivateCluster();
const ignore = cluster === undefined;

/** The number of log entries the run committed so far (read through a connection of the test). */
async function committedEntries(url: string): Promise<number> {
  const { Client } = await import("pg");
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT coalesce(sum(log_entries), 0)::int AS n FROM stepflow.runs",
    ).catch(() => ({ rows: [{ n: 0 }] }));
    return rows[0].n as number;
  } finally {
    await client.end();
  }
}

/** Polls until the run has committed its first iteration (an event in the database). */
async function firstIterationCommitted(url: string, child: Deno.ChildProcess): Promise<void> {
  let ended = false;
  child.status.then(() => ended = true);
  while (await committedEntries(url) === 0) {
    if (ended) throw new Error("the run ended before its first commit");
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function userFolder(database: string): Promise<{ userDir: string; url: string }> {
  const userDir = await Deno.makeTempDir({ prefix: "stepflow-frozen-" });
  await writeTinyAgent(userDir, "tiny");
  // The second answer takes long enough for the test to freeze the server meanwhile.
  await Deno.writeTextFile(
    `${userDir}/answers.json`,
    JSON.stringify({
      "work.task": [work("repeat"), { ...work("repeat"), delayMs: 1500 }, work("complete")],
      "complete.task": [report("done")],
    }),
  );
  const { Client } = await import("pg");
  const admin = new Client({ connectionString: cluster!.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const url = new URL(cluster!.url);
  url.pathname = `/${database}`;
  return { userDir, url: url.toString() };
}

const RUN = [
  "--agent",
  "tiny",
  "--topic",
  "x",
  "--backend",
  "scripted",
  "--script",
  "answers.json",
];

Deno.test({
  name:
    "a PostgreSQL server stopped mid-run: RUN_STORE_TIMEOUT within the statement timeout, then --resume completes",
  ignore,
  async fn() {
    const { userDir, url } = await userFolder("frozen_timeout");
    try {
      const child = spawnCli("run-agent", [
        "--store",
        `${url}?statement_timeout=1000&connect_timeout=1`,
        ...RUN,
      ], {
        userDir,
      });
      await firstIterationCommitted(url, child);
      await cluster!.freeze();
      const result = await finish(child);
      cluster!.thaw();
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /did not (answer a statement|accept a connection) within 1 s/);
      assert.match(result.stderr, /pg_isready -h 127\.0\.0\.1 -p \d+/);
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
      const runId = /run (\S+) started/.exec(result.stderr)![1];
      // The server runs again: the run resumes from its last committed iteration and completes.
      const resumed = await finish(
        spawnCli("run-agent", [
          "--store",
          url,
          "--agent",
          "tiny",
          "--backend",
          "scripted",
          "--script",
          "answers.json",
          "--resume",
          runId,
        ], { userDir }),
      );
      assert.equal(resumed.code, 0, resumed.stderr + resumed.stdout);
      assert.match(resumed.stdout, /done/);
    } finally {
      cluster!.thaw();
      await Deno.remove(userDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a PostgreSQL server stopped mid-run: Ctrl-C while the run waits for it quits at once",
  ignore,
  async fn() {
    const { userDir, url } = await userFolder("frozen_interrupt");
    try {
      // Default timeouts (30 s per statement): only the Ctrl-C can end the wait this soon.
      const child = spawnCli("run-agent", ["--store", url, ...RUN], { userDir });
      await firstIterationCommitted(url, child);
      await cluster!.freeze();
      // The Ctrl-C cancels the slow answer in flight; the run's save of its state then waits on
      // the frozen server, and the command must not wait for it.
      const sent = performance.now();
      child.kill("SIGINT");
      const result = await finish(child);
      const took = performance.now() - sent;
      cluster!.thaw();
      assert.equal(result.code, 130, result.stderr);
      assert.ok(took < 5_000, `quit ${Math.round(took)} ms after Ctrl-C`);
      assert.match(result.stderr, /has not answered/);
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
    } finally {
      cluster!.thaw();
      await Deno.remove(userDir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a PostgreSQL server stopped while a worker drives a run: SIGTERM quits at once",
  ignore,
  async fn() {
    const { userDir, url } = await userFolder("frozen_worker");
    try {
      const submitted = await finish(
        spawnCli("run-agent", ["--store", url, "--agent", "tiny", "--topic", "x", "--submit"], {
          userDir,
        }),
      );
      assert.equal(submitted.code, 0, submitted.stderr);
      const worker = spawnCli("worker", [
        "--store",
        url,
        "--script",
        `${userDir}/answers.json`,
        "--poll-ms",
        "100",
      ], { userDir });
      await firstIterationCommitted(url, worker);
      await cluster!.freeze();
      // A graceful stop commits the iteration in flight: against a frozen server it cannot, and
      // the worker must not wait out the statement timeout for it.
      const sent = performance.now();
      worker.kill("SIGTERM");
      const result = await finish(worker);
      const took = performance.now() - sent;
      cluster!.thaw();
      assert.equal(result.code, 143, result.stderr);
      assert.ok(took < 8_000, `quit ${Math.round(took)} ms after SIGTERM`);
      assert.match(result.stderr, /has not answered/);
      assert.ok(!hasStackTrace(result.stderr), result.stderr);
    } finally {
      cluster!.thaw();
      await Deno.remove(userDir, { recursive: true });
    }
  },
});

if (cluster) globalThis.addEventListener("unload", () => cluster.stopSync());
