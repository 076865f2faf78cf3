import assert from "node:assert/strict";
import {
  formatRunHistory,
  formatRunList,
  historyFromLog,
  runTimeline,
} from "../../src/store/format.ts";
import type { RunCheckpoint, RunLogEntry, RunSummary } from "../../src/store/types.ts";

const T0 = "2026-03-01T10:00:00.000Z";

function stepEnd(iteration: number, stepId: string, extra: Record<string, unknown> = {}) {
  const { usage, ...entry } = extra;
  return {
    ts: T0,
    runId: "r1",
    type: "step_end",
    stepId,
    iteration,
    entry: {
      stepId,
      iteration,
      attempt: 1,
      intent: "next",
      transition: "next",
      nextStepId: "work.next",
      startedAt: T0,
      durationMs: 1500,
      ...entry,
    },
    usage: usage ??
      { inputTokens: 100 * iteration, outputTokens: 10 * iteration, calls: iteration },
  } as RunLogEntry;
}

const line = (type: string, extra: Record<string, unknown> = {}): RunLogEntry => ({
  ts: T0,
  runId: "r1",
  type,
  ...extra,
});

Deno.test("runTimeline cuts history back at each resume marker, like resume does", () => {
  const log = [
    line("run_start", { historyLength: 0 }),
    stepEnd(1, "work.a"),
    stepEnd(2, "work.b"), // logged, but its checkpoint never landed: it re-runs after the crash
    line("run_resume", { historyLength: 1 }),
    line("step_start", { iteration: 2 }),
    stepEnd(2, "work.b"),
    stepEnd(3, "work.c"), // not checkpointed either (the checkpoint says 2)
  ];
  const rows = runTimeline(log, 2);
  assert.deepEqual(rows.map((r) => r.kind === "step" ? r.entry.iteration : r.type), [
    1,
    "run_resume",
    2,
  ]);
  assert.equal(rows[1].kind === "marker" && rows[1].dropped, 1);
  assert.deepEqual(rows[2].kind === "step" && rows[2].tokens, { input: 100, output: 10 });
  assert.deepEqual(historyFromLog(log).map((h) => h.iteration), [1, 2, 3]);
});

Deno.test("formatRunList: one row per run, interrupted runs and problems called out", () => {
  const runs: RunSummary[] = [
    {
      runId: "r-live",
      agent: "a",
      status: "running",
      live: true,
      startedAt: "2026-03-02T09:00:00.000Z",
      updatedAt: "2026-03-02T09:00:01.000Z",
      steps: 1,
      durationMs: 1000,
      stepId: "work.b",
    },
    {
      runId: "r-int",
      agent: "a",
      status: "running",
      live: false,
      startedAt: "2026-03-01T10:00:00.000Z",
      updatedAt: "2026-03-01T10:04:05.000Z",
      steps: 12,
      durationMs: 245_000,
      usage: { inputTokens: 123_456, outputTokens: 7_890 },
      stepId: "work.c",
    },
    {
      runId: "r-fail",
      agent: "a",
      status: "failed",
      completionReason: "max_iterations",
      startedAt: "2026-02-01T00:00:00.000Z",
      updatedAt: "2026-02-01T00:00:00.400Z",
      durationMs: 400,
    },
    {
      runId: "r-bad",
      agent: "",
      status: "running",
      startedAt: "",
      updatedAt: "",
      problem: "Checkpoint x is corrupt",
    },
  ];
  const text = formatRunList(runs);
  assert.equal(
    text,
    [
      "RUN ID  STARTED               STATUS                   STEPS  DURATION  TOKENS IN/OUT  STEP",
      "r-live  2026-03-02 09:00:00Z  running                      1      1.0s                 work.b",
      "r-int   2026-03-01 10:00:00Z  interrupted                 12     4m05s  123,456/7,890  work.c",
      "r-fail  2026-02-01 00:00:00Z  failed (max_iterations)            400ms",
      "r-bad                         unreadable",
      "! r-bad: Checkpoint x is corrupt",
      "Continue an interrupted run with: stepflow resume r-int",
      "Restart a failed or stopped run from the step it ended on with: stepflow redrive r-fail",
    ].join("\n"),
  );
  // With a renderer, the hints print a command that works where the user stands.
  const hinted = formatRunList(runs, {
    commandFor: (next) => `deno task stepflow ${next.action} ${next.runId} --agent a`,
  });
  assert.match(
    hinted,
    /\nContinue an interrupted run with: deno task stepflow resume r-int --agent a\n/,
  );
  // Calls without usage: their tokens are unknown, not 0/0 (as --show says).
  const unknown = formatRunList([{
    ...runs[2],
    usage: { inputTokens: 0, outputTokens: 0, callsWithoutUsage: 2 },
  }]);
  assert.match(unknown, /failed \(max_iterations\)\s+400ms\s+\?/);
  assert.doesNotMatch(unknown, /0\/0/);
  assert.equal(formatRunList([]), "No runs recorded.");
  const colored = formatRunList(runs, { color: true });
  assert.ok(colored.includes("\x1b[33minterrupted\x1b[0m"));
  assert.ok(colored.includes("\x1b[31mfailed (max_iterations)\x1b[0m"));
});

