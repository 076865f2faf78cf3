import assert from "node:assert/strict";
import { createProgressLines } from "../../src/events/progress_lines.ts";
import type { StepInfo } from "../../src/events/types.ts";
import { StepflowError } from "../../src/errors.ts";

function fakeClock() {
  let t = 0;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

const info = (stepId: string, extra: Partial<StepInfo> = {}): StepInfo => ({
  runId: "r",
  stepId,
  desc: stepId,
  order: 1,
  path: [stepId],
  ...extra,
});

Deno.test("progress lines: a tool plan's steps show tool, settled status, log lines and results", async () => {
  const clock = fakeClock();
  const out: string[] = [];
  const { events } = createProgressLines({ write: (t) => void out.push(t), now: clock.now });
  const a = info("a", { desc: "Read", iteration: 1, tool: "read_file" });
  await events.onPlanStart?.({ id: "p", steps: [{}, {}] }, { runId: "r" });
  await events.onStepStart?.(a);
  await events.onStepLog?.(a, "approved automatically (reads)", "info");
  clock.advance(12);
  await events.onStepEnd?.({ ...a, status: "completed" }, { ok: true, value: "hello" });
  const b = info("b", { order: 2, iteration: 0, tool: "write_file" });
  await events.onStepLog?.(b, "was running when an earlier run stopped", "warn");
  await events.onStepEnd?.({ ...b, status: "skipped" }, {
    ok: false,
    error: 'Skipped because step "x" was skipped',
  });
  await events.onPlanEnd?.({}, { runId: "r", status: "completed" });
  assert.deepEqual(out, [
    "[00:00.000] run r started: 2 steps\n",
    '[00:00.000] step a #1 started ("Read", read_file)\n',
    "[00:00.000] step a #1 · approved automatically (reads)\n",
    '[00:00.012] step a #1 completed in 12 ms → "hello"\n',
    "[00:00.012] step b #2 · was running when an earlier run stopped\n",
    '[00:00.012] step b #2 skipped: Skipped because step "x" was skipped\n',
    "[00:00.012] run completed\n",
  ]);
});

Deno.test("progress lines: a tool-plan step's wait for approval is reported apart from its time", async () => {
  const clock = fakeClock();
  const out: string[] = [];
  const { events } = createProgressLines({ write: (t) => void out.push(t), now: clock.now });
  const a = info("a", { iteration: 1, tool: "write_file" });
  await events.onStepStart?.(a);
  clock.advance(4012);
  await events.onStepEnd?.({ ...a, status: "completed" }, {
    ok: true,
    duration: 12,
    approvalWaitMs: 4000,
  });
  assert.equal(
    out.at(-1),
    "[00:04.012] step a #1 completed in 12 ms (after 4000 ms waiting for approval)\n",
  );
});

Deno.test("progress lines: an error reported once; nesting indents; PlanSpec statuses; run errors", async () => {
  const out: string[] = [];
  const { events } = createProgressLines({ write: (t) => void out.push(t), now: () => 0 });
  const inner = info("flaky", { depth: 2, order: 3 });
  await events.onStepStart?.(inner);
  await events.onStepError?.(inner, new StepflowError("QPLAN_RUNTIME", "boom\nmore"));
  await events.onStepRetry?.(inner, 1, new Error("boom"));
  const failed = info("t", { iteration: 1, tool: "fail" });
  await events.onStepError?.(failed, new Error("x"));
  await events.onStepEnd?.({ ...failed, status: "failed" }, { ok: false, error: "x" });
  const spec = info("2", { desc: "Check", type: "reason", attempt: 2, path: ["1", "1.2"] });
  await events.onStepStart?.(spec);
  await events.onStepEnd?.(spec, { status: "UNCERTAIN", result: "one week\nlooks odd" });
  await events.onPlanEnd?.({}, { runId: "r", status: "error", error: { message: "boom" } });
  assert.deepEqual(out, [
    "[00:00.000]     step flaky #3 started\n",
    "[00:00.000]     step flaky #3 error [QPLAN_RUNTIME] boom …\n",
    "[00:00.000]     step flaky #3 retry 1: onError retry after boom\n",
    "[00:00.000] step t #1 error x\n",
    "[00:00.000] step t #1 failed\n",
    '[00:00.000]   step 2 #1 started (attempt 2, "Check", reason)\n',
    "[00:00.000]   step 2 #1 UNCERTAIN in 0 ms: one week looks odd\n",
    "[00:00.000] run error: boom\n",
  ]);
});
