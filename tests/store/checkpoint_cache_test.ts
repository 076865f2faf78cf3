/**
 * The `"fsync"` file store's checkpoint file is a cache of the run log's last `store_checkpoint`
 * line: written at a process's first checkpoint, every `cacheEvery` checkpoints, when the status
 * leaves `running` and at release — never per iteration — and caught up from, or rebuilt from, the
 * log when it is stale, missing or torn. (Crashes of a real process: crash_test.ts.)
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { FileRunStore, type FileRunStoreOptions } from "../../src/store/file.ts";
import type { RunCheckpoint, RunStatus } from "../../src/store/types.ts";

const TS = "2026-01-01T00:00:00.000Z";

function checkpoint(n: number, status: RunStatus = "running"): RunCheckpoint {
  return {
    version: 1,
    runId: "r1",
    agent: "demo",
    status,
    startedAt: TS,
    updatedAt: `2026-01-01T00:${String(n).padStart(2, "0")}:00.000Z`,
    logEntries: n,
    state: { historyLength: n - 1, usage: { inputTokens: n, outputTokens: 1, calls: n } },
  };
}

async function tempStore(options: FileRunStoreOptions = {}) {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-cache-" });
  const warnings: string[] = [];
  const store = new FileRunStore(dir, { onWarning: (m) => void warnings.push(m), ...options });
  const files = store.files("r1");
  return { dir, store, warnings, files };
}

/** One iteration as the runner records it: its entry, then its checkpoint. */
async function iteration(store: FileRunStore, n: number, status: RunStatus = "running") {
  const type = n === 1 ? "run_start" : "step_end";
  await store.append("r1", { ts: TS, runId: "r1", type, iteration: n - 1 });
  await store.saveCheckpoint(checkpoint(n, status));
}

/** The checkpoint file as written: its JSON and its inode + mtime. */
function cacheFile(path: string): { json: Record<string, unknown>; id: string } {
  const info = Deno.statSync(path);
  return {
    json: JSON.parse(Deno.readTextFileSync(path)),
    id: `${info.ino}:${info.mtime?.getTime()}`,
  };
}

Deno.test("fsync: the cache is written at the first checkpoint and at release, not per iteration", async () => {
  const { store, files } = await tempStore();
  const lock = await store.lock("r1");
  await iteration(store, 1);
  const first = cacheFile(files.checkpoint);
  assert.equal(first.json.logEntries, 1);
  // The cache records where in the log it was taken.
  assert.equal(first.json.storeLogBytes, Deno.statSync(files.log).size);
  for (let n = 2; n <= 6; n++) await iteration(store, n);
  assert.deepEqual(cacheFile(files.checkpoint), first, "iterations leave the cache alone");

  // Readers catch up from the log while the run is driven.
  const reader = new FileRunStore(store.dir);
  assert.deepEqual(await reader.loadCheckpoint("r1"), checkpoint(6));
  const [summary] = await reader.list();
  assert.equal(summary.steps, 5);
  assert.equal(summary.live, true);

  await lock.release();
  const last = cacheFile(files.checkpoint);
  assert.equal(last.json.logEntries, 6);
  assert.equal(last.json.storeLogBytes, Deno.statSync(files.log).size);
  // The log position is the store's own: never part of the checkpoint readers get.
  assert.deepEqual(await reader.loadCheckpoint("r1"), checkpoint(6));
  assert.equal(Object.hasOwn((await reader.loadCheckpoint("r1"))!, "storeLogBytes"), false);
  await assert.rejects(Deno.stat(files.checkpointTemp), Deno.errors.NotFound);
});

Deno.test("fsync: the cache is rewritten every cacheEvery checkpoints and when the run leaves running", async () => {
  const { store, files } = await tempStore({ cacheEvery: 3 });
  const lock = await store.lock("r1");
  const cached: number[] = [];
  for (let n = 1; n <= 8; n++) {
    await iteration(store, n);
    cached.push(cacheFile(files.checkpoint).json.logEntries as number);
  }
  assert.deepEqual(cached, [1, 1, 1, 4, 4, 4, 7, 7]);
  await iteration(store, 9, "paused");
  assert.equal(cacheFile(files.checkpoint).json.status, "paused", "a pause is cached at once");
  await lock.release();
  assert.throws(
    () => new FileRunStore(store.dir, { cacheEvery: 0 }),
    (e) => e instanceof StepflowError && e.code === "STORE_OPTION_INVALID",
  );
});

