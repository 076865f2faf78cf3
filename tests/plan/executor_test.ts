import assert from "node:assert/strict";
import { executePlan, startPlan } from "../../src/plan/executor.ts";
import type { ApprovalRequest, Plan, ProgressEvent } from "../../src/plan/types.ts";
import type { StepInfo } from "../../src/events/types.ts";
import { makePlan, testTools } from "./helpers.ts";
import { validatePlan } from "../../src/plan/validate.ts";

const work = (id: string, dependsOn: string[] = [], ms = 20) => ({
  id,
  description: `Work ${id}`,
  tool: "work",
  args: { name: id, ms },
  dependsOn,
});

Deno.test("diamond: the two middle steps overlap, the last waits for both", async () => {
  const { tools, recorder } = testTools();
  const plan = makePlan([work("a"), work("b", ["a"]), work("c", ["a"]), work("d", ["b", "c"])]);
  const summary = await executePlan(plan, { tools });
  assert.equal(summary.status, "completed");
  assert.equal(summary.ok, true);
  assert.equal(recorder.started[0], "a");
  assert.deepEqual(recorder.started.slice(1, 3).sort(), ["b", "c"]);
  assert.equal(recorder.started[3], "d");
  const overlapOf = (name: string) => recorder.overlaps.find(([n]) => n === name)![1];
  assert.deepEqual(overlapOf("a"), []);
  assert.ok(
    overlapOf("c").includes("b") || overlapOf("b").includes("c"),
    "b and c ran at the same time",
  );
  assert.deepEqual(overlapOf("d"), [], "d started after b and c finished");
  assert.equal(recorder.maxActive, 2);
  assert.equal(summary.maxParallel, 2);
  assert.deepEqual(summary.steps.completed, ["a", "b", "c", "d"]);
  assert.equal(summary.plan.steps[3].result?.value, "d");
});

Deno.test("wide: 12 independent steps run 4 at a time by default, or as many as allowed", async () => {
  const steps = Array.from({ length: 12 }, (_, i) => work(`w${i}`, [], 15));
  const four = testTools();
  const s4 = await executePlan(makePlan(steps), { tools: four.tools });
  assert.equal(four.recorder.maxActive, 4);
  assert.equal(s4.maxParallel, 4);
  const six = testTools();
  await executePlan(makePlan(steps), { tools: six.tools, concurrency: 6 });
  assert.equal(six.recorder.maxActive, 6);
  const one = testTools();
  await executePlan(makePlan(steps), { tools: one.tools, concurrency: 1 });
  assert.equal(one.recorder.maxActive, 1);
  assert.deepEqual(
    one.recorder.started,
    steps.map((s) => s.id),
    "plan order is kept among ready steps",
  );
});

Deno.test("$refs are resolved from completed results anywhere inside args", async () => {
  const { tools } = testTools();
  const plan = makePlan([
    {
      id: "src",
      description: "S",
      tool: "work",
      args: { name: "src", ms: 1, value: { files: ["a.txt", "b.txt"], n: 2 } },
    },
    {
      id: "use",
      description: "U",
      tool: "echo",
      args: {
        first: "$src.files[0]",
        all: "$src",
        nested: { list: ["$src.n"] },
        text: "n=${src.n}",
      },
      dependsOn: ["src"],
    },
  ]);
  const summary = await executePlan(plan, { tools });
  assert.deepEqual(summary.plan.steps[1].result?.value, {
    first: "a.txt",
    all: { files: ["a.txt", "b.txt"], n: 2 },
    nested: { list: [2] },
    text: "n=2",
  });
  assert.deepEqual(plan.steps[1].args.first, "$src.files[0]", "the caller's plan is not modified");
  assert.equal(plan.steps[0].status, "pending");
});

Deno.test("a ref to a missing part of a result fails the step with a clear error", async () => {
  const { tools } = testTools();
  const plan = makePlan([
    { id: "a", description: "A", tool: "work", args: { name: "a", ms: 1, value: { x: 1 } } },
    { id: "b", description: "B", tool: "echo", args: { v: "$a.y" }, dependsOn: ["a"] },
  ]);
  const summary = await executePlan(plan, { tools });
  assert.equal(summary.status, "failed");
  assert.match(
    summary.plan.steps[1].result!.error!,
    /Step "b": cannot resolve \$a\.y: \$a has no key "y"/,
  );
});

