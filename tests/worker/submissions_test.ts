/**
 * The worker queue's bookkeeping on the PostgreSQL store's rows (src/worker/submissions.ts):
 * submissions, jobs taken, runs given up, orphans re-queued. Needs PostgreSQL (a throwaway cluster
 * is started when STEPFLOW_TEST_PG_URL is unset).
 */
import assert from "node:assert/strict";
import { pgConnectionOf, PostgresRunStore } from "../../src/store/postgres.ts";
import {
  claimOrphans,
  clearRerunPermission,
  markGivenUp,
  markHeld,
  markTaken,
  recordSubmission,
  releaseHeld,
  rerunPermissionOf,
  submissionOf,
} from "../../src/worker/submissions.ts";
import { waitFor } from "../store/helpers.ts";
import { freshSchema, pg } from "../store/pg_server.ts";

const ignore = pg === undefined;
const url = pg?.url ?? "";

Deno.test({
  name:
    "queue bookkeeping: a queued run whose worker died between fetching its job and marking it taken is claimed again",
  ignore,
  async fn() {
    const store = new PostgresRunStore(url, { schema: freshSchema(), leaseMs: 300 });
    try {
      // A submitted run that a worker fetched and never marked taken: queued, no lease at all.
      await recordSubmission(store, { runId: "r1", agent: "demo", agentHash: "h", request: {} });
      assert.deepEqual(await claimOrphans(store), [], "not before a lease period has passed");
      const claimed = await waitFor("a lease period", async () => {
        const runs = await claimOrphans(store);
        return runs.length > 0 ? runs : undefined;
      });
      assert.deepEqual(claimed, ["r1"]);
      assert.deepEqual(await claimOrphans(store), [], "claimed once per lease period");
      // A run a worker marked taken waits for that expiry instead.
      await recordSubmission(store, { runId: "r2", agent: "demo", agentHash: "h", request: {} });
      await new Promise((r) => setTimeout(r, 400));
      await markTaken(store, "r2");
      assert.ok(!(await claimOrphans(store)).includes("r2"));
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name:
    "queue bookkeeping: a started orphan taken from the queue is claimed again a lease period after the take; a run the caller drives is never its orphan",
  ignore,
  async fn() {
    const store = new PostgresRunStore(url, {
      schema: freshSchema(),
      leaseMs: 300,
      onWarning: () => {}, // the lease of the dead worker taken over below
    });
    try {
      await recordSubmission(store, { runId: "r1", agent: "demo", agentHash: "h", request: {} });
      // Started by a worker that died: running, its lease expired a second ago.
      const c = await pgConnectionOf(store);
      await c.query(
        `UPDATE ${c.schema}.runs SET status = 'running', lease_owner = 'gone:1',
           lease_expires_at = clock_timestamp() - interval '1 second' WHERE run_id = 'r1'`,
      );
      // The worker driving it (between taking its job and its lease) does not claim it.
      assert.deepEqual(await claimOrphans(store, 100, ["r1"]), []);
      assert.deepEqual(await claimOrphans(store), ["r1"]);
      assert.deepEqual(await claimOrphans(store), [], "claimed once per lease period");
      // Its job waited in the queue longer than a lease period; a worker takes it now: the take
      // gives that worker a lease period to take the lease, as a queued run's expiry does.
      await c.query(
        `UPDATE ${c.schema}.runs SET requeued_at = clock_timestamp() - interval '1 second'
           WHERE run_id = 'r1'`,
      );
      await markTaken(store, "r1");
      assert.deepEqual(await claimOrphans(store), [], "not claimed again at the take");
      const claimed = await waitFor("a lease period after the take", async () => {
        const runs = await claimOrphans(store);
        return runs.length > 0 ? runs : undefined;
      });
      assert.deepEqual(claimed, ["r1"], "the taker died before its lease: claimed again");
      // A live lease is left alone: the take of a duplicate job records nothing.
      const lock = await store.lock("r1");
      const before = (await c.query<{ at: string }>(
        `SELECT requeued_at::text AS at FROM ${c.schema}.runs WHERE run_id = 'r1'`,
      )).rows[0].at;
      await markTaken(store, "r1");
      const after = (await c.query<{ at: string }>(
        `SELECT requeued_at::text AS at FROM ${c.schema}.runs WHERE run_id = 'r1'`,
      )).rows[0].at;
      assert.equal(after, before);
      await lock.release();
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name:
    "queue bookkeeping: a run the queue gave up is failed with its message everywhere and never re-queued",
  ignore,
  async fn() {
    const store = new PostgresRunStore(url, { schema: freshSchema(), leaseMs: 300 });
    const message =
      "the queue gave it up after 2 failed attempts (last: boom). No worker will take it again; fix the cause, then submit the run again (run-agent --submit).";
    try {
      for (const runId of ["r1", "r2", "r3"]) {
        await recordSubmission(store, { runId, agent: "demo", agentHash: "h", request: {} });
      }
      // r3 is driven by a live lease: the give-up of a stale job must not touch it.
      const lock = await store.lock("r3");
      assert.equal(await markGivenUp(store, "r3", message), false);
      await lock.release();
      assert.equal(await markGivenUp(store, "r1", message), true);
      assert.equal(await markGivenUp(store, "r1", message), false, "an ended run is left alone");
      assert.equal(await markGivenUp(store, "nobody", message), false);

      const summary = await store.summary("r1");
      assert.equal(summary?.status, "failed");
      assert.equal(summary?.error, message);
      assert.equal(summary?.live, undefined);
      const listed = (await store.list()).find((r) => r.runId === "r1");
      assert.deepEqual(listed, summary);
      const page = await store.listPage({ status: "failed", limit: 10 });
      assert.deepEqual(page.runs.map((r) => [r.runId, r.status, r.error]), [
        ["r1", "failed", message],
      ]);
      assert.equal((await store.listPage({ status: "queued", limit: 10 })).total, 2);
      const submitted = await submissionOf(store, "r1");
      assert.equal(submitted?.status, "failed");
      assert.equal(submitted?.givenUp, message);

      // A lease period later the other queued runs are orphans; the given-up one is not.
      const orphans = new Set<string>();
      await waitFor("a lease period", async () => {
        for (const runId of await claimOrphans(store)) orphans.add(runId);
        return orphans.size >= 2 || undefined;
      });
      assert.deepEqual([...orphans].sort(), ["r2", "r3"]);

      // A huge last error is cut, not stored whole.
      assert.equal(await markGivenUp(store, "r2", "x".repeat(100_000)), true);
      assert.equal((await store.summary("r2"))?.error?.length, 4_000);
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name:
    "queue bookkeeping: a rerun permission is read, not taken; a hold removes the one its drive saw and yields to one given since",
  ignore,
  async fn() {
    const store = new PostgresRunStore(url, { schema: freshSchema(), leaseMs: 300 });
    try {
      await recordSubmission(store, { runId: "r1", agent: "demo", agentHash: "h", request: {} });
      // Started by a worker that died: running, with two log lines.
      const c = await pgConnectionOf(store);
      await c.query(`UPDATE ${c.schema}.runs SET status = 'running' WHERE run_id = 'r1'`);
      await c.query(
        `INSERT INTO ${c.schema}.run_log (run_id, seq, entry) VALUES ('r1', 0, '{}'), ('r1', 1, '{}')`,
      );
      assert.equal(await rerunPermissionOf(store, "r1"), undefined);
      assert.equal(await markHeld(store, "r1", "held: why"), true);
      assert.equal((await submissionOf(store, "r1"))?.held, "held: why");
      // Handed back: the hold is cleared and the permission covers the calls started so far.
      assert.equal(await releaseHeld(store, "r1"), true);
      assert.equal((await submissionOf(store, "r1"))?.held, undefined);
      const seen = await rerunPermissionOf(store, "r1");
      assert.deepEqual(seen, { beforeLine: 2 });
      assert.deepEqual(await rerunPermissionOf(store, "r1"), seen, "reading does not take it");
      // A drive that saw no permission does not hold a run that has one now: its job resumes it.
      assert.equal(await markHeld(store, "r1", "held again"), false);
      assert.equal((await submissionOf(store, "r1"))?.held, undefined);
      // A drive that saw this permission and still stopped holds the run and removes it.
      assert.equal(await markHeld(store, "r1", "held again", seen), true);
      assert.equal(await rerunPermissionOf(store, "r1"), undefined);
      // A live lease blocks a hand-back; an ended-or-waiting run's permission is cleared once.
      const lock = await store.lock("r1");
      assert.equal(await releaseHeld(store, "r1"), false);
      await lock.release();
      assert.equal(await releaseHeld(store, "r1"), true);
      assert.equal(await clearRerunPermission(store, "r1"), true);
      assert.equal(await clearRerunPermission(store, "r1"), false);
      assert.equal(await rerunPermissionOf(store, "nobody"), undefined);
      // A value that is no permission (no line bound) covers nothing, and does not block a hold.
      await c.query(
        `UPDATE ${c.schema}.runs SET request = '{"rerunUnfinishedCall": true}' WHERE run_id = 'r1'`,
      );
      assert.equal(await rerunPermissionOf(store, "r1"), undefined);
      assert.equal(await markHeld(store, "r1", "held"), true);
      assert.equal(await clearRerunPermission(store, "r1"), false, "the hold removed it");
    } finally {
      await store.close();
    }
  },
});
