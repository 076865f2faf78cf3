import assert from "node:assert/strict";
import {
  createLineProgress,
  createLiveProgress,
  formatClock,
  formatCount,
  type LiveProgressOptions,
  observeBackend,
} from "../../src/cli/progress.ts";
import { StepflowError } from "../../src/errors.ts";
import type { StepInfo, ToolCallEvent } from "../../src/events/types.ts";
import type { StepFlowResult } from "../../src/flow/types.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import type { LlmRequest } from "../../src/llm/types.ts";

function clock(start = 1000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

/** A live renderer writing into `out` at a wide terminal, redrawn on every event (no timer). */
function liveInto(out: string[], now: () => number, extra: Partial<LiveProgressOptions> = {}) {
  return createLiveProgress({
    write: (s) => void out.push(s),
    color: false,
    now,
    columns: 200,
    intervalMs: 10_000,
    minRedrawMs: 0,
    ...extra,
  });
}

function info(stepId: string, iteration: number, desc = stepId): StepInfo {
  return { runId: "r1", stepId, desc, order: iteration, path: [desc], iteration };
}

function result(overrides: Partial<StepFlowResult> = {}): StepFlowResult {
  return {
    success: true,
    runId: "r1",
    finalStepId: "complete.task",
    completionReason: "completed",
    iterations: 3,
    state: { history: [], handoff: {} },
    usage: { inputTokens: 1200, outputTokens: 34, costUsd: 0, calls: 3 },
    ...overrides,
  };
}

const request = (kind: LlmRequest["kind"], stepId = "work.task"): LlmRequest => ({
  kind,
  agent: "a",
  stepId,
  iteration: 2,
  prompt: "p",
  cwd: ".",
});

Deno.test("formatClock and formatCount", () => {
  assert.equal(formatClock(0), "00:00.000");
  assert.equal(formatClock(1234), "00:01.234");
  assert.equal(formatClock(61_005), "01:01.005");
  assert.equal(formatClock(3_725_000), "62:05.000");
  assert.equal(formatCount(1234567), "1,234,567");
  assert.equal(formatCount(12), "12");
});

Deno.test("line progress: one timestamped line per event", async () => {
  const t = clock();
  const out: string[] = [];
  const p = createLineProgress({ write: (s) => void out.push(s), color: false, now: t.now });
  const e = p.events;
  await e.onPlanStart?.({ name: "demo", entryStepId: "work.task" }, { runId: "r1" });
  t.advance(5);
  await e.onStepStart?.(info("work.task", 1, "Work"));
  t.advance(1229);
  await e.onStepEnd?.(info("work.task", 1, "Work"), {
    transition: "next",
    intent: "next",
    nextStepId: "check.task",
  });
  await e.onStepStart?.(info("check.task", 2));
  await e.onStepEnd?.(info("check.task", 2), {
    transition: "retry",
    nextStepId: "check.task",
    checkResult: { result: "ng", message: "2 tests fail" },
  });
  await e.onStepStart?.(info("check.task", 3));
  await e.onStepError?.(
    info("check.task", 3),
    new StepflowError("OUTPUT_SCHEMA_INVALID", "bad output\nmore"),
  );
  await e.onStepRetry?.(
    info("check.task", 3),
    1,
    new StepflowError("BACKEND_RETRY", "anthropic attempt 1/3 failed (429)"),
  );
  await e.onStepRetry?.(info("check.task", 3), 1, new Error("boom"));
  await e.onStepJump?.(info("check.task", 3), "cleanup.task");
  await e.onStepEnd?.(info("check.task", 3), {
    transition: "jump",
    intent: "jump",
    nextStepId: "cleanup.task",
    error: "x",
  });
  // An error without an onStepError line (a cancelled call) is shown on the step's end line.
  await e.onStepStart?.(info("cleanup.task", 4));
  await e.onStepEnd?.(info("cleanup.task", 4), { transition: "abort", error: "run cancelled" });
  p.warn("fallback prompt used");
  await e.onPlanEnd?.({}, { runId: "r1", status: "completed", result: result() });
  await e.onPlanEnd?.({}, {
    runId: "r1",
    result: result({
      success: false,
      completionReason: "step_failed",
      error: { code: "BACKEND_AUTH", message: "key refused\nsecond line" },
      usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 1 },
    }),
  });
  p.finish(result());
  assert.deepEqual(out.join("").split("\n"), [
    "[00:00.000] run r1 started: agent demo, entry work.task",
    '[00:00.005] step work.task #1 started ("Work")',
    "[00:01.234] step work.task #1 → next (check.task)",
    "[00:01.234] step check.task #2 started",
    "[00:01.234] step check.task #2 → retry (check.task) check ng: 2 tests fail",
    "[00:01.234] step check.task #3 started (attempt 2)",
    "[00:01.234] step check.task #3 error [OUTPUT_SCHEMA_INVALID] bad output …",
    "[00:01.234] step check.task #3 retry 1: anthropic attempt 1/3 failed (429)",
    "[00:01.234] step check.task #3 retry 1: onError retry after boom",
    "[00:01.234] step check.task #3 jump → cleanup.task",
    "[00:01.234] step check.task #3 → jump (cleanup.task)",
    "[00:01.234] step cleanup.task #4 started",
    "[00:01.234] step cleanup.task #4 → abort — run cancelled",
    "[00:01.234] warning: fallback prompt used",
    "[00:01.234] run succeeded: completed at complete.task after 3 iterations (1,234 tokens (1,200 in, 34 out), 3 calls)",
    "[00:01.234] run failed: step_failed at complete.task after 3 iterations (1 call)",
    "[00:01.234]   BACKEND_AUTH: key refused …",
    "",
  ]);
});

