import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import type { LlmRequest } from "../../src/llm/types.ts";
import { out, seed004Files, writeAgent } from "./fixtures.ts";

type Steps = Record<string, Record<string, unknown>>;

async function setup(mutate?: (steps: Steps, agent: Record<string, unknown>) => void) {
  const root = await Deno.makeTempDir();
  const files = seed004Files();
  mutate?.(files.registry.steps as Steps, files.agent!);
  await writeAgent(root, "issue-solver", files);
  return await loadAgentDefinition("issue-solver", { cwd: root });
}

/** A backend that loops on continuation.issue forever (repeat), optionally slowly. */
function looping(delayMs = 0) {
  return new ScriptedBackend((req: LlmRequest) => ({
    delayMs,
    output: req.stepId === "initial.issue"
      ? { stepId: "initial.issue", next_action: { action: "next" } }
      : { stepId: "continuation.issue", next_action: { action: "repeat" } },
  }));
}

Deno.test("maxTotalIterations ends the run max_iterations", async () => {
  const def = await setup();
  const result = await new StepFlowRunner(def, { backend: looping(), maxTotalIterations: 7 }).run({
    args: { topic: "t" },
  });
  assert.equal(result.completionReason, "max_iterations");
  assert.equal(result.iterations, 7);
  assert.equal(result.state.history.length, 7);
  assert.equal(result.error?.code, "MAX_ITERATIONS");
  assert.match(result.error!.message, /maxTotalIterations \(7\)/);
});

Deno.test("limits.maxTotalIterations from agent.json (default 100)", async () => {
  const def = await setup();
  const result = await new StepFlowRunner(def, { backend: looping() }).run({
    args: { topic: "t" },
  });
  assert.equal(result.iterations, 100);
  const def3 = await setup((_s, agent) => agent.limits = { maxTotalIterations: 3 });
  const r3 = await new StepFlowRunner(def3, { backend: looping() }).run({ args: { topic: "t" } });
  assert.equal(r3.iterations, 3);
});

Deno.test("events fire in order with stepInfo; a throwing handler never breaks the run", async () => {
  const def = await setup();
  const seen: string[] = [];
  const backend = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "next")],
    "continuation.issue": [out("continuation.issue", "complete")],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const warnings: string[] = [];
  const result = await new StepFlowRunner(def, {
    backend,
    onWarning: (m) => void warnings.push(m),
    events: [
      {
        onPlanStart: (_p, ctx) => void seen.push(`planStart ${typeof ctx.runId}`),
        onStateChange: (n, o) => void seen.push(`state ${o}->${n}`),
        onStepStart: (i) =>
          void seen.push(`start ${i.stepId} #${i.order} it${i.iteration} ${i.desc}`),
        onStepEnd: (i, r) =>
          void seen.push(`end ${i.stepId} ${(r as { transition: string }).transition}`),
        onPlanEnd: (_p, ctx) => void seen.push(`planEnd ${ctx.status}`),
      },
      {
        onStepStart: () => {
          throw new Error("handler bug");
        },
      },
    ],
  }).run({ args: { topic: "t" } });
  assert.equal(result.success, true);
  assert.deepEqual(seen, [
    "state idle->running",
    "planStart string",
    "start initial.issue #1 it1 Issue Initial Prompt",
    "end initial.issue next",
    "start continuation.issue #2 it2 Issue Continuation Prompt",
    "end continuation.issue complete",
    "start complete.issue #3 it3 Issue Completion Report",
    "end complete.issue complete",
    "state running->completed",
    "planEnd completed",
  ]);
  assert.equal(warnings.length, 3);
  assert.match(warnings[0], /onStepStart threw: handler bug/);
});

