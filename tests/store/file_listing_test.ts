/**
 * The file store's listing cache on its own: which runs it reads again and which it serves from
 * memory. `checkpoint_cache_test.ts` covers it through `FileRunStore` over real files.
 *
 * @module
 */
import assert from "node:assert/strict";
import { RunListing } from "../../src/store/file_listing.ts";
import type { RunSummary } from "../../src/store/types.ts";

function summary(runId: string, status: RunSummary["status"], startedAt: string): RunSummary {
  return { runId, agent: "a", status, startedAt, updatedAt: startedAt };
}

/** A listing over a directory that does not exist (no mtime: no snapshot) and scripted reads. */
function listingOf(settledFromCache: boolean, runs: RunSummary[], locked: string[] = []) {
  const reads: string[] = [];
  const listing = new RunListing({
    dir: "/nonexistent/stepflow-listing-test",
    settledFromCache,
    scan: () => ({ ids: new Set(runs.map((r) => r.runId)), locked: new Set(locked) }),
    summarize: (runId) => {
      reads.push(runId);
      const run = runs.find((r) => r.runId === runId)!;
      if (run.status !== "running") listing.remember(runId, "key", run);
      return Promise.resolve({ ...run });
    },
  });
  return { listing, reads };
}

Deno.test("RunListing: newest first; every list() re-reads every run unless settled-from-cache", async () => {
  const runs = [
    summary("r1", "completed", "2026-01-01T00:00:00Z"),
    summary("r2", "running", "2026-01-02T00:00:00Z"),
  ];
  const { listing, reads } = listingOf(false, runs);
  assert.deepEqual((await listing.list()).map((r) => r.runId), ["r2", "r1"]);
  await listing.list();
  assert.deepEqual(reads, ["r1", "r2", "r1", "r2"]);
});

Deno.test("RunListing: settled-from-cache serves finished runs from memory, frozen, until a lock shows", async () => {
  const runs = [
    summary("r1", "completed", "2026-01-01T00:00:00Z"),
    summary("r2", "running", "2026-01-02T00:00:00Z"),
  ];
  const locked: string[] = [];
  const { listing, reads } = listingOf(true, runs, locked);
  await listing.list(); // the first listing is a full pass
  const second = await listing.list();
  assert.deepEqual(reads, ["r1", "r2", "r2"]);
  assert.ok(Object.isFrozen(second.find((r) => r.runId === "r1")));
  assert.deepEqual(listing.remembered("r1", "key"), runs[0]);
  assert.equal(listing.remembered("r1", "other key"), undefined);
  listing.forget("r1");
  await listing.list();
  assert.deepEqual(reads, ["r1", "r2", "r2", "r1", "r2"]);
  await listing.listAll();
  assert.deepEqual(reads.slice(5), ["r1", "r2"]);
});
