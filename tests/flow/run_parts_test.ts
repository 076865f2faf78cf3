/**
 * The runner's parts beside its loop: the run state's moves, the journal and restore, and the
 * backend call (step timeout, cancellation, pause, usage and session), each on its own.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { FlowStep } from "../../src/definition/types.ts";
import { StepflowError } from "../../src/errors.ts";
import { callBackend, type CallContext, stepRequest } from "../../src/flow/backend_call.ts";
import { meterBackend } from "../../src/flow/metered_backend.ts";
import { SpendLedger } from "../../src/flow/spend_ledger.ts";
import { PriceTable } from "../../src/llm/pricing.ts";
import { createRunJournal, restoreRun } from "../../src/flow/checkpoint.ts";
import { flowStep } from "../../src/flow/router.ts";
import { createRunnerControl, watchStops } from "../../src/flow/run_control.ts";
import {
  advance,
  endRun,
  newRunnerState,
  type RunnerState,
  storeHandoff,
} from "../../src/flow/run_state.ts";
import type { HistoryEntry } from "../../src/flow/types.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { isWait } from "../../src/flow/run_wait.ts";
import { seed004Files, writeAgent } from "./fixtures.ts";

const root = await Deno.makeTempDir({ prefix: "stepflow-run-parts-" });
await writeAgent(root, "issue-solver", seed004Files());
const def = await loadAgentDefinition("issue-solver", { cwd: root });
const initial: FlowStep = flowStep(def, "initial.issue")!;

const fresh = (): RunnerState => newRunnerState(def, { args: { topic: "t" }, cwd: root }, "r1");
const entry = (stepId: string): HistoryEntry => ({
  stepId,
  iteration: 1,
  attempt: 1,
  transition: "next",
  startedAt: new Date(0).toISOString(),
  durationMs: 0,
});

Deno.test("advance: the same step is one attempt more; another step starts a fresh visit", () => {
  const state = fresh();
  state.checkRuns = 2;
  state.errorRetries = 1;
  state.validationRetry = { stepId: "initial.issue", command: "test", output: "" };
  advance(state, entry("initial.issue"), {
    kind: "goto",
    stepId: "initial.issue",
    transition: "repeat",
  }, undefined);
  assert.equal(state.attempt, 2);
  assert.equal(state.checkRuns, 2);
  const moved = entry("initial.issue");
  advance(state, moved, { kind: "goto", stepId: "continuation.issue", transition: "next" }, 0);
  assert.equal(moved.nextStepId, "continuation.issue");
  assert.equal(moved.transition, "next");
  assert.equal(state.currentStepId, "continuation.issue");
  assert.deepEqual(
    [state.attempt, state.checkRuns, state.errorRetries, state.validationRetry],
    [1, 0, 0, undefined],
  );
});

Deno.test("endRun: a stop without an error of its own gets one naming the step", () => {
  const state = fresh();
  endRun(state, "timeout", "initial.issue", 250);
  assert.deepEqual(state.end, {
    reason: "timeout",
    stepId: "initial.issue",
    error: {
      code: "TIMEOUT",
      message: 'The run exceeded its time limit (250 ms) at step "initial.issue".',
      stepId: "initial.issue",
    },
  });
});

Deno.test("storeHandoff keeps __proto__ as data and tracks the latest value of each key", () => {
  const state = fresh();
  storeHandoff(state, "initial.issue", JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}'));
  storeHandoff(state, "initial.issue", { a: 2 });
  assert.deepEqual(Object.keys(state.handoff["initial.issue"]), ["__proto__", "a"]);
  assert.equal(state.latestHandoff.a, 2);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("journal and restore: a resumed state continues from the checkpoint and log", async () => {
  const store = new MemoryRunStore();
  const journal = createRunJournal(store);
  const state = fresh();
  await journal.log(state, { type: "run_start", historyLength: 0 });
  const done = entry("initial.issue");
  advance(state, done, { kind: "goto", stepId: "continuation.issue", transition: "next" }, 0);
  state.historyLength = 1;
  await journal.log(state, { type: "step_end", stepId: done.stepId, entry: done });
  await journal.checkpoint(state, "running");
  assert.equal((await store.loadCheckpoint("r1"))?.logEntries, 2);

  const warnings: string[] = [];
  const restored = await restoreRun(store, def, "r1", false, (m) => warnings.push(m));
  assert.equal(restored.state.currentStepId, "continuation.issue");
  assert.deepEqual(restored.history, [done]);
  assert.equal(restored.logEntries, 2);
  assert.deepEqual(warnings, []);
  await assert.rejects(
    () => restoreRun(undefined, def, "r1", false, () => {}),
    (e: StepflowError) => e.code === "NO_RUN_STORE",
  );
});

/** A call context with no step timeout, never paused. */
function context(signal: AbortSignal, over: Partial<CallContext> = {}): CallContext {
  return { signal, timeoutMs: undefined, waitIfPaused: async () => {}, onRetry: () => {}, ...over };
}

