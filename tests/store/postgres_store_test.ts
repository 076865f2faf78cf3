/**
 * PostgresRunStore against a real PostgreSQL server: one commit per iteration, leases (a live one
 * is never stolen, a crashed holder's expires, a stalled holder is fenced off), migrations applied
 * once under concurrency, retention, and the change check before a resume.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { openPgConnection, PG_SCHEMA_VERSION } from "../../src/store/pg_connection.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import type { RunCheckpoint } from "../../src/store/types.ts";
import { REPO, waitFor } from "./helpers.ts";
import { freshSchema, pg } from "./pg_server.ts";

const ignore = pg === undefined;
const url = pg?.url ?? "";

function checkpoint(
  runId: string,
  logEntries: number,
  status: RunCheckpoint["status"] = "running",
  startedAt = "2026-01-01T00:00:00.000Z",
): RunCheckpoint {
  return {
    version: 1,
    runId,
    agent: "demo",
    status,
    startedAt,
    updatedAt: new Date().toISOString(),
    logEntries,
    state: { historyLength: logEntries, iteration: logEntries },
  };
}

const entry = (runId: string, type: string) => ({ ts: new Date().toISOString(), runId, type });

async function code(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (error instanceof StepflowError) return error.code;
    throw error;
  }
}

/** A holder process (tests/store/fixtures/pg_holder.ts) that has taken the run's lease. */
async function startHolder(schema: string, runId: string, leaseMs: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      join(REPO, "tests/store/fixtures/pg_holder.ts"),
      url,
      schema,
      runId,
      String(leaseMs),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextLine = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`holder exited; output so far: ${buffered}`);
      buffered += value;
    }
    const i = buffered.indexOf("\n");
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    return line;
  };
  assert.equal(await nextLine(), "locked");
  const writer = child.stdin.getWriter();
  return {
    child,
    nextLine,
    send: (line: string) => writer.write(new TextEncoder().encode(`${line}\n`)),
    async end() {
      // Kill first: closing stdin first lets the holder see EOF and close the store cleanly
      // (releasing the lease writes its buffered entries), which is not the crash under test.
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await child.status;
      await writer.close().catch(() => {});
      await lines.cancel().catch(() => {});
    },
  };
}