Deno.test("approval: the approver sees resolved args and the reason; allow runs, deny skips the step and its dependents", async () => {
  const { tools, recorder } = testTools();
  const requests: ApprovalRequest[] = [];
  const plan = makePlan([
    { id: "a", description: "A", tool: "work", args: { name: "a", ms: 1, value: "payload" } },
    { id: "ok", description: "Allowed", tool: "danger", args: { what: "$a" }, dependsOn: ["a"] },
    { id: "no", description: "Denied", tool: "danger", args: { what: "deny" } },
    {
      id: "after_no",
      description: "Needs no",
      tool: "work",
      args: { name: "after_no" },
      dependsOn: ["no"],
    },
    {
      id: "after_after",
      description: "Chain",
      tool: "work",
      args: { name: "after_after" },
      dependsOn: ["after_no"],
    },
    {
      id: "asked",
      description: "Step asks",
      tool: "work",
      args: { name: "asked", ms: 1 },
      requiresApproval: true,
    },
    { id: "free", description: "Independent", tool: "work", args: { name: "free" } },
  ]);
  const summary = await executePlan(plan, {
    tools,
    approver: (req) => {
      requests.push(req);
      return req.args.what === "deny" ? { approved: false, reason: "not today" } : true;
    },
  });
  assert.deepEqual(requests.map((r) => [r.stepId, r.reason]).sort(), [
    ["asked", "the step asks for approval"],
    ["no", "danger always needs approval"],
    ["ok", "danger always needs approval"],
  ]);
  assert.deepEqual(requests.find((r) => r.stepId === "ok")!.args, { what: "payload" });
  const status = Object.fromEntries(summary.plan.steps.map((s) => [s.id, s.status]));
  assert.deepEqual(status, {
    a: "completed",
    ok: "completed",
    no: "skipped",
    after_no: "skipped",
    after_after: "skipped",
    asked: "completed",
    free: "completed",
  });
  const byId = (id: string) => summary.plan.steps.find((s) => s.id === id)!;
  assert.equal(byId("no").result?.error, "User denied approval (not today)");
  assert.equal(byId("after_no").result?.error, 'Skipped because step "no" was skipped');
  assert.equal(byId("after_after").result?.error, 'Skipped because step "after_no" was skipped');
  assert.ok(!recorder.started.includes("danger:deny"));
  assert.equal(summary.status, "completed", "skipped steps are a deliberate outcome");
});

Deno.test("approval: waiting steps hold no slot and are asked together; the free step starts at once", async () => {
  for (const concurrency of [4, 1]) {
    // One timeline for everything: approver questions and answers, and tools starting.
    const timeline: string[] = [];
    const { tools, recorder } = testTools();
    const started = recorder.started;
    recorder.started = new Proxy(started, {
      get(target, key) {
        if (key === "push") {
          return (name: string) => {
            timeline.push(`start:${name}`);
            return target.push(name);
          };
        }
        return Reflect.get(target, key);
      },
    });
    const plan = makePlan([
      ...Array.from(
        { length: 4 },
        (_, i) => ({ id: `d${i}`, description: "D", tool: "danger", args: { what: `${i}` } }),
      ),
      work("free", [], 1),
    ]);
    const summary = await executePlan(plan, {
      tools,
      concurrency,
      approver: async (req) => {
        timeline.push(`ask:${req.stepId}`);
        await new Promise((r) => setTimeout(r, 250));
        timeline.push(`answer:${req.stepId}`);
        return true;
      },
    });
    assert.equal(summary.status, "completed", `concurrency ${concurrency}`);
    const firstAnswer = timeline.findIndex((e) => e.startsWith("answer:"));
    const before = timeline.slice(0, firstAnswer);
    assert.ok(
      before.includes("start:free"),
      `concurrency ${concurrency}: the free step ran before any approval came back: ${timeline}`,
    );
    assert.deepEqual(
      before.filter((e) => e.startsWith("ask:")).sort(),
      ["ask:d0", "ask:d1", "ask:d2", "ask:d3"],
      `concurrency ${concurrency}: all four approvals were asked at once: ${timeline}`,
    );
    assert.deepEqual(summary.steps.completed.sort(), ["d0", "d1", "d2", "d3", "free"]);
    assert.ok(summary.maxParallel <= concurrency, "approved steps still respect the limit");
  }
});