Deno.test("pause holds the run between calls; resume continues it", async () => {
  const def = await setup();
  const states: string[] = [];
  const backend = looping(5);
  let paused = () => {};
  const pausedOnce = new Promise<void>((resolve) => (paused = resolve));
  const runner = new StepFlowRunner(def, {
    backend,
    maxTotalIterations: 6,
    events: {
      onPause: () => {
        states.push("paused");
        paused();
      },
      onResume: () => void states.push("resumed"),
      onStepStart: (info) => {
        if (info.iteration === 2) runner.pause();
      },
    },
  });
  const running = runner.run({ args: { topic: "t" } });
  // Wait for the pause itself, not for a fixed time: a loaded machine may take longer to get there.
  await pausedOnce;
  assert.equal(runner.state, "paused");
  const callsWhilePaused = backend.calls.length;
  assert.equal(callsWhilePaused, 1); // iteration 2 waits before its call
  await new Promise((r) => setTimeout(r, 40));
  assert.equal(backend.calls.length, callsWhilePaused);
  runner.resume();
  const result = await running;
  assert.deepEqual(states, ["paused", "resumed"]);
  assert.equal(result.iterations, 6);
  assert.equal(runner.state, "failed");
});

Deno.test("abort() cancels the call in flight and ends the run aborted", async () => {
  const def = await setup();
  const events: string[] = [];
  const runner = new StepFlowRunner(def, {
    backend: looping(10_000),
    events: { onAbort: () => void events.push("abort") },
  });
  const running = runner.run({ args: { topic: "t" } });
  setTimeout(() => runner.abort(), 30);
  const started = Date.now();
  const result = await running;
  assert.ok(Date.now() - started < 2000, "abort must not wait for the slow call");
  assert.equal(result.completionReason, "aborted");
  assert.equal(result.success, false);
  assert.equal(result.error?.code, "ABORTED");
  assert.deepEqual(events, ["abort"]);
  assert.equal(runner.state, "aborted");
});

Deno.test("an external signal cancels the run (cancelled)", async () => {
  const def = await setup();
  const controller = new AbortController();
  const running = new StepFlowRunner(def, { backend: looping(10_000) }).run({
    args: { topic: "t" },
    signal: controller.signal,
  });
  setTimeout(() => controller.abort(), 20);
  const result = await running;
  assert.equal(result.completionReason, "cancelled");
  const pre = new AbortController();
  pre.abort();
  const r2 = await new StepFlowRunner(def, { backend: looping() }).run({
    args: { topic: "t" },
    signal: pre.signal,
  });
  assert.equal(r2.completionReason, "cancelled");
  assert.equal(r2.iterations, 0);
});

Deno.test("runTimeoutMs ends the run timeout; stepTimeoutMs fails a slow call", async () => {
  const def = await setup();
  let timedOut = 0;
  const result = await new StepFlowRunner(def, {
    backend: looping(20),
    maxTotalIterations: 10_000,
    // Long enough for two 20 ms calls on a loaded machine, short enough to keep the test quick.
    runTimeoutMs: 400,
    events: { onTimeout: () => void timedOut++ },
  }).run({ args: { topic: "t" } });
  assert.equal(result.completionReason, "timeout");
  assert.equal(result.error?.code, "TIMEOUT");
  assert.equal(timedOut, 1);
  assert.ok(result.iterations >= 2);

  const r2 = await new StepFlowRunner(def, { backend: looping(5_000), stepTimeoutMs: 30 }).run({
    args: { topic: "t" },
  });
  assert.equal(r2.completionReason, "step_failed");
  assert.equal(r2.error?.code, "STEP_TIMEOUT");
  assert.match(r2.error!.message, /timed out after 30 ms/);
});

Deno.test("backend retries surface as onStepRetry events and backend_retry log lines", async () => {
  const def = await setup();
  const retries: string[] = [];
  let calls = 0;
  const backend = {
    name: "flaky",
    complete(req: LlmRequest, opts: { onRetry?: (i: never) => void } = {}) {
      calls++;
      if (calls === 1) {
        opts.onRetry?.({
          backend: "flaky",
          attempt: 1,
          maxAttempts: 3,
          delayMs: 5,
          status: 429,
          reason: "HTTP 429",
          error: new Error("rate limited"),
        } as never);
      }
      const action = req.stepId === "initial.issue" ? "complete" : undefined;
      return Promise.resolve({
        text: "",
        structuredOutput: req.stepId === "complete.issue"
          ? { stepId: "complete.issue", summary: "s" }
          : { stepId: req.stepId, next_action: { action } },
      });
    },
  };
  const result = await new StepFlowRunner(def, {
    backend,
    events: {
      onStepRetry: (info, attempt, error) =>
        void retries.push(`${info.stepId} ${attempt} ${(error as Error).message}`),
    },
  }).run({ args: { topic: "t" } });
  assert.equal(result.success, true);
  assert.deepEqual(retries, [
    "initial.issue 1 flaky attempt 1/3 failed (HTTP 429); retrying in 5 ms",
  ]);
});

