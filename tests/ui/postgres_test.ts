/**
 * The dashboard over the PostgreSQL store, against a real throwaway server (tests/store/pg_server.ts:
 * `STEPFLOW_TEST_PG_URL`, else a local cluster; CI fails without one): runs recorded by the real
 * runner, the runs list filtered and paged by SQL over thousands of runs, mixed with a file store,
 * the run page, the live stream, Cancel and Redrive through `run-agent` (chromium over this store:
 * tests/ui/browser_test.ts).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { hostName } from "../../src/store/file_lock.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { serveDashboard } from "../../src/ui/server.ts";
import { DashboardData, discoverStores } from "../../src/ui/source.ts";
import { recordSubmission } from "../../src/worker/submissions.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";
import { demoProject, FINISH, holdAt, reachingCall, runFlow } from "./fixtures.ts";

const ignore = pg === undefined;

/** `count` ended runs of agent `bulk` written straight into the tables, alternately completed/failed. */
async function insertBulkRuns(url: string, count: number): Promise<void> {
  const { Client } = await import("pg");
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO stepflow.runs (run_id, agent, status, started_at, updated_at, log_entries, checkpoint)
       SELECT id, 'bulk', st, ts, ts, 0, json_build_object('version', 1, 'runId', id, 'agent', 'bulk',
         'status', st, 'startedAt', ts, 'updatedAt', ts, 'logEntries', 0,
         'state', json_build_object('historyLength', 1, 'iteration', 1))
       FROM (SELECT 'bulk-' || lpad(n::text, 5, '0') AS id,
               CASE WHEN n % 2 = 0 THEN 'completed' ELSE 'failed' END AS st,
               to_char(timestamp '2026-01-01' + n * interval '1 second',
                 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ts
             FROM generate_series(1, $1::integer) AS n) g`,
      [count],
    );
  } finally {
    await client.end();
  }
}

/**
 * Two runs of issue-solver recorded `running` that nobody drives: `pg-left` holds no lease,
 * `pg-dead-holder` an unexpired lease of a process of this host that has exited.
 */
async function insertRunningRuns(url: string): Promise<void> {
  const exited = new Deno.Command(Deno.execPath(), { args: ["--version"], stdout: "null" }).spawn();
  await exited.status;
  const { Client } = await import("pg");
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO stepflow.runs (run_id, agent, status, started_at, updated_at, log_entries,
         checkpoint, lease_owner, lease_expires_at)
       SELECT id, 'issue-solver', 'running', ts, ts, 0, json_build_object('version', 1,
         'runId', id, 'agent', 'issue-solver', 'status', 'running', 'startedAt', ts,
         'updatedAt', ts, 'logEntries', 0, 'state', json_build_object()), owner,
         CASE WHEN owner IS NULL THEN NULL ELSE clock_timestamp() + interval '1 hour' END
       FROM (VALUES ('pg-left', '2026-01-01T00:00:00.000Z', NULL),
         ('pg-dead-holder', '2026-01-02T00:00:00.000Z', $1)) v(id, ts, owner)`,
      [`${hostName()}:${exited.pid}`],
    );
  } finally {
    await client.end();
  }
}