Deno.test("approval: the time a step waits for its approver is reported apart, not in its duration", async () => {
  const { tools } = testTools();
  const plan = makePlan([
    {
      id: "asked",
      description: "Asked",
      tool: "work",
      args: { name: "asked" },
      requiresApproval: true,
    },
    { id: "free", description: "Free", tool: "work", args: { name: "free" } },
  ]);
  // A person who takes a while to answer.
  const approver = () => new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 150));
  const summary = await executePlan(plan, { tools, approver });
  const asked = summary.plan.steps.find((s) => s.id === "asked")!.result!;
  assert.equal(asked.ok, true);
  assert.ok(asked.approvalWaitMs! >= 140, JSON.stringify(asked));
  assert.ok(asked.duration < asked.approvalWaitMs!, JSON.stringify(asked));
  const free = summary.plan.steps.find((s) => s.id === "free")!.result!;
  assert.equal(free.approvalWaitMs, undefined);
  // The plan file keeps it (the schema knows the field).
  assert.equal(validatePlan(summary.plan).ok, true);
});

Deno.test("approval: a step approved after the run stopped does not start; autoApprove lists tools; no approver denies with a hint", async () => {
  const { tools, recorder } = testTools();
  const stopped = await executePlan(
    makePlan([
      { id: "d0", description: "D", tool: "danger", args: { what: "late" } },
      { id: "boom", description: "Fails", tool: "fail", args: { message: "disk full" } },
    ]),
    {
      tools,
      approver: async () => {
        await new Promise((r) => setTimeout(r, 30));
        return true;
      },
    },
  );
  assert.equal(stopped.status, "failed");
  assert.ok(!recorder.started.includes("danger:late"), `${recorder.started}`);
  assert.equal(stopped.plan.steps[0].status, "pending", "it runs when the plan is continued");

  const plan = makePlan(
    Array.from(
      { length: 4 },
      (_, i) => ({ id: `d${i}`, description: "D", tool: "danger", args: { what: `${i}` } }),
    ),
  );
  const auto = await executePlan(plan, { tools, autoApprove: ["danger"] });
  assert.deepEqual(auto.steps.completed.length, 4);
  const none = await executePlan(plan, { tools });
  assert.equal(none.steps.skipped.length, 4);
  assert.match(none.plan.steps[0].result!.error!, /no approver is configured .*--approve danger/);
});

Deno.test('onError "fail" (default) stops the run: running steps finish, nothing new starts', async () => {
  const { tools, recorder } = testTools();
  const plan = makePlan([
    { id: "boom", description: "Fails", tool: "fail", args: { message: "disk full" } },
    work("slow", [], 40),
    work("dep", ["boom"]),
    work("dep2", ["dep"]),
    work("later", ["slow"]),
  ]);
  const summary = await executePlan(plan, { tools, concurrency: 2 });
  assert.equal(summary.status, "failed");
  assert.equal(summary.error, 'Step "boom" failed: disk full');
  const status = Object.fromEntries(summary.plan.steps.map((s) => [s.id, s.status]));
  assert.deepEqual(status, {
    boom: "failed",
    slow: "completed",
    dep: "blocked",
    dep2: "blocked",
    later: "pending",
  });
  assert.ok(!recorder.started.includes("later"));
  assert.equal(summary.plan.steps[0].result?.error, "disk full");
  assert.equal(summary.plan.steps[0].result?.ok, false);
});

