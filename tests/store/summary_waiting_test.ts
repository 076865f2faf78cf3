/**
 * A waiting run's listing line says what it waits for — an input step's answer, or a tool call's
 * Approve/Deny — read loosely from the checkpoint's `waiting` request (every store lists through
 * `summarizeCheckpoint`).
 */
import assert from "node:assert/strict";
import { summarizeCheckpoint } from "../../src/store/summary.ts";
import type { RunCheckpoint } from "../../src/store/types.ts";

function checkpoint(status: RunCheckpoint["status"], waiting: unknown): RunCheckpoint {
  return {
    version: 1,
    runId: "r1",
    agent: "a",
    status,
    logEntries: 3,
    startedAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:01.000Z",
    state: { waiting },
  };
}

Deno.test("a waiting run's summary names its step, and the tool when a call waits for permission", () => {
  const input = summarizeCheckpoint(checkpoint("waiting", { stepId: "approve", prompt: "?" }));
  assert.deepEqual(input.waitingFor, { stepId: "approve" });
  const ask = summarizeCheckpoint(
    checkpoint("waiting", { stepId: "fix", permission: { tool: "Bash", callId: "c1" } }),
  );
  assert.deepEqual(ask.waitingFor, { stepId: "fix", tool: "Bash" });
  // Hand-edited or damaged requests are left out (or cut), never trusted.
  assert.equal(summarizeCheckpoint(checkpoint("waiting", { stepId: 7 })).waitingFor, undefined);
  assert.equal(summarizeCheckpoint(checkpoint("waiting", "nonsense")).waitingFor, undefined);
  assert.deepEqual(
    summarizeCheckpoint(checkpoint("waiting", { stepId: "s", permission: { tool: {} } }))
      .waitingFor,
    { stepId: "s" },
  );
  const long = summarizeCheckpoint(
    checkpoint("waiting", { stepId: "s", permission: { tool: "x".repeat(5000) } }),
  );
  assert.equal(long.waitingFor?.tool?.length, 200);
  // A run that moved on (its state may still hold an old request) waits for nothing.
  assert.equal(summarizeCheckpoint(checkpoint("running", { stepId: "s" })).waitingFor, undefined);
});
