import assert from "node:assert/strict";
import { join } from "node:path";
import { FileRunStore } from "../../src/store/file.ts";
import type { RunCheckpoint, RunStatus } from "../../src/store/types.ts";

async function record(store: FileRunStore, runId: string, status: RunStatus, day: number) {
  const lock = await store.lock(runId);
  const startedAt = `2026-01-${String(day).padStart(2, "0")}T00:00:00.000Z`;
  await store.append(runId, { ts: startedAt, runId, type: "run_start" });
  const cp: RunCheckpoint = {
    version: 1,
    runId,
    agent: "a",
    status,
    startedAt,
    updatedAt: `2026-01-${String(day).padStart(2, "0")}T00:01:00.000Z`,
    logEntries: 1,
    state: {},
  };
  await store.saveCheckpoint(cp);
  await lock.release();
}

Deno.test("maxRuns keeps the newest runs and never prunes a driven, interrupted or unreadable run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-prune-" });
  const plain = new FileRunStore(dir);
  await record(plain, "d01-done", "completed", 1);
  await record(plain, "d02-failed", "failed", 2);
  await record(plain, "d03-interrupted", "running", 3);
  await record(plain, "d04-done", "completed", 4);
  await record(plain, "d05-driven", "completed", 5);
  await record(plain, "d06-broken", "completed", 6);
  await record(plain, "d07-done", "completed", 7);
  await record(plain, "d08-done", "completed", 8);
  // Unreadable: the checkpoint file alone would be rebuilt from the log's checkpoint line.
  await Deno.writeTextFile(join(dir, "d06-broken.checkpoint.json"), "{");
  await Deno.writeTextFile(join(dir, "d06-broken.jsonl"), "{\n");
  // d05 is being driven by someone (its lock is held) when the new run starts.
  const other = new FileRunStore(dir);
  const driving = await other.lock("d05-driven");

  const warnings: string[] = [];
  const store = new FileRunStore(dir, { maxRuns: 3, onWarning: (m) => void warnings.push(m) });
  const lock = await store.lock("d09-new"); // pruning happens once the new run holds its lock
  await lock.release();
  await driving.release();

  const left = (await plain.list()).map((r) => r.runId);
  assert.deepEqual(left, [
    // the new run (no files yet, so not listed) counts as one of the three kept
    "d08-done",
    "d07-done",
    "d05-driven", // locked by another process
    "d03-interrupted", // resumable
    "d06-broken", // unreadable: never deleted (no readable date: listed last)
  ]);
  for (const gone of ["d01-done", "d02-failed", "d04-done"]) {
    for (const suffix of [".jsonl", ".checkpoint.json", ".lock"]) {
      await assert.rejects(Deno.stat(join(dir, gone + suffix)), Deno.errors.NotFound);
    }
  }
  assert.deepEqual(warnings, []);
  assert.deepEqual(await plain.prune(10), []);
});
