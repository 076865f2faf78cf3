/**
 * The dashboard's run page with tool calls: the log folded into timeline rows and the rows drawn,
 * as the run page and the live view do, for
 * - one step of 1,000 and of 10,000 calls (a row shows 20 of them: the fold grows with the calls,
 *   the drawing must not);
 * - 1,000 iterations of 10 calls each (the last 20 rows with calls draw them, the others only
 *   their counts: the page grows with the iterations, not with every call).
 *
 * The log lines are the runner's `tool_call` lines (arguments and result excerpts of a few hundred
 * characters), built in memory so the bench measures the dashboard, not the disk.
 */
import type { RunLogEntry } from "../src/store/types.ts";
import { timelineRow } from "../src/ui/pages.ts";
import { foldLog, newTimeline } from "../src/ui/timeline.ts";
import { rowsWithCallsOpen } from "../src/ui/tool_calls_view.ts";

const ts = "2026-01-01T00:00:00.000Z";

/** A run of `iterations` iterations of one step, each making `calls` tool calls. */
function runLog(iterations: number, calls: number): RunLogEntry[] {
  const log: RunLogEntry[] = [{ ts, runId: "r", type: "run_start", stepId: "fix" }];
  for (let i = 1; i <= iterations; i++) {
    log.push({ ts, runId: "r", iteration: i, type: "step_start", stepId: "fix", attempt: 1 });
    for (let c = 1; c <= calls; c++) {
      log.push({
        ts,
        runId: "r",
        iteration: i,
        type: "tool_call",
        stepId: "fix",
        callId: `call_${c}_1`,
        tool: c % 3 === 0 ? "Bash" : "Read",
        decision: c % 7 === 0 ? "deny" : "allow",
        decidedBy: "acceptEdits mode",
        isError: false,
        durationMs: 3,
        result: `     ${c}\tconst value = compute(${c});\n`.repeat(12),
        args: JSON.stringify({ file_path: `src/module_${c}.ts`, offset: c, limit: 40 }),
      });
    }
    log.push({
      ts,
      runId: "r",
      iteration: i,
      type: "step_end",
      stepId: "fix",
      entry: { stepId: "fix", transition: "next", nextStepId: "fix", durationMs: 900 },
    });
  }
  return log;
}

/** Folds the log and draws every row, as the run page does; returns the page's characters. */
function page(log: readonly RunLogEntry[]): number {
  const timeline = newTimeline();
  foldLog(timeline, log);
  const open = rowsWithCallsOpen(timeline.rows);
  let chars = 0;
  for (const row of timeline.rows) {
    chars += timelineRow("r", row, { live: false, callsOpen: open.has(row.index) }).text.length;
  }
  return chars;
}

const oneStep1k = runLog(1, 1_000);
const oneStep10k = runLog(1, 10_000);
const many = runLog(1_000, 10);
console.log(
  `page characters: one step of 1,000 calls ${page(oneStep1k)}, of 10,000 calls ${
    page(oneStep10k)
  }, 1,000 iterations × 10 calls ${page(many)}`,
);

Deno.bench("run page rows: one step of 1,000 tool calls", { group: "one step" }, () => {
  page(oneStep1k);
});

Deno.bench("run page rows: one step of 10,000 tool calls", { group: "one step" }, () => {
  page(oneStep10k);
});

Deno.bench("run page rows: 1,000 iterations × 10 tool calls", () => {
  page(many);
});