Deno.test({
  name: "dashboard over PostgreSQL: list filtered and paged by SQL, mixed stores, run page, live",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const url = await freshDatabase(pg!);
    const project = await demoProject();
    const writer = new PostgresRunStore(url, { agent: "issue-solver", onWarning: () => {} });
    try {
      assert.equal(
        (await runFlow({ ...project, store: writer }, { runId: "pg-ok" })).success,
        true,
      );
      await runFlow({ ...project, store: writer }, { runId: "pg-failed", failAt: 1 });
      await insertBulkRuns(url, 3000);

      const stores = await discoverStores(project.root, url);
      assert.equal(stores.length, 1);
      assert.equal(stores[0].runAgentStore, url);
      const data = new DashboardData({ cwd: project.root, stores });
      const page3 = await data.runPage({ agent: "bulk", status: "failed", page: 3, size: 50 });
      assert.equal(page3.total, 1500);
      assert.equal(page3.all, 3002);
      assert.deepEqual(page3.agents, ["bulk", "issue-solver"]);
      assert.equal(page3.runs.length, 50);
      // Newest first: failed runs are the odd numbers from 2999 down; page 3 starts at the 101st.
      assert.equal(page3.runs[0].runId, `bulk-${String(2999 - 2 * 100).padStart(5, "0")}`);
      assert.ok(page3.runs.every((r) => r.status === "failed" && r.agent === "bulk"));
      const past = await data.runPage({ agent: "bulk", status: "failed", page: 999, size: 50 });
      assert.equal(past.page, 30);
      assert.equal(past.runs.at(-1)?.runId, "bulk-00001");
      const first = await data.runPage({});
      assert.deepEqual(first.runs.slice(0, 2).map((r) => r.runId).sort(), ["pg-failed", "pg-ok"]);
      assert.equal((await data.summaryOf("pg-ok"))?.status, "completed");
      assert.equal(await data.summaryOf("nope"), undefined);

      // Without --store: the agent's file directory plus the store STEPFLOW_STORE names.
      await runFlow(project, { runId: "file-run" });
      const both = await discoverStores(project.root, undefined, {
        env: { STEPFLOW_STORE: url },
      });
      assert.deepEqual(both.map((s) => s.runAgentStore), [undefined, url]);
      const mixed = new DashboardData({ cwd: project.root, stores: both });
      const mixedPage = await mixed.runPage({ agent: "issue-solver", size: 2 });
      assert.equal(mixedPage.total, 3);
      assert.equal(mixedPage.runs[0].runId, "file-run");
      const second = await mixed.runPage({ agent: "issue-solver", size: 2, page: 2 });
      assert.equal(second.runs.length, 1);
      assert.equal(await mixed.storeOf("pg-ok"), both[1].store);

      const ui = serveDashboard({
        source: { cwd: project.root, stores },
        port: 0,
        liveIntervalMs: 50,
      });
      try {
        const api = await (await fetch(`${ui.url}api/runs?agent=issue-solver&status=failed`))
          .json();
        assert.deepEqual(api.runs.map((r: { runId: string }) => r.runId), ["pg-failed"]);
        const list = await (await fetch(`${ui.url}?agent=bulk&page=2&size=100`)).text();
        assert.match(list, /data-run="bulk-02900"/);
        const run = await (await fetch(`${ui.url}runs/pg-ok`)).text();
        assert.match(run, /class="row iteration/);
        assert.match(run, /<b>run_end<\/b> reason completed/);

        // A live run: the page gets a stream the server feeds from the run_log table. The run is
        // held before its second model call until the stream is open: the rows after it arrive
        // as events.
        using hold = holdAt(2);
        const live = runFlow({ ...project, store: writer }, {
          runId: "pg-live",
          continuations: 3,
          beforeAnswer: hold.beforeAnswer,
        });
        await hold.reached;
        assert.equal((await writer.summary("pg-live"))?.live, true);
        // The status filter is the status the list shows: a running run no live lease holds (none,
        // or one of a process of this host that is gone) is interrupted, not running.
        await insertRunningRuns(url);
        const shown = async (status: string) =>
          (await (await fetch(`${ui.url}api/runs?agent=issue-solver&status=${status}`)).json())
            .runs.map((r: { runId: string; status: string }) => r.runId);
        assert.deepEqual(await shown("running"), ["pg-live"]);
        assert.deepEqual(await shown("interrupted"), ["pg-dead-holder", "pg-left"]);
        const interrupted = await data.runPage({ status: "interrupted" });
        assert.deepEqual(interrupted.runs.map((r) => r.live), [false, false]);
        const page = await (await fetch(`${ui.url}runs/pg-live`)).text();
        const events = page.match(/data-live="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
        assert.ok(events, "a running run's page follows it");
        const stream = await fetch(new URL(events, ui.url));
        assert.equal(stream.headers.get("content-type"), "text/event-stream; charset=utf-8");
        hold.release();
        const text = await stream.text();
        assert.match(text, /event: rows/);
        assert.match(text, /event: end/);
        assert.equal((await live).success, true);

        // A run submitted to the worker queue and not started yet is listed as queued.
        await recordSubmission(writer, {
          runId: "pg-queued",
          agent: "issue-solver",
          agentHash: "h",
          request: {},
        });
        assert.equal((await fetch(`${ui.url}runs/%3Cscript%3E`)).status, 404);
        const queued = await (await fetch(`${ui.url}api/runs?status=queued`)).json();
        assert.deepEqual(queued.runs.map((r: { runId: string }) => r.runId), ["pg-queued"]);
        assert.match(await (await fetch(`${ui.url}?status=queued`)).text(), /data-run="pg-queued"/);
        assert.equal((await fetch(`${ui.url}runs/pg-queued`)).status, 200);
      } finally {
        await ui.close();
      }
    } finally {
      await writer.close();
      for (const s of await discoverStores(project.root, url)) {
        await (s.store as PostgresRunStore).close();
      }
    }
  },
});

Deno.test({
  name: "dashboard over PostgreSQL: Cancel reaches the runner; Redrive runs run-agent on the store",
  ignore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const url = await freshDatabase(pg!);
    const project = await demoProject();
    await Deno.writeTextFile(join(project.root, "finish.json"), JSON.stringify(FINISH));
    const writer = new PostgresRunStore(url, { agent: "issue-solver", onWarning: () => {} });
    const stores = await discoverStores(project.root, url);
    const children: Deno.ChildProcess[] = [];
    const ui = serveDashboard({
      source: { cwd: project.root, stores },
      port: 0,
      actions: { runAgentArgs: ["--script", "finish.json"], onSpawn: (c) => void children.push(c) },
    });
    try {
      // The cancel request is a column of the run's row, taken once.
      await assert.rejects(
        writer.requestCancel("unknown"),
        (e) => e instanceof StepflowError && e.code === "RUN_NOT_FOUND",
      );
      // Its first model call hangs until cancelled; the runner asks for cancel every 25 ms.
      const started = reachingCall(1);
      const running = runFlow({ ...project, store: writer }, {
        runId: "pg-long",
        continuations: 3,
        delayMs: 30_000,
        cancelPollMs: 25,
        beforeAnswer: started.beforeAnswer,
      });
      await started.reached;
      assert.equal((await writer.summary("pg-long"))?.live, true);
      const page = await (await fetch(`${ui.url}runs/pg-long`)).text();
      const secret = page.match(/data-csrf="([0-9a-f]+)"/)?.[1];
      assert.ok(secret);
      const post = async (action: string) => {
        const res = await fetch(`${ui.url}runs/pg-long/${action}`, {
          method: "POST",
          headers: { "x-stepflow-csrf": secret, origin: new URL(ui.url).origin },
        });
        return { status: res.status, json: await res.json() };
      };
      const cancel = await post("cancel");
      assert.equal(cancel.status, 202, cancel.json.message);
      assert.equal((await running).completionReason, "cancelled");
      assert.equal((await writer.loadCheckpoint("pg-long"))?.status, "cancelled");
      assert.equal(await writer.takeCancelRequest("pg-long"), false, "taken once, by the runner");

      const redrive = await post("redrive");
      assert.ok(redrive.status === 202 || redrive.status === 200, redrive.json.message);
      assert.equal(children.length, 1);
      assert.equal((await children[0].status).code, 0);
      assert.equal((await writer.loadCheckpoint("pg-long"))?.status, "completed");
      assert.ok((await writer.readLog("pg-long")).some((e) => e.type === "run_redrive"));
    } finally {
      await ui.close();
      await writer.close();
      await (stores[0].store as PostgresRunStore).close();
    }
  },
});