Deno.test("formatRunHistory: header, table, resume marker, error and the in-flight iteration", () => {
  const checkpoint: RunCheckpoint = {
    version: 1,
    runId: "r1",
    agent: "pipeline",
    status: "running",
    startedAt: T0,
    updatedAt: "2026-03-01T10:00:12.300Z",
    logEntries: 9,
    state: {
      historyLength: 2,
      iteration: 2,
      usage: { inputTokens: 300, outputTokens: 30, costUsd: 0.0123, calls: 2 },
    },
  };
  const log = [
    line("run_start", { historyLength: 0 }),
    line("step_start", { iteration: 1 }),
    stepEnd(1, "work.a", { checkResult: { result: "ok", message: "fine\nreally" } }),
    line("step_start", { iteration: 2 }),
    stepEnd(2, "work.b", { error: "boom", transition: "retry", intent: undefined }),
    line("run_resume", { historyLength: 1 }),
    line("step_start", { iteration: 2 }),
    stepEnd(2, "work.b", { attempt: 1 }),
    line("step_start", { iteration: 3, stepId: "work.c" }),
  ];
  const text = formatRunHistory(checkpoint, log);
  assert.equal(
    text,
    [
      "Run r1 · agent pipeline · running",
      "started 2026-03-01 10:00:00Z · updated 2026-03-01 10:00:12Z · 12.3s · 2 iterations · tokens 300 in / 30 out · $0.0123",
      "Not finished: continue it with stepflow resume r1",
      "",
      "#  ITER  STEP    TRY  INTENT  TRANSITION  NEXT       DURATION  TOKENS  NOTE",
      "1     1  work.a    1  next    next        work.next      1.5s  100/10  check ok: fine really",
      "── resumed at 2026-03-01 10:00:00Z; 1 recorded iteration(s) after the last checkpoint ran again ──",
      "2     2  work.b    1  next    next        work.next      1.5s  100/10",
      'Iteration 3 (step "work.c") was in flight when the run stopped; resume runs it again from its start.',
    ].join("\n"),
  );

  // Nobody drives it (its process was killed): interrupted, as --runs says, with a whole command.
  const interrupted = formatRunHistory(checkpoint, log, {
    live: false,
    commandFor: (next) => `deno task stepflow ${next.action} ${next.runId}`,
  });
  assert.match(interrupted, /^Run r1 · agent pipeline · interrupted\n/);
  assert.match(interrupted, /\nInterrupted: continue it with deno task stepflow resume r1\n/);
  assert.match(interrupted, /was in flight when the run stopped/);
  // Killed inside a step with tools whose calls were recorded: the resume continues inside it.
  const inside = formatRunHistory(
    { ...checkpoint, state: { ...checkpoint.state, inStep: { stepId: "work.c", iteration: 3 } } },
    [...log, line("tool_call", { iteration: 3, stepId: "work.c", tool: "Bash" })],
  );
  assert.match(
    inside,
    /Iteration 3 \(step "work.c"\) was in flight when the run stopped; resume continues inside it \(1 recorded tool call\(s\) replayed, not run again\)\./,
  );
  // Driven now: no advice to resume it (that would be refused while its process lives).
  const live = formatRunHistory(checkpoint, log, { live: true, commandFor: () => "x" });
  assert.match(
    live,
    /^Run r1 · agent pipeline · running\n.*\nNot finished: a live process drives it/,
  );
  assert.doesNotMatch(live, /continue it with/);

  const failed = formatRunHistory({
    ...checkpoint,
    status: "failed",
    state: {
      ...checkpoint.state,
      end: {
        reason: "step_failed",
        stepId: "work.b",
        error: { code: "STEP_FAILED", message: "Step failed:\nquota" },
      },
    },
  }, log);
  assert.match(failed, /· failed \(step_failed\)\n/);
  assert.match(failed, /\nError STEP_FAILED: Step failed: quota\n/);
  assert.match(failed, /Restart it from its failed step with stepflow redrive r1\n/);
  assert.doesNotMatch(failed, /in flight/);

  const orphan = formatRunHistory(undefined, [line("run_start")]);
  assert.match(orphan, /^Run r1 · agent \? · no checkpoint\nstarted 2026-03-01 10:00:00Z\n/);
  assert.match(orphan, /cannot be resumed/);
  assert.match(orphan, /No iteration was recorded\./);
});

