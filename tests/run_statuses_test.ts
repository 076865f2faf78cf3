/**
 * One list of run states: the checkpoint schema, the views' statuses, the worker queue's SQL and the
 * docs all follow src/run_statuses.ts.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import {
  ENDED_RUN_STATUSES,
  isOpenStatus,
  NOT_ENDED_STATUSES,
  OPEN_RUN_STATUSES,
  RUN_STATUS_KINDS,
  RUN_STATUSES,
  SHOWN_STATUSES,
} from "../src/run_statuses.ts";
import { parseCheckpoint } from "../src/store/checkpoint_format.ts";
import { shownStatus } from "../src/store/run_status.ts";
import { NOT_ENDED_SQL } from "../src/store/pg_connection.ts";

Deno.test("run statuses: every list follows the one declaration", () => {
  assert.deepEqual(RUN_STATUSES, Object.keys(RUN_STATUS_KINDS));
  assert.deepEqual(OPEN_RUN_STATUSES, ["running", "paused"]);
  assert.deepEqual(ENDED_RUN_STATUSES, [
    "completed",
    "failed",
    "aborted",
    "declined",
    "cancelled",
    "timeout",
  ]);
  assert.deepEqual(SHOWN_STATUSES, ["queued", ...RUN_STATUSES, "interrupted"]);
  assert.deepEqual(NOT_ENDED_STATUSES, ["queued", "running", "paused"]);
  assert.equal(NOT_ENDED_SQL, "'queued', 'running', 'paused'");
});

Deno.test("run statuses: isOpenStatus knows only the open recorded statuses", () => {
  for (const status of RUN_STATUSES) {
    assert.equal(isOpenStatus(status), RUN_STATUS_KINDS[status] === "open", status);
  }
  for (const other of ["queued", "interrupted", "constructor", "__proto__", "", undefined]) {
    assert.equal(isOpenStatus(other), false, String(other));
  }
});

Deno.test("run statuses: a checkpoint may record each status, and no other word", () => {
  const checkpoint = (status: string) =>
    JSON.stringify({
      version: 1,
      runId: "r1",
      agent: "a",
      status,
      startedAt: "2026-01-01T00:00:00Z",
      updatedAt: "2026-01-01T00:00:00Z",
      logEntries: 0,
      state: {},
    });
  for (const status of RUN_STATUSES) {
    assert.equal(parseCheckpoint(checkpoint(status), "cp.json", "r1").status, status);
  }
  for (const word of ["queued", "interrupted", "idle"]) {
    assert.throws(() => parseCheckpoint(checkpoint(word), "cp.json", "r1"), /status/);
  }
});

Deno.test("run statuses: an open run nobody drives is shown interrupted, an ended one as recorded", () => {
  for (const status of RUN_STATUSES) {
    const shown = shownStatus({ status, live: false });
    assert.equal(shown, isOpenStatus(status) ? "interrupted" : status);
    assert.equal(shownStatus({ status, live: true }), status);
  }
  assert.equal(shownStatus({ status: "queued", live: false }), "queued");
});

Deno.test("run statuses: the durable-runs page names every status a view shows", async () => {
  const page = await readFile(new URL("../docs/durable-runs.md", import.meta.url), "utf8");
  for (const status of SHOWN_STATUSES) assert.ok(page.includes(`\`${status}\``), status);
});
