/**
 * The progress of a fan-out step: the live status line (counts, the running items and their
 * steps), the line renderer's line per child (every child with --verbose, failures otherwise).
 */
import assert from "node:assert/strict";
import { createLineProgress, createLiveProgress } from "../../src/cli/progress.ts";
import type { FanOutReport, StepInfo } from "../../src/events/types.ts";
import { fanOutCounts } from "../../src/events/progress_lines.ts";

const info: StepInfo = {
  runId: "r1",
  stepId: "review.each",
  desc: "review.each",
  order: 2,
  path: ["review.each"],
  iteration: 2,
};

function report(change?: FanOutReport["change"]): FanOutReport {
  return {
    agent: "file-reviewer",
    total: 40,
    completed: 11,
    failed: 1,
    running: 2,
    waiting: 0,
    active: [
      { index: 12, item: "src/cli.ts", runId: "c13", stepId: "review.file" },
      { index: 13, item: "src/a/very/long/path/to/some/deeply/nested/module.ts", runId: "c14" },
    ],
    ...(change ? { change } : {}),
  };
}

Deno.test("fan-out counts: done, running, failed, waiting", () => {
  assert.equal(fanOutCounts(report()), "12/40 done · 2 running · 1 failed");
  assert.equal(
    fanOutCounts({ ...report(), failed: 0, waiting: 3 }),
    "11/40 done · 2 running · 3 waiting",
  );
});

Deno.test("the live line says where the fan-out stands and what each running child does", async () => {
  const out: string[] = [];
  const live = createLiveProgress({
    write: (s) => void out.push(s),
    color: false,
    now: () => 0,
    columns: 200,
    intervalMs: 10_000,
    minRedrawMs: 0,
  });
  await live.events.onStepStart?.(info);
  await live.events.onFanOut?.(info, report());
  const line = out.at(-1)!;
  assert.match(line, /review\.each 12\/40 done · 2 running · 1 failed/);
  assert.match(line, /\[13\] src\/cli\.ts: review\.file, \[14\] …ome\/deeply\/nested\/module\.ts$/);
  // A child that failed is printed above the line; the step's end clears the fan-out.
  await live.events.onFanOut?.(
    info,
    report({ kind: "ended", index: 4, item: "src/x.ts", status: "failed", error: "model down" }),
  );
  assert.ok(out.some((s) => /review\.each item 5 \(src\/x\.ts\) failed: model down/.test(s)));
  await live.events.onStepEnd?.(info, { transition: "next", nextStepId: "summarize" });
  assert.doesNotMatch(out.at(-1)!, /done ·/);
  live.finish();
});

Deno.test("line progress: a line per child with --verbose, only the failed ones without", async () => {
  const ended = report({
    kind: "ended",
    index: 2,
    item: "src/c.ts",
    status: "completed",
    runId: "c3",
    durationMs: 1400,
    usage: { inputTokens: 10, outputTokens: 5 },
  });
  const failed = report({ kind: "ended", index: 4, item: "src/e.ts", status: "failed" });
  for (const verbose of [true, false]) {
    const lines: string[] = [];
    const progress = createLineProgress({
      write: (t) => void lines.push(t),
      color: false,
      verbose,
    });
    await progress.events.onFanOut?.(info, ended);
    await progress.events.onFanOut?.(info, failed);
    await progress.events.onFanOut?.(info, report());
    const shown = lines.join("");
    assert.equal(
      /step review\.each #2 item 3 \(src\/c\.ts\) completed in 1\.4s · 15 tokens · child c3 \(12\/40 done · 2 running · 1 failed\)/
        .test(shown),
      verbose,
      shown,
    );
    assert.match(shown, /item 5 \(src\/e\.ts\) failed/);
  }
});