Deno.test("line progress: --verbose adds backend calls and state changes; colour only when asked", async () => {
  const t = clock();
  const out: string[] = [];
  const p = createLineProgress({
    write: (s) => void out.push(s),
    color: true,
    verbose: true,
    now: t.now,
  });
  const req = request("check");
  p.onCallStart?.(req);
  t.advance(1500);
  p.onCallEnd?.(req, { text: "", usage: { inputTokens: 10, outputTokens: 2 } });
  p.onCallStart?.(request("step"));
  p.onCallEnd?.(request("step"), undefined, new Error("down"));
  await p.events.onStateChange?.("running", "idle", { runId: "r1" });
  const text = out.join("");
  assert.match(text, /call check of work\.task #2 started/);
  assert.match(text, /call check of work\.task answered in 1\.5s \(10 in, 2 out tokens\)/);
  assert.match(text, /call step of work\.task failed: down/);
  assert.match(text, /state idle → running/);
  assert.ok(text.includes("\x1b[2m["), "timestamps are dimmed with colour on");
});

Deno.test("live progress: redraws one line in place, then leaves only the summary", async () => {
  const t = clock();
  const out: string[] = [];
  const p = liveInto(out, t.now);
  const e = p.events;
  await e.onStepStart?.(info("work.task", 1));
  t.advance(2345);
  p.onCallStart?.(request("step"));
  assert.equal(out.at(-1), "\r\x1b[2K⠋ 00:02.3  work.task · iteration 1 · waiting for the model");
  p.onCallEnd?.(request("step"), { text: "", usage: { inputTokens: 1000, outputTokens: 500 } });
  await e.onStepEnd?.(info("work.task", 1), { transition: "repeat", nextStepId: "work.task" });
  await e.onStepStart?.(info("work.task", 2));
  p.onCallStart?.(request("check"));
  assert.equal(
    out.at(-1),
    "\r\x1b[2K⠋ 00:02.3  work.task · iteration 2 · attempt 2 · check call · last work.task → repeat · 1,500 tokens",
  );
  // Errors and warnings become permanent lines above the status line.
  await e.onStepError?.(info("work.task", 2), new StepflowError("STEP_TIMEOUT", "too slow"));
  assert.deepEqual(out.slice(-3), [
    "\r\x1b[2K",
    "error work.task #2: [STEP_TIMEOUT] too slow\n",
    "\r\x1b[2K⠋ 00:02.3  work.task · iteration 2 · attempt 2 · check call · last work.task → repeat · 1,500 tokens",
  ]);
  p.finish(result());
  assert.deepEqual(out.slice(-2), [
    "\r\x1b[2K",
    "✓ succeeded: completed at complete.task after 3 iterations (1,234 tokens (1,200 in, 34 out), 3 calls) in 00:02.3\n",
  ]);
  const count = out.length;
  await e.onStepStart?.(info("late", 9));
  p.finish(result());
  assert.equal(out.length, count, "nothing is drawn after finish");
  assert.ok(!out.join("").includes("\x1b[3"), "no colour codes when colour is off");
});

Deno.test("live progress: the line is cut to the terminal width; the spinner turns", async () => {
  const out: string[] = [];
  const p = createLiveProgress({
    write: (s) => void out.push(s),
    color: true,
    columns: 30,
    intervalMs: 5,
  });
  await p.events.onStepStart?.(info("a.very.long.step.identifier.indeed", 1));
  await new Promise((r) => setTimeout(r, 40));
  p.finish();
  const frames = out.filter((s) => s.startsWith("\r\x1b[2K\x1b[36m"));
  assert.ok(frames.length >= 2, "redrawn by the timer");
  assert.ok(new Set(frames.map((f) => f.slice(10, 11))).size >= 2, "the spinner changes");
  for (const frame of frames) {
    const visible = frame.replaceAll("\x1b", "").replace(/\[[0-9;]*[A-Za-z]/g, "").replace(
      "\r",
      "",
    );
    assert.ok(Array.from(visible).length <= 30, `fits in 30 columns: ${visible}`);
    assert.ok(visible.endsWith("…"));
  }
  assert.equal(out.at(-1), "\r\x1b[2K", "finish without a result only clears");
});

Deno.test("observeBackend reports each call and passes errors through", async () => {
  const seen: string[] = [];
  const backend = observeBackend(new ScriptedBackend(["ok", { error: "nope" }]), {
    onCallStart: (r) => void seen.push(`start ${r.kind}`),
    onCallEnd: (r, res, err) =>
      void seen.push(`end ${r.kind} ${res?.text ?? ""}${err ? "error" : ""}`),
  });
  assert.equal(backend.name, "scripted");
  assert.equal((await backend.complete(request("step"))).text, "ok");
  await assert.rejects(() => backend.complete(request("check")), /nope/);
  assert.deepEqual(seen, ["start step", "end step ok", "start check", "end check error"]);
});

Deno.test("live progress: bursts of events are drawn at most once per 40 ms", async () => {
  const t = clock();
  const out: string[] = [];
  const p = createLiveProgress({
    write: (s) => void out.push(s),
    color: false,
    now: t.now,
    intervalMs: 10_000,
  });
  for (let i = 1; i <= 50; i++) await p.events.onStepStart?.(info("fast.step", i));
  assert.equal(out.length, 1, "one draw for a burst");
  t.advance(40);
  await p.events.onStepStart?.(info("fast.step", 51));
  assert.equal(out.length, 2);
  assert.match(out[1], /iteration 51 · attempt 51$/, "the next draw shows the latest state");
  p.finish();
});

Deno.test("progress on a resumed run says so and keeps counting tokens from the checkpoint", async () => {
  const t = clock();
  const lines: string[] = [];
  const line = createLineProgress({ write: (s) => void lines.push(s), color: false, now: t.now });
  const ctx = {
    runId: "r1",
    mode: "resume",
    iteration: 2,
    usage: { inputTokens: 900, outputTokens: 100, costUsd: 0, calls: 2 },
  };
  await line.events.onPlanStart?.({ name: "demo", entryStepId: "work.task" }, ctx);
  assert.equal(lines[0], "[00:00.000] run r1 resumed: agent demo after iteration 2\n");
  await line.events.onPlanStart?.({ name: "demo" }, { ...ctx, mode: "redrive" });
  assert.equal(lines[1], "[00:00.000] run r1 redriven: agent demo after iteration 2\n");

  const out: string[] = [];
  const live = liveInto(out, t.now);
  await live.events.onPlanStart?.({ name: "demo" }, ctx);
  await live.events.onStepStart?.(info("work.task", 3));
  live.onCallEnd?.(request("step"), { text: "", usage: { inputTokens: 200, outputTokens: 34 } });
  assert.match(out.at(-1)!, /1,234 tokens$/);
  live.finish();
});

Deno.test("re-asks get their own progress line; --verbose prints the raw answer", async () => {
  const t = clock();
  const out: string[] = [];
  const p = createLineProgress({ write: (s) => void out.push(s), color: false, now: t.now });
  const reask = new StepflowError("OUTPUT_REASK", 'Step "work.task": re-asking (1) because …', {
    details: {
      reason: "your answer did not match the required JSON schema",
      errors: ["/next_action/action: must be equal to one of the allowed values"],
    },
  });
  await p.events.onStepRetry?.(info("work.task", 2), 1, reask);
  assert.equal(
    out.join(""),
    "[00:00.000] step work.task #2 re-ask 1: your answer did not match the required JSON schema: /next_action/action: must be equal to one of the allowed values\n",
  );

  const verboseOut: string[] = [];
  const v = createLineProgress({
    write: (s) => void verboseOut.push(s),
    color: false,
    verbose: true,
    now: t.now,
  });
  v.onCallStart?.(request("step"));
  v.onCallEnd?.(request("step"), { text: "Sure!\nI will do it." });
  v.onCallEnd?.(request("reask"), { text: "y".repeat(9_000) });
  const text = verboseOut.join("");
  assert.match(
    text,
    /answered \(tokens unknown\)\n {4}answer, 19 chars:\n {4}Sure!\n {4}I will do it\.\n/,
  );
  assert.match(text, /answer, 9,000 chars \(first 8,192 shown\):\n {4}y{8192}\n/);

  const live: string[] = [];
  const l = liveInto(live, t.now);
  await l.events.onStepStart?.(info("work.task", 1));
  l.onCallEnd?.(request("step"), { text: "{}" });
  await l.events.onStepRetry?.(info("work.task", 1), 1, reask);
  assert.match(live.join(""), /re-ask 1 work\.task: your answer did not match/);
  assert.match(live.at(-1)!, /work\.task · iteration 1 · re-ask 1 · tokens unknown for 1 call$/);
  l.finish();
});

Deno.test("live progress: a run that waits for an answer says so, and its summary is not a failure", async () => {
  const t = clock();
  const out: string[] = [];
  const p = liveInto(out, t.now);
  await p.events.onStepStart?.(info("approve.release", 2));
  await p.events.onStateChange?.("waiting", "running", { runId: "r1" });
  assert.match(out.at(-1)!, /approve\.release · iteration 2 · waiting for an answer$/);
  p.finish({
    ...result(),
    success: false,
    completionReason: "waiting",
    finalStepId: "approve.release",
    iterations: 1,
  });
  assert.match(
    out.at(-1)!,
    /^… waiting for an answer at approve\.release after 1 iteration \(.*\) in 00:00\.0\n$/,
  );
});

const edit = (
  phase: ToolCallEvent["phase"],
  extra: Partial<ToolCallEvent> = {},
): ToolCallEvent => ({
  phase,
  callId: "c1",
  tool: "Edit",
  args: { file_path: "src/app.ts", old_string: "41", new_string: "42" },
  ...(phase === "requested" ? {} : { decision: "allow", decidedBy: "acceptEdits mode" }),
  ...(phase === "finished"
    ? { result: "Edited src/app.ts: 1 replacement.", isError: false, durationMs: 4 }
    : {}),
  ...extra,
});

Deno.test("line progress: a line per finished tool call; streamed text only with --verbose", async () => {
  const t = clock();
  const out: string[] = [];
  const p = createLineProgress({ write: (s) => void out.push(s), color: false, now: t.now });
  const step = info("work.task", 2);
  for (const phase of ["requested", "decided", "finished"] as const) {
    await p.events.onToolCall?.(step, edit(phase));
  }
  await p.events.onToolCall?.(
    step,
    edit("finished", { decision: "deny", decidedBy: "nobody to ask", isError: true }),
  );
  assert.deepEqual(out, [
    "[00:00.000] step work.task #2 ↳ Edit src/app.ts ✓ 4 ms\n",
    "[00:00.000] step work.task #2 ↳ Edit src/app.ts ✗ refused (nobody to ask)\n",
  ]);
  assert.equal(p.events.onStepText, undefined, "without --verbose nobody asks for the text");
});

Deno.test("line progress --verbose: a call's arguments and result excerpt; the text line by line, not again at the call's end", async () => {
  const t = clock();
  const out: string[] = [];
  const p = createLineProgress({
    write: (s) => void out.push(s),
    color: false,
    verbose: true,
    now: t.now,
  });
  const step = info("work.task", 2);
  p.onCallStart?.(request("step"));
  for (const piece of ["I'll ", "fix the\nanswer", " now."]) {
    await p.events.onStepText?.(step, piece);
  }
  await p.events.onToolCall?.(step, edit("requested"));
  const long = Array.from({ length: 10 }, (_, i) => `line ${i + 1} \x1b[31mred\x1b[0m`).join("\n");
  await p.events.onToolCall?.(step, edit("finished", { result: long }));
  await p.events.onStepText?.(step, "Done.");
  p.onCallEnd?.(request("step"), { text: "Done." });
  const text = out.join("").replaceAll("[00:00.000] ", "");
  assert.equal(
    text,
    [
      "  call step of work.task #2 started",
      "step work.task #2 › I'll fix the",
      "step work.task #2 › answer now.",
      "step work.task #2 ↳ Edit src/app.ts ✓ 4 ms",
      '    args {"file_path":"src/app.ts","old_string":"41","new_string":"42"}',
      "    result line 1 ?[31mred?[0m",
      "           line 2 ?[31mred?[0m",
      "           line 3 ?[31mred?[0m",
      "           … (7 more lines)",
      "step work.task #2 › Done.",
      "  call step of work.task answered (tokens unknown)",
      "    answer, 5 chars (streamed above)",
      "",
    ].join("\n"),
  );
});

Deno.test("live progress: tool calls are lines under their step; the streamed text ends the status line", async () => {
  const t = clock();
  const out: string[] = [];
  const p = liveInto(out, t.now);
  const step = info("work.task", 2);
  await p.events.onStepStart?.(step);
  p.onCallStart?.(request("step"));
  for (const piece of ["I'll fix ", "the answer ".repeat(10), "\x1b[2Jnow"]) {
    await p.events.onStepText?.(step, piece);
  }
  assert.equal(
    out.at(-1),
    "\r\x1b[2K⠋ 00:00.0  work.task · iteration 2 · “…e answer the answer the answer the answer the answer ?[2Jnow”",
  );
  await p.events.onToolCall?.(step, edit("requested"));
  assert.match(out.at(-1)!, /iteration 2 · Edit src\/app\.ts…$/);
  await p.events.onToolCall?.(step, edit("finished"));
  await p.events.onToolCall?.(step, { ...edit("finished"), callId: "c2", durationMs: 7 });
  const permanent = out.filter((s) => s.endsWith("\n"));
  assert.deepEqual(permanent, [
    "work.task #2\n",
    "  ↳ Edit src/app.ts ✓ 4 ms\n",
    "  ↳ Edit src/app.ts ✓ 7 ms\n",
  ]);
  assert.match(out.at(-1)!, /iteration 2 · waiting for the model$/);
  p.finish();
});

Deno.test("live progress: a rate-limit wait is on the status line until when; a fallback is a line", async () => {
  const t = clock();
  const out: string[] = [];
  const p = liveInto(out, t.now);
  const e = p.events;
  await e.onStepStart?.(info("work.task", 1));
  p.onCallStart?.(request("step"));
  const until = new Date(2026, 2, 1, 12, 3, 10).toISOString();
  // The retry's own event draws nothing: the wait is told once, by its own event.
  const before = out.length;
  await e.onStepRetry?.(
    info("work.task", 1),
    1,
    new StepflowError("BACKEND_RETRY", "openai attempt 1/3 failed (HTTP 429)", {
      details: { status: 429, delayMs: 30_000, waitUntil: until },
    }),
  );
  assert.equal(out.length, before);
  await e.onRateLimitWait?.(info("work.task", 1), {
    backend: "openai",
    until,
    delayMs: 30_000,
    status: 429,
    reason: "HTTP 429 rate_limit_exceeded",
    attempt: 1,
    maxAttempts: 3,
    yielded: false,
  });
  assert.deepEqual(out.slice(-3), [
    "\r\x1b[2K",
    "waiting for the rate limit until 12:03:10 work.task: HTTP 429 rate_limit_exceeded (attempt 1/3)\n",
    "\r\x1b[2K⠋ 00:00.0  work.task · iteration 1 · waiting for the rate limit until 12:03:10",
  ]);
  await e.onModelFallback?.(info("work.task", 1), {
    from: { backend: "openai", model: "gpt-5.4-mini" },
    to: { backend: "anthropic", model: "claude-haiku-4-5" },
    reason: "rate_limit",
    detail: "HTTP 429 (after 3 attempts)",
  });
  assert.deepEqual(out.slice(-3), [
    "\r\x1b[2K",
    "fallback work.task: fell back from openai gpt-5.4-mini to anthropic claude-haiku-4-5 (rate limit: HTTP 429 (after 3 attempts))\n",
    "\r\x1b[2K⠋ 00:00.0  work.task · iteration 1 · on anthropic claude-haiku-4-5",
  ]);
  p.finish(result());
});
