/**
 * `timeoutSignal`: aborts at its limit (a TimeoutError) or with its parent (the parent's reason),
 * and once disposed neither fires nor holds anything of the parent.
 */
import assert from "node:assert/strict";
import { timeoutSignal } from "../src/timeout_signal.ts";

Deno.test("timeoutSignal: the limit aborts with a TimeoutError and says it timed out", async () => {
  using limit = timeoutSignal(5);
  await new Promise((done) => limit.signal.addEventListener("abort", done, { once: true }));
  assert.equal(limit.timedOut, true);
  assert.equal((limit.signal.reason as DOMException).name, "TimeoutError");
  assert.match((limit.signal.reason as DOMException).message, /timed out after 5 ms/);
});

Deno.test("timeoutSignal: the parent's abort passes through, before or after; it is no time out", () => {
  const parent = new AbortController();
  using limit = timeoutSignal(60_000, parent.signal);
  parent.abort(new Error("cancelled"));
  assert.equal(limit.signal.aborted, true);
  assert.equal((limit.signal.reason as Error).message, "cancelled");
  assert.equal(limit.timedOut, false);
  using late = timeoutSignal(60_000, parent.signal);
  assert.equal((late.signal.reason as Error).message, "cancelled");
});

Deno.test("timeoutSignal: disposed, it never fires and leaves the parent alone", async () => {
  const parent = new AbortController();
  const limit = timeoutSignal(5, parent.signal);
  limit.signal.addEventListener("abort", () => {}); // as an SDK would, never removed
  limit[Symbol.dispose]();
  await new Promise((done) => setTimeout(done, 30));
  parent.abort();
  assert.equal(limit.signal.aborted, false);
  assert.equal(limit.timedOut, false);
  // (The test's sanitizers also fail it if a timer were left running.)
});