Deno.test('onError "continue": dependents are blocked, independent steps go on', async () => {
  const { tools, recorder } = testTools();
  const plan = makePlan([
    {
      id: "boom",
      description: "Fails",
      tool: "fail",
      args: { message: "nope" },
      onError: "continue",
    },
    work("dep", ["boom"]),
    work("dep2", ["dep"]),
    work("free"),
    work("free2", ["free"]),
  ]);
  const summary = await executePlan(plan, { tools });
  const status = Object.fromEntries(summary.plan.steps.map((s) => [s.id, s.status]));
  assert.deepEqual(status, {
    boom: "failed",
    dep: "blocked",
    dep2: "blocked",
    free: "completed",
    free2: "completed",
  });
  assert.equal(summary.plan.steps[1].result?.error, 'Blocked because step "boom" failed');
  assert.deepEqual(recorder.started.filter((s) => s.startsWith("free")), ["free", "free2"]);
  assert.equal(summary.status, "failed");
  assert.deepEqual(summary.steps.blocked, ["dep", "dep2"]);
});

Deno.test("onError retry=N retries with exponential backoff, firing onStepRetry", async () => {
  const { tools } = testTools();
  const retries: Array<[string, number, string]> = [];
  const starts: number[] = [];
  const plan = makePlan([
    {
      id: "flaky",
      description: "Flaky",
      tool: "fail",
      args: { message: "timeout", times: 2 },
      onError: "retry=3",
    },
    {
      id: "hopeless",
      description: "Hopeless",
      tool: "fail",
      args: { message: "gone" },
      onError: { retry: 1, backoffMs: 1 },
    },
  ]);
  const t0 = performance.now();
  const summary = await executePlan(plan, {
    tools,
    retryBackoffMs: 10,
    events: {
      onStepStart: (info) => void (info.stepId === "flaky" && starts.push(performance.now() - t0)),
      onStepRetry: (info, attempt, error) =>
        void retries.push([info.stepId, attempt, (error as Error).message]),
    },
  });
  const flaky = summary.plan.steps[0];
  assert.equal(flaky.status, "completed");
  assert.equal(flaky.result?.value, "recovered");
  assert.equal(flaky.result?.attempts, 3);
  assert.deepEqual(retries.filter((r) => r[0] === "flaky"), [["flaky", 1, "timeout"], [
    "flaky",
    2,
    "timeout",
  ]]);
  assert.ok(
    starts[2] - starts[1] >= 18,
    `second delay doubles (${starts.map((s) => s.toFixed(1))})`,
  );
  const hopeless = summary.plan.steps[1];
  assert.equal(hopeless.status, "failed");
  assert.equal(hopeless.result?.attempts, 2);
  assert.equal(summary.status, "failed");
});

Deno.test("cancellation: running tools are aborted, the run ends cancelled, unfinished steps go back to pending", async () => {
  const { tools } = testTools();
  const plan = makePlan([
    { id: "h", description: "Hangs", tool: "hang" },
    work("quick", [], 1),
    work("after", ["h"]),
  ]);
  let aborted = 0;
  // Cancelled once h runs and quick has completed (events, not a fixed time: on a busy machine
  // quick may not be done 30 ms after the start).
  const seen = new Set<string>();
  const ready = Promise.withResolvers<void>();
  const run = startPlan(plan, {
    tools,
    events: { onAbort: () => void aborted++ },
    onProgress: (e) => {
      seen.add(`${e.stepId}:${e.status}`);
      if (seen.has("h:running") && seen.has("quick:completed")) ready.resolve();
    },
  });
  await ready.promise;
  run.cancel("user pressed Ctrl-C");
  const summary = await run.summary;
  assert.equal(summary.status, "cancelled");
  assert.equal(summary.error, "Cancelled: user pressed Ctrl-C");
  const status = Object.fromEntries(summary.plan.steps.map((s) => [s.id, s.status]));
  assert.deepEqual(status, { h: "pending", quick: "completed", after: "pending" });
  assert.equal(aborted, 1);

  const controller = new AbortController();
  controller.abort(new Error("gone"));
  const pre = await executePlan(plan, { tools, signal: controller.signal });
  assert.equal(pre.status, "cancelled");
  assert.deepEqual(pre.steps.pending, ["h", "quick", "after"]);
});

