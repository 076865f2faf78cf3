/** The one run-id format, and the one rule stores check (old formats stay valid input). */
import assert from "node:assert/strict";
import { assertRunId, isValidRunId, newRunId } from "../../src/store/run_id.ts";

Deno.test("newRunId: start time to the second plus 6 hex digits; sorts by start", () => {
  const id = newRunId(new Date("2026-11-22T04:15:00.987Z"));
  assert.match(id, /^20261122T041500Z-[0-9a-f]{6}$/);
  const later = newRunId(new Date("2026-11-22T04:15:01.000Z"));
  assert.ok(id < later);
  assert.match(newRunId(), /^\d{8}T\d{6}Z-[0-9a-f]{6}$/);
  assert.ok(isValidRunId(id));
});

Deno.test("run ids written by earlier versions and caller-chosen ids stay valid", () => {
  for (
    const id of [
      "20261122T041500Z-1a2b3c",
      "0b6f3f9e-6f1e-4a47-9a83-3c3e3f0f6a10",
      "run-m1x2-ab12cd34",
      "run-6",
      "my_run",
    ]
  ) {
    assert.ok(isValidRunId(id), id);
    assertRunId(id);
  }
  for (const id of ["", "../x", "-x", "a.b", "x".repeat(129), 42]) {
    assert.equal(isValidRunId(id), false, String(id));
  }
  assert.throws(() => assertRunId("../x"), { code: "RUN_ID_INVALID" });
});