Deno.test({
  name: "postgres store: an iteration's entries and checkpoint commit together",
  ignore,
  async fn() {
    const store = new PostgresRunStore(url, { schema: freshSchema(), agent: "demo" });
    try {
      const lock = await store.lock("r1");
      await store.append("r1", entry("r1", "run_start"));
      await store.saveCheckpoint(checkpoint("r1", 1));
      await store.append("r1", entry("r1", "step_start"));
      await store.append("r1", entry("r1", "step_end"));
      // Buffered until the checkpoint: not visible, not durable.
      assert.deepEqual((await store.readLog("r1")).map((e) => e.type), ["run_start"]);
      await store.saveCheckpoint(checkpoint("r1", 3));
      assert.deepEqual((await store.readLog("r1")).map((e) => e.type), [
        "run_start",
        "step_start",
        "step_end",
      ]);
      assert.equal((await store.loadCheckpoint("r1"))?.logEntries, 3);
      const [listed] = await store.list();
      assert.equal(listed.runId, "r1");
      assert.equal(listed.live, true);
      assert.equal(listed.worker, store.owner);
      await lock.release();
      const [after] = await store.list();
      assert.equal(after.live, false);
      assert.equal(after.worker, undefined);
      assert.equal(await store.loadCheckpoint("unknown"), undefined);
      assert.deepEqual(await store.readLog("unknown"), []);
      assert.equal(await code(store.append("r1", entry("r1", "x"))), "RUN_NOT_LOCKED");
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name: "postgres store: a process killed between checkpoints loses only the uncommitted iteration",
  ignore,
  async fn() {
    const schema = freshSchema();
    const holder = await startHolder(schema, "r1", 5_000);
    await holder.send("commit");
    assert.equal(await holder.nextLine(), "committed");
    await holder.send("append");
    assert.equal(await holder.nextLine(), "appended");
    await holder.end(); // SIGKILL: whatever it had buffered is gone, the commits are not
    const store = new PostgresRunStore(url, { schema });
    try {
      assert.deepEqual((await store.readLog("r1")).map((e) => e.type), ["run_start", "step_end"]);
      assert.equal((await store.loadCheckpoint("r1"))?.state.n, 2);
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name: "postgres store: a live lease is never stolen, a crashed holder's lease expires",
  ignore,
  async fn() {
    const schema = freshSchema();
    const leaseMs = 400;
    const holder = await startHolder(schema, "r1", leaseMs);
    const warnings: string[] = [];
    const store = new PostgresRunStore(url, {
      schema,
      leaseMs,
      onWarning: (m) => warnings.push(m),
    });
    try {
      // Connected and the schema created first: on a busy machine that alone can take longer
      // than the window below, which must watch the holder's heartbeat, not this setup.
      await store.list();
      // Three lease lengths and six attempts at least: the holder's heartbeat keeps it; every
      // attempt is refused by name.
      const until = Date.now() + 3 * leaseMs;
      let attempts = 0;
      while (Date.now() < until || attempts <= 5) {
        const error = await store.lock("r1").then(() => undefined, (e) => e);
        assert.ok(error instanceof StepflowError, "a live lease was taken");
        assert.equal(error.code, "RUN_LOCKED");
        assert.match(error.message, /holder-\d+/);
        attempts++;
        await new Promise((r) => setTimeout(r, 50));
      }
      const [live] = await store.list().then((l) => l.filter((s) => s.runId === "r1"));
      assert.equal(live.live, true);
      assert.match(live.worker ?? "", /^holder-/);

      holder.child.kill("SIGKILL");
      await holder.child.status;
      // Still leased right after the crash…
      assert.equal(await code(store.lock("r1")), "RUN_LOCKED");
      // …and free once the lease ran out.
      const crashedAt = Date.now();
      const lock = await waitFor("the crashed holder's lease to expire", () => store.lock("r1"));
      assert.ok(Date.now() - crashedAt <= leaseMs + 1_000, "the lease outlived its length");
      assert.ok(warnings.some((w) => /took over the lease of holder-\d+/.test(w)), warnings.join());
      await lock.release();
    } finally {
      await holder.end();
      await store.close();
    }
  },
});

Deno.test({
  name: "postgres store: a stalled holder whose lease was taken over cannot commit (fencing)",
  ignore: ignore || Deno.build.os === "windows",
  async fn() {
    const schema = freshSchema();
    const leaseMs = 300;
    const holder = await startHolder(schema, "r1", leaseMs);
    const store = new PostgresRunStore(url, { schema, leaseMs, onWarning: () => {} });
    try {
      holder.child.kill("SIGSTOP");
      const lock = await waitFor("the stalled holder's lease to expire", () => store.lock("r1"));
      await store.append("r1", entry("r1", "step_end"));
      await store.saveCheckpoint(checkpoint("r1", 3));
      holder.child.kill("SIGCONT");
      await holder.send("commit");
      assert.equal(await holder.nextLine(), "RUN_LOCK_LOST");
      // Only the new holder's iteration is recorded.
      assert.deepEqual((await store.readLog("r1")).map((e) => e.type), ["run_start", "step_end"]);
      assert.equal((await store.loadCheckpoint("r1"))?.logEntries, 3);
      await lock.release();
    } finally {
      await holder.end();
      await store.close();
    }
  },
});

Deno.test({
  name: "postgres store: migrations run once when several processes start at once",
  ignore,
  async fn() {
    const schema = freshSchema();
    // Separate pools (different sizes) behave like separate processes.
    const connections = await Promise.all(
      [2, 3, 4, 5].map((maxConnections) => openPgConnection(url, { schema, maxConnections })),
    );
    try {
      const rows = (await connections[0].query<{ version: number }>(
        `SELECT version FROM "${schema}".migrations ORDER BY version`,
      )).rows;
      // Each version once, in order.
      assert.deepEqual(
        rows.map((r) => r.version),
        Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => i + 1),
      );
    } finally {
      for (const c of connections) await c.close();
    }
  },
});

Deno.test({
  name: "postgres store: maxRuns keeps the newest runs and never deletes open ones",
  ignore,
  async fn() {
    const schema = freshSchema();
    const store = new PostgresRunStore(url, { schema, agent: "demo", onWarning: () => {} });
    try {
      const statuses = ["completed", "running", "failed", "completed", "completed"] as const;
      for (const [i, status] of statuses.entries()) {
        const runId = `r${i}`;
        const lock = await store.lock(runId);
        await store.append(runId, entry(runId, "run_start"));
        await store.saveCheckpoint(
          checkpoint(runId, 1, status, `2026-01-0${i + 1}T00:00:00.000Z`),
        );
        await lock.release();
      }
      const pruning = new PostgresRunStore(url, { schema, agent: "demo", maxRuns: 2 });
      const lock = await pruning.lock("r9"); // counts as one of the kept
      await lock.release();
      await pruning.close();
      // Kept: r9 (new, no checkpoint: removed at release), r4; r1 is open; r0, r2, r3 go.
      assert.deepEqual((await store.list()).map((s) => s.runId), ["r4", "r1"]);
      assert.deepEqual(await store.readLog("r0"), []);
    } finally {
      await store.close();
    }
  },
});

Deno.test({
  name: "postgres store: a run that moved on since it was loaded is not continued (RUN_CHANGED)",
  ignore,
  async fn() {
    const schema = freshSchema();
    const a = new PostgresRunStore(url, { schema, owner: "a" });
    const b = new PostgresRunStore(url, { schema, owner: "b" });
    try {
      const lock = await a.lock("r1");
      await a.append("r1", entry("r1", "run_start"));
      await a.saveCheckpoint(checkpoint("r1", 1));
      await lock.release();
      await b.loadCheckpoint("r1");
      const again = await a.lock("r1");
      await a.append("r1", entry("r1", "step_end"));
      await a.saveCheckpoint(checkpoint("r1", 2));
      await again.release();
      assert.equal(await code(b.lock("r1")), "RUN_CHANGED");
      assert.equal(await code(b.lock("r1")), "ok");
    } finally {
      await a.close();
      await b.close();
    }
  },
});

Deno.test({
  name: "postgres store: an unreachable server is a clear RUN_STORE_UNAVAILABLE",
  async fn() {
    // A closed port: bind one, close it, connect there.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const store = new PostgresRunStore(`postgres://someone:secret@127.0.0.1:${port}/db`);
    const error = await store.list().then(() => undefined, (e) => e);
    assert.ok(error instanceof StepflowError);
    assert.equal(error.code, "RUN_STORE_UNAVAILABLE");
    assert.match(error.message, /postgres:\/\/someone:\*\*\*@127\.0\.0\.1/);
    assert.doesNotMatch(error.message, /secret/);
    await store.close();
  },
});
