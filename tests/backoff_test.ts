/** The one wait and the one backoff computation (src/backoff.ts). */
import assert from "node:assert/strict";
import { backoffDelay, sleep } from "../src/backoff.ts";
import { jitteredBackoff } from "../src/llm/retry.ts";

Deno.test("backoffDelay: grows by the factor from the first delay and stops at the cap", () => {
  assert.deepEqual([1, 2, 3, 4].map((n) => backoffDelay(n, { initialMs: 100 })), [
    100,
    200,
    400,
    800,
  ]);
  assert.equal(backoffDelay(1), 500);
  assert.equal(backoffDelay(0, { initialMs: 100 }), 100);
  assert.equal(backoffDelay(30, { initialMs: 1000, maxMs: 5000 }), 5000);
  assert.equal(backoffDelay(3, { initialMs: 10, factor: 3 }), 90);
});

Deno.test("jitteredBackoff draws below the same bound as backoffDelay", () => {
  const policy = { initialDelayMs: 100, factor: 2, maxDelayMs: 1000 };
  for (const n of [1, 2, 3, 4, 5, 6]) {
    const bound = backoffDelay(n, { initialMs: 100, factor: 2, maxMs: 1000 });
    assert.equal(jitteredBackoff(n, policy, () => 0.5), Math.floor(bound / 2));
  }
});

Deno.test("sleep: resolves after the wait, rejects with the reason on abort", async () => {
  await sleep(1);
  const early = new AbortController();
  early.abort(new Error("stopped before"));
  await assert.rejects(sleep(10_000, early.signal), /stopped before/);
  const late = new AbortController();
  const waiting = sleep(10_000, late.signal);
  late.abort(new Error("stopped during"));
  await assert.rejects(waiting, /stopped during/);
});