Deno.test("without options.backend the agent's behavior.backend is created (unknown → clear error)", async () => {
  const def = await setup((_s, agent) => {
    (agent.behavior as Record<string, unknown>).backend = "nonsense";
  });
  await assert.rejects(
    new StepFlowRunner(def).run({ args: { topic: "t" } }),
    (e: Error) => /nonsense/.test(e.message) && /claude-code|anthropic|openai/.test(e.message),
  );
});

Deno.test("a cancel request recorded in the file store cancels the run; redrive continues it", async () => {
  const def = await setup();
  const dir = await Deno.makeTempDir();
  const store = new FileRunStore(dir, { durability: "process", onWarning: () => {} });
  let calls = 0;
  const backend = new ScriptedBackend((req: LlmRequest) => ({
    // The third call hangs until cancelled: the request must abort a call in flight.
    delayMs: ++calls === 3 ? 60_000 : 0,
    output: req.stepId === "initial.issue"
      ? { stepId: "initial.issue", next_action: { action: "next" } }
      : { stepId: "continuation.issue", next_action: { action: "repeat" } },
  }));
  const running = new StepFlowRunner(def, { backend, store, cancelPollMs: 20 }).run({
    args: { topic: "t" },
    runId: "cancel-me",
  });
  while (calls < 3) await new Promise((r) => setTimeout(r, 5));
  // Another store instance over the same directory: what another process (the dashboard) does.
  await new FileRunStore(dir).requestCancel("cancel-me");
  const result = await running;
  assert.equal(result.completionReason, "cancelled");
  assert.equal(result.error?.code, "CANCELLED");
  assert.equal((await store.loadCheckpoint("cancel-me"))?.status, "cancelled");
  // The request was taken: nothing is left to cancel the next drive.
  assert.equal(await store.takeCancelRequest("cancel-me"), false);

  // A cancelled run is redriven from its step (resume is for interrupted runs).
  const more = new ScriptedBackend({
    "continuation.issue": [out("continuation.issue", "complete")],
    "complete.issue": [{ output: { stepId: "complete.issue", summary: "s" } }],
  });
  const again = await new StepFlowRunner(def, { backend: more, store }).run({
    redrive: "cancel-me",
  });
  assert.equal(again.completionReason, "completed");
  assert.equal(again.state.history[0].stepId, "initial.issue");
});

Deno.test("a stale cancel request does not cancel the next drive of the run", async () => {
  const def = await setup();
  const store = new FileRunStore(await Deno.makeTempDir(), { durability: "process" });
  await store.requestCancel("stale");
  const result = await new StepFlowRunner(def, {
    backend: looping(),
    store,
    maxTotalIterations: 3,
    cancelPollMs: 1,
  }).run({ args: { topic: "t" }, runId: "stale" });
  assert.equal(result.completionReason, "max_iterations");
});

Deno.test("MemoryRunStore.requestCancel cancels a run driven in the same process", async () => {
  const def = await setup();
  const store = new MemoryRunStore();
  const running = new StepFlowRunner(def, { backend: looping(60_000), store, cancelPollMs: 10 })
    .run({ args: { topic: "t" }, runId: "m1" });
  await new Promise((r) => setTimeout(r, 30));
  await store.requestCancel("m1");
  const result = await running;
  assert.equal(result.completionReason, "cancelled");
  assert.equal((await store.loadCheckpoint("m1"))?.status, "cancelled");
});