Deno.test("--show marks iterations whose calls reported no usage: ? and +?, never 0/0", () => {
  const usage = (inputTokens: number, outputTokens: number, callsWithoutUsage: number) => ({
    inputTokens,
    outputTokens,
    costUsd: 0,
    calls: 3,
    callsWithoutUsage,
  });
  const log = [
    line("run_start", { historyLength: 0 }),
    stepEnd(1, "work.a", { usage: usage(0, 0, 1) }),
    stepEnd(2, "work.b", { usage: usage(100, 10, 2) }),
    stepEnd(3, "work.c", { usage: usage(200, 20, 2) }),
  ];
  const rows = runTimeline(log);
  assert.deepEqual(rows.map((r) => r.kind === "step" && r.tokens), [
    { input: 0, output: 0, unknownCalls: 1 },
    { input: 100, output: 10, unknownCalls: 1 },
    { input: 100, output: 10 },
  ]);
  const text = formatRunHistory({
    version: 1,
    runId: "r1",
    agent: "pipeline",
    status: "completed",
    startedAt: T0,
    updatedAt: T0,
    logEntries: 4,
    state: { historyLength: 3, iteration: 3, usage: usage(200, 20, 2) },
  }, log);
  assert.match(text, /tokens 200 in \/ 20 out · tokens unknown for 2 calls/);
  assert.match(text, /work\.a .* \?\n/);
  assert.match(text, /work\.b .* 100\/10\+\?\n/);
  assert.match(text, /work\.c .* 100\/10$/);
});

Deno.test("--show of a run whose every call had no usage: tokens unknown, no 0 in / 0 out; 1 iteration", () => {
  const log = [
    line("run_start", { historyLength: 0 }),
    stepEnd(1, "work.a", {
      usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 1, callsWithoutUsage: 1 },
    }),
  ];
  const text = formatRunHistory({
    version: 1,
    runId: "r1",
    agent: "pipeline",
    status: "completed",
    startedAt: T0,
    updatedAt: T0,
    logEntries: 2,
    state: {
      historyLength: 1,
      iteration: 1,
      usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 1, callsWithoutUsage: 1 },
    },
  }, log);
  const facts = text.split("\n")[1];
  assert.match(facts, / · 1 iteration · tokens unknown for 1 call$/);
  assert.doesNotMatch(text, /0 in \/ 0 out|1 iterations/);
});