Deno.test("a plan whose completed steps are kept continues where it stopped", async () => {
  const { tools, recorder } = testTools();
  const plan = makePlan([work("a", [], 1), work("b", ["a"], 1), work("c", ["b"], 1)]);
  const saved: Plan[] = [];
  const first = await executePlan(plan, {
    tools,
    persist: (p) => void saved.push(structuredClone(p)),
  });
  assert.equal(first.status, "completed");
  // Pretend the process died after "a": take the snapshot saved when a completed.
  const snapshot = saved.find((p) =>
    p.steps[0].status === "completed" && p.steps[1].status !== "completed"
  )!;
  assert.ok(snapshot, "a snapshot after the first step was saved");
  assert.deepEqual(saved.at(-1)!.steps.map((s) => s.status), [
    "completed",
    "completed",
    "completed",
  ]);
  recorder.started.length = 0;
  const second = await executePlan(snapshot, { tools });
  assert.equal(second.status, "completed");
  assert.deepEqual(recorder.started, ["b", "c"]);
});

Deno.test("progress: every status change is streamed, from the start, to any consumer", async () => {
  const { tools } = testTools();
  const plan = makePlan([work("a", [], 1), work("b", ["a"], 1)]);
  const seen: ProgressEvent[] = [];
  const run = startPlan(plan, { tools, onProgress: (e) => void seen.push(e) });
  await new Promise((r) => setTimeout(r, 30)); // subscribe late: nothing is lost
  const streamed: string[] = [];
  for await (const event of run.progress) streamed.push(`${event.stepId}:${event.status}`);
  assert.deepEqual(streamed, [
    "a:ready",
    "b:blocked",
    "a:running",
    "a:completed",
    "b:ready",
    "b:running",
    "b:completed",
  ]);
  assert.equal(seen.length, streamed.length);
  assert.deepEqual(seen[0], {
    taskId: "task_test",
    planId: "plan_test",
    stepId: "a",
    status: "ready",
  });
  assert.equal(seen[3].result?.ok, true);
  assert.equal((await run.summary).status, "completed");
});

Deno.test("events: the shared vocabulary fires in order with step infos", async () => {
  const { tools } = testTools();
  const plan = makePlan([work("a", [], 1), {
    id: "b",
    description: "B",
    tool: "fail",
    args: { message: "x" },
    dependsOn: ["a"],
    onError: "continue",
  }]);
  const log: string[] = [];
  const infos: StepInfo[] = [];
  await executePlan(plan, {
    tools,
    runId: "run-1",
    events: {
      onStateChange: (n, o) => void log.push(`state:${o}->${n}`),
      onPlanStart: () => void log.push("planStart"),
      onStepStart: (info) => void (log.push(`start:${info.stepId}`), infos.push(info)),
      onStepEnd: (info, result) =>
        void log.push(`end:${info.stepId}:${(result as { ok: boolean }).ok}`),
      onStepError: (info) => void log.push(`error:${info.stepId}`),
      onPlanEnd: (_plan, ctx) => void log.push(`planEnd:${ctx.status}`),
    },
  });
  assert.deepEqual(log, [
    "state:idle->running",
    "planStart",
    "start:a",
    "end:a:true",
    "start:b",
    "error:b",
    "end:b:false",
    "state:running->failed",
    "planEnd:failed",
  ]);
  assert.deepEqual(infos[0], {
    runId: "run-1",
    stepId: "a",
    desc: "Work a",
    order: 1,
    path: ["Work a"],
    iteration: 1,
    tool: "work",
    planId: "plan_test",
  });
});

Deno.test("events: log lines as onStepLog, the settled status at each end, an end for steps that never started", async () => {
  const { tools } = testTools();
  const plan = makePlan([
    { id: "a", description: "A", tool: "fail", args: { message: "x" }, onError: "continue" },
    work("b", ["a"], 1),
    { ...work("c", [], 1), requiresApproval: true },
    work("d", ["c"], 1),
  ]);
  const log: string[] = [];
  await executePlan(plan, {
    tools,
    concurrency: 1,
    events: {
      onStepStart: (info) => void log.push(`start:${info.stepId}`),
      onStepEnd: (info) => void log.push(`end:${info.stepId}:${info.status}`),
      onStepLog: (info, message, level) => void log.push(`log:${info.stepId}:${level}:${message}`),
    },
  });
  assert.deepEqual(log, [
    "start:a",
    "end:a:failed",
    "end:b:blocked",
    "start:c",
    "log:c:warn:needs approval (the step asks for approval) but no approver is configured",
    "end:c:skipped",
    "end:d:skipped",
  ]);
});

