import assert from "node:assert/strict";
import { join } from "node:path";
import { FileRunStore } from "../../src/store/file.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { readLogFrom, type RunLogEntry, type RunStore } from "../../src/store/types.ts";

const entry = (runId: string, n: number): RunLogEntry => ({
  ts: "2026-01-01T00:00:00.000Z",
  runId,
  type: "step_end",
  iteration: n,
});
const iterations = (entries: RunLogEntry[]) => entries.map((e) => e.iteration);

Deno.test("FileRunStore.readLogFrom: reads only what was appended since, complete lines only", async () => {
  const dir = await Deno.makeTempDir();
  const store = new FileRunStore(dir, { durability: "process" });
  const lock = await store.lock("r1");
  for (let i = 1; i <= 3; i++) await store.append("r1", entry("r1", i));
  assert.deepEqual(iterations(await store.readLogFrom("r1", 0)), [1, 2, 3]);
  assert.deepEqual(iterations(await store.readLogFrom("r1", 3)), []);
  await store.append("r1", entry("r1", 4));
  assert.deepEqual(iterations(await store.readLogFrom("r1", 3)), [4]);
  assert.deepEqual(iterations(await store.readLogFrom("r1", 2)), [3, 4]); // behind the offset
  // A line still being written is not returned until it is complete.
  const log = join(dir, "r1.jsonl");
  const line = JSON.stringify(entry("r1", 5));
  await Deno.writeTextFile(log, line.slice(0, 10), { append: true });
  assert.deepEqual(iterations(await store.readLogFrom("r1", 4)), []);
  await Deno.writeTextFile(log, line.slice(10) + "\n", { append: true });
  assert.deepEqual(iterations(await store.readLogFrom("r1", 4)), [5]);
  await lock.release();
  // A log replaced by a shorter one is read again from the start.
  await Deno.writeTextFile(log, JSON.stringify(entry("r1", 9)) + "\n");
  assert.deepEqual(iterations(await store.readLogFrom("r1", 0)), [9]);
  assert.deepEqual(await store.readLogFrom("unknown", 0), []);
});

Deno.test("readLogFrom: memory store, and the fallback for a store without it", async () => {
  const memory = new MemoryRunStore();
  for (let i = 1; i <= 3; i++) await memory.append("r", entry("r", i));
  assert.deepEqual(iterations(await readLogFrom(memory, "r", 1)), [2, 3]);
  const bare: RunStore = {
    append: (id, e) => memory.append(id, e),
    saveCheckpoint: (c) => memory.saveCheckpoint(c),
    loadCheckpoint: (id) => memory.loadCheckpoint(id),
    readLog: (id) => memory.readLog(id),
    lock: (id) => memory.lock(id),
    list: () => memory.list(),
  };
  assert.deepEqual(iterations(await readLogFrom(bare, "r", 2)), [3]);
});

Deno.test("FileRunStore.list: re-reads a checkpoint only when it changed", async () => {
  const dir = await Deno.makeTempDir();
  const store = new FileRunStore(dir, { durability: "process" });
  const lock = await store.lock("r1");
  const checkpoint = {
    version: 1 as const,
    runId: "r1",
    agent: "a",
    status: "running" as const,
    startedAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:01.000Z",
    logEntries: 0,
    state: { iteration: 1 },
  };
  await store.saveCheckpoint(checkpoint);
  assert.equal((await store.list())[0].iterations, 1);
  await store.saveCheckpoint({ ...checkpoint, status: "completed", state: { iteration: 22 } });
  const [after] = await store.list();
  assert.equal(after.iterations, 22);
  assert.equal(after.status, "completed");
  await lock.release();
  // A corrupt checkpoint is reported, not served from the cache.
  await Deno.writeTextFile(join(dir, "r1.checkpoint.json"), "{oops");
  const [broken] = await store.list();
  assert.match(broken.problem ?? "", /corrupt/);
});