Deno.test("fsync: a stale cache is caught up from the log, a missing one rebuilt", async () => {
  const { store, files } = await tempStore();
  let lock = await store.lock("r1");
  for (let n = 1; n <= 3; n++) await iteration(store, n);
  await lock.release();
  const stale = Deno.readTextFileSync(files.checkpoint);
  lock = await store.lock("r1");
  for (let n = 4; n <= 7; n++) await iteration(store, n);
  await lock.release();

  // A cache older than the log (restored from a backup, or one a crash left behind).
  Deno.writeTextFileSync(files.checkpoint, stale);
  const reader = new FileRunStore(store.dir);
  assert.deepEqual(await reader.loadCheckpoint("r1"), checkpoint(7));
  assert.equal((await reader.list())[0].steps, 6);

  Deno.removeSync(files.checkpoint);
  assert.deepEqual(await reader.loadCheckpoint("r1"), checkpoint(7));
  assert.equal((await reader.list())[0].steps, 6);
  // The next process to drive the run writes the cache again.
  lock = await store.lock("r1");
  await iteration(store, 8, "completed");
  await lock.release();
  assert.equal(cacheFile(files.checkpoint).json.logEntries, 8);
});

Deno.test("fsync: a torn cache is rebuilt from the log, with a warning", async () => {
  const { store, files, warnings } = await tempStore();
  const lock = await store.lock("r1");
  for (let n = 1; n <= 4; n++) await iteration(store, n);
  await lock.release();
  // A power cut can leave an unflushed cache empty or cut short.
  for (const torn of ["", Deno.readTextFileSync(files.checkpoint).slice(0, 50)]) {
    Deno.writeTextFileSync(files.checkpoint, torn);
    warnings.length = 0;
    assert.deepEqual(await store.loadCheckpoint("r1"), checkpoint(4));
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0],
      /Checkpoint .*r1\.checkpoint\.json is corrupt: .* The file is only a cache of the run log's checkpoints: the run continues from the log's last one \(4 entries, 2026-01-01T00:04:00\.000Z\)\./,
    );
    const [summary] = await store.list();
    assert.equal(summary.problem, undefined);
    assert.equal(summary.steps, 3);
  }
});

Deno.test("fsync: a torn cache of a log without checkpoint lines is still an error", async () => {
  const { store, files } = await tempStore();
  Deno.writeTextFileSync(files.log, `{"ts":"${TS}","runId":"r1","type":"run_start"}\n`);
  Deno.writeTextFileSync(files.checkpoint, '{"version":1,');
  await assert.rejects(
    store.loadCheckpoint("r1"),
    (e) => e instanceof StepflowError && e.code === "RUN_CHECKPOINT_CORRUPT",
  );
});

Deno.test("fsync: a dashboard listing shows a driven run's progress though the directory is untouched", async () => {
  const { store } = await tempStore();
  const dashboard = new FileRunStore(store.dir, { listSettledFromCache: true });
  const lock = await store.lock("r1");
  await iteration(store, 1);
  // The directory's last change is "old", so the dashboard trusts its listing of it.
  const old = new Date(Date.now() - 60_000);
  Deno.utimeSync(store.dir, old, old);
  assert.equal((await dashboard.list())[0].steps, 0);
  for (let n = 2; n <= 5; n++) await iteration(store, n);
  assert.equal(Deno.statSync(store.dir).mtime?.getTime(), old.getTime());
  assert.equal((await dashboard.list())[0].steps, 4);
  await lock.release();
});

Deno.test("a finished run whose redrive died before its first cache write is listed from its log", async () => {
  const { store, files } = await tempStore();
  const lock = await store.lock("r1");
  for (let n = 1; n <= 2; n++) await iteration(store, n, n === 2 ? "completed" : "running");
  await lock.release();
  const reader = new FileRunStore(store.dir);
  assert.equal((await reader.list())[0].status, "completed");
  // What a redrive killed right after its first flush leaves: a lock file, and a log that moved
  // on past the (settled) cache.
  const moved = { ...checkpoint(4), state: { historyLength: 3 } };
  Deno.writeTextFileSync(
    files.log,
    `{"ts":"${TS}","runId":"r1","type":"run_redrive"}\n` +
      `{"ts":"${TS}","runId":"r1","type":"step_end"}\n` +
      `${JSON.stringify({ ts: TS, runId: "r1", type: "store_checkpoint", checkpoint: moved })}\n`,
    { append: true },
  );
  Deno.writeTextFileSync(files.lock, JSON.stringify({ runId: "r1", pid: 2 ** 22, host: "gone" }));
  const [summary] = await reader.list();
  assert.equal(summary.status, "running");
  assert.equal(summary.steps, 3);
  assert.deepEqual(await reader.loadCheckpoint("r1"), moved);
});

Deno.test("process: the checkpoint file is the checkpoint, replaced every iteration", async () => {
  const { store, files } = await tempStore({ durability: "process" });
  const lock = await store.lock("r1");
  for (let n = 1; n <= 3; n++) {
    await iteration(store, n);
    const cache = cacheFile(files.checkpoint).json;
    assert.equal(cache.logEntries, n);
    assert.equal(Object.hasOwn(cache, "storeLogBytes"), false);
  }
  await lock.release();
  assert.equal(Deno.readTextFileSync(files.log).includes("store_checkpoint"), false);
  assert.deepEqual(await store.loadCheckpoint("r1"), checkpoint(3));
  assert.equal(join(store.dir, "r1.checkpoint.json"), files.checkpoint);
});