Deno.test("callBackend keeps the session and sends it on the next call; the run's meter counts the usage", async () => {
  const state = fresh();
  const scripted = new ScriptedBackend([
    { text: "a", sessionId: "s-1", usage: { inputTokens: 3, outputTokens: 4 }, costUsd: 0.5 },
    { text: "b" },
  ]);
  const backend = meterBackend(
    scripted,
    new SpendLedger({ state, prices: PriceTable.builtIn() }),
  );
  const request = () => stepRequest(def, initial, state, "Go", undefined, undefined);
  const signal = new AbortController().signal;
  await callBackend(backend, request(), state, initial, context(signal));
  await callBackend(backend, request(), state, initial, context(signal));
  assert.equal(scripted.calls[1].sessionId, "s-1");
  // The second answer has no usage and no model to price it by: tokens and cost unknown.
  assert.deepEqual(state.usage, {
    inputTokens: 3,
    outputTokens: 4,
    costUsd: 0.5,
    calls: 2,
    callsWithoutUsage: 1,
    callsWithoutCost: 1,
  });
});

Deno.test("callBackend: the step timeout is STEP_TIMEOUT; a run stop rethrows the run's reason", async () => {
  const state = fresh();
  const slow = () => new ScriptedBackend([{ text: "late", delayMs: 10_000 }]);
  const request = stepRequest(def, initial, state, "Go", undefined, "m-1");
  assert.equal(request.model, "m-1");
  await assert.rejects(
    () =>
      callBackend(
        slow(),
        request,
        state,
        initial,
        context(new AbortController().signal, {
          timeoutMs: 20,
        }),
      ),
    (e: StepflowError) =>
      e.code === "STEP_TIMEOUT" &&
      e.message ===
        'Backend call of step "initial.issue" timed out after 20 ms (step). Raise the step\'s timeoutMs or limits.stepTimeoutMs.',
  );
  const run = new AbortController();
  const stopped = new StepflowError("CANCELLED", "run cancelled");
  setTimeout(() => run.abort(stopped), 20);
  await assert.rejects(
    () => callBackend(slow(), request, state, initial, context(run.signal, { timeoutMs: 5_000 })),
    (e: unknown) => e === stopped,
  );
  assert.equal(state.usage.calls, 0, "a call that did not answer is not counted");
});

Deno.test("callBackend waits while the run is paused before it sends", async () => {
  const state = fresh();
  const backend = new ScriptedBackend(["ok"]);
  let release!: () => void;
  const paused = new Promise<void>((r) => release = r);
  const sent = callBackend(
    backend,
    stepRequest(def, initial, state, "Go", undefined, undefined),
    state,
    initial,
    context(new AbortController().signal, { waitIfPaused: () => paused }),
  );
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(backend.calls.length, 0);
  release();
  const response = await sent;
  assert.ok(!isWait(response));
  assert.equal(response.text, "ok");
});

Deno.test("run control: a pause holds waiters until resumed; a stop ends it and fires the signal", async () => {
  const control = createRunnerControl();
  assert.equal(control.pause(), true);
  assert.equal(control.pause(), false, "already paused");
  let passed = false;
  const waiting = control.waitIfPaused().then(() => passed = true);
  await new Promise((r) => setTimeout(r, 5));
  assert.equal(passed, false);
  control.resume()!();
  await waiting;
  assert.equal(control.resume(), undefined, "not paused any more");
  control.pause();
  assert.equal(control.stop("aborted"), true);
  assert.equal(control.stop("timeout"), false, "the first cause wins");
  await control.waitIfPaused(); // a stop ends the pause
  assert.equal(control.stopCause, "aborted");
  assert.equal((control.signal.reason as StepflowError).code, "ABORTED");
});

Deno.test("watchStops: the caller's signal, the time limit and a cancel request stop the run", async () => {
  const causes: string[] = [];
  const caller = new AbortController();
  let requested = false;
  const detach = watchStops((cause) => causes.push(cause), {
    signal: caller.signal,
    runTimeoutMs: 30,
    takeCancelRequest: () => Promise.resolve(requested),
    cancelPollMs: 5,
    onPollError: () => {},
  });
  caller.abort();
  requested = true;
  await new Promise((r) => setTimeout(r, 60));
  detach();
  assert.equal(causes[0], "cancelled");
  assert.ok(causes.includes("timeout"));
  assert.ok(causes.filter((c) => c === "cancelled").length >= 2, "the cancel request was polled");
  const after = causes.length;
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(causes.length, after, "nothing fires once detached");
});