Deno.test("invalid plans are refused before anything runs", async () => {
  const { tools, recorder } = testTools();
  const plan = makePlan([work("a"), { id: "b", description: "B", tool: "nope" }]);
  await assert.rejects(executePlan(plan, { tools }), /Step "b": Unknown tool: nope/);
  assert.deepEqual(recorder.started, []);
  const recover = makePlan([{
    id: "r",
    description: "R",
    tool: "fail",
    args: { message: "x" },
    onError: "recover",
  }]);
  await assert.rejects(
    executePlan(recover, { tools }),
    (e: Error & { code: string }) => e.code === "PLAN_RECOVER_NO_BACKEND",
  );
});

Deno.test("tools can report progress and log lines", async () => {
  const { tools } = testTools();
  tools.register({
    name: "long",
    description: "Reports progress",
    inputSchema: (await import("zod")).z.object({}),
    execute: (_a, ctx) => {
      (ctx.reportProgress as (p: number, m?: string) => void)(50, "half way");
      (ctx.log as (m: string) => void)("note");
      return 1;
    },
  });
  const run = startPlan(makePlan([{ id: "l", description: "L", tool: "long" }]), { tools });
  await run.summary;
  const events: ProgressEvent[] = [];
  for await (const e of run.progress) events.push(e);
  const half = events.find((e) => e.progress === 50)!;
  assert.equal(half.status, "running");
  assert.equal(half.logs?.[0].message, "half way");
  assert.ok(events.some((e) => e.logs?.[0].message === "note"));
});

Deno.test("interrupted steps: saved as running before the tool starts; re-run only when idempotent or allowed", async () => {
  const { tools, recorder } = testTools();
  tools.register({
    name: "peek",
    description: "Reads (idempotent)",
    inputSchema: tools.list().find((t) => t.name === "echo")!.inputSchema,
    idempotent: true,
    execute: (args: Record<string, unknown>) => args,
  });
  // What the file held when the tool started: `running`, written before the call.
  const saved: string[] = [];
  const seen = testTools(recorder);
  await executePlan(makePlan([work("a", [], 1)]), {
    tools: seen.tools,
    persist: (p) => void saved.push(`${p.steps[0].status}:${recorder.started.length}`),
  });
  assert.equal(saved[0], "running:0", `saved before the tool ran: ${saved}`);

  const left = makePlan([
    { id: "w", description: "Work", tool: "work", args: { name: "w", ms: 1 } },
    { id: "p", description: "Peek", tool: "peek", args: { v: 1 } },
  ]);
  left.steps[0].status = "running";
  left.steps[1].status = "running";
  assert.throws(
    () => startPlan(left, { tools }),
    (e: Error & { code?: string }) =>
      e.code === "PLAN_STEP_INTERRUPTED" &&
      /Step "w" \(work\) was running when an earlier run stopped/.test(e.message) &&
      !/"p"/.test(e.message),
  );
  const logs: string[] = [];
  const summary = await executePlan(left, {
    tools,
    rerunInterrupted: ["w"],
    onProgress: (e) => e.logs?.forEach((l) => logs.push(`${e.stepId}: ${l.message}`)),
  });
  assert.equal(summary.status, "completed");
  assert.ok(logs.some((l) => /^p: .*peek is idempotent/.test(l)), logs.join("\n"));
  assert.ok(
    logs.some((l) => /^w: .*work is not idempotent.*re-run allowed/.test(l)),
    logs.join("\n"),
  );
});

Deno.test("a step whose start cannot be saved does not run its tool", async () => {
  const { tools, recorder } = testTools();
  const summary = await executePlan(makePlan([work("a", [], 1)]), {
    tools,
    persist: () => {
      throw new Error("disk full");
    },
  });
  assert.equal(summary.status, "failed");
  assert.deepEqual(recorder.started, [], "the tool never ran");
  assert.match(
    summary.plan.steps[0].result!.error!,
    /could not be recorded as started, so its tool was not run \(saving the plan failed: disk full\)/,
  );
});
