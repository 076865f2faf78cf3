/**
 * The run queue's wake-ups on a real PostgreSQL: an idle slot with an hour's poll takes a queued
 * run because the send's notification woke it; when its listening connection is killed by the
 * server (`pg_terminate_backend`), the queue says so, reopens it, and wakes again; with `listen:
 * false` (or any lost notification) the poll alone still takes the run.
 */
import assert from "node:assert/strict";
import { openRunQueue } from "../../src/worker/queue.ts";
import { waitFor } from "../store/helpers.ts";
import { freshSchema, pg } from "../store/pg_server.ts";

const HOUR = 3_600_000;

/** Terminates the queue's listening connections (as a server restart or a proxy would). */
async function killListeners(url: string): Promise<number> {
  const { Client } = await import("pg");
  const admin = new Client({ connectionString: url });
  await admin.connect();
  try {
    const { rows } = await admin.query(
      `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
       WHERE application_name = 'stepflow-queue-listen' AND datname = current_database()`,
    );
    return rows.length;
  } finally {
    await admin.end();
  }
}

Deno.test({
  name: "run queue: a notification wakes an idle slot; a killed listening connection is reopened",
  ignore: pg === undefined,
  async fn() {
    const schema = freshSchema();
    const warnings: string[] = [];
    const taken: string[] = [];
    const sender = await openRunQueue(pg!.url, { schema, onWarning: () => {} });
    const worker = await openRunQueue(pg!.url, {
      schema,
      pollMs: HOUR,
      onWarning: (m) => void warnings.push(m),
    });
    try {
      await worker.work(1, (runId) => {
        taken.push(runId);
        return Promise.resolve();
      });
      await sender.send("first");
      await waitFor(
        "the first run taken",
        () => Promise.resolve(taken.includes("first") || undefined),
      );

      assert.ok(await killListeners(pg!.url) >= 1, "a listening connection existed");
      await waitFor(
        "the queue to notice",
        () => Promise.resolve(warnings.find((w) => /listening for queued runs/.test(w))),
      );
      // Reopened (1 s backoff): every idle slot looks once, then notifications wake it again.
      await waitFor("the listener back", async () => {
        const { Client } = await import("pg");
        const admin = new Client({ connectionString: pg!.url });
        await admin.connect();
        try {
          const { rows } = await admin.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE application_name = 'stepflow-queue-listen' AND datname = current_database()`,
          );
          return rows[0].n > 0 ? true : undefined;
        } finally {
          await admin.end();
        }
      });
      await sender.send("second");
      await waitFor(
        "the second run taken",
        () => Promise.resolve(taken.includes("second") || undefined),
      );
    } finally {
      await worker.stop({ graceful: false });
      await sender.stop({ graceful: false });
    }
  },
});

Deno.test({
  name: "run queue: without notifications the poll alone takes a queued run",
  ignore: pg === undefined,
  async fn() {
    const schema = freshSchema();
    const taken: string[] = [];
    const sender = await openRunQueue(pg!.url, { schema, onWarning: () => {} });
    const worker = await openRunQueue(pg!.url, {
      schema,
      pollMs: 200,
      listen: false,
      onWarning: () => {},
    });
    try {
      await worker.work(1, (runId) => {
        taken.push(runId);
        return Promise.resolve();
      });
      await sender.send("polled");
      await waitFor(
        "the run taken by a poll",
        () => Promise.resolve(taken.includes("polled") || undefined),
      );
    } finally {
      await worker.stop({ graceful: false });
      await sender.stop({ graceful: false });
    }
  },
});
