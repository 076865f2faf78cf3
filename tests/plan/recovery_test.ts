import assert from "node:assert/strict";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { executePlan } from "../../src/plan/executor.ts";
import { validatePlan } from "../../src/plan/validate.ts";
import { makePlan, testTools } from "./helpers.ts";

const failing = (onError: "recover" | { recover: number } = "recover") => ({
  id: "fetch",
  description: "Fetch the data",
  tool: "fail",
  args: { message: "server down" },
  onError,
});

Deno.test("recover → retry with new args: the step runs again with them and the version bumps", async () => {
  const { tools, recorder } = testTools();
  const backend = new ScriptedBackend({
    "plan.recover": [{
      output: { action: "retry", args: { message: "mirror", times: 0 }, reason: "use the mirror" },
    }],
  });
  const plan = makePlan([failing(), {
    id: "use",
    description: "Use",
    tool: "echo",
    args: { got: "$fetch" },
    dependsOn: ["fetch"],
  }]);
  const summary = await executePlan(plan, { tools, backend });
  assert.equal(summary.status, "completed");
  const fetch = summary.plan.steps[0];
  assert.deepEqual(fetch.args, { message: "mirror", times: 0 });
  assert.equal(fetch.result?.value, "recovered");
  assert.equal(fetch.result?.attempts, 2);
  assert.deepEqual(summary.plan.steps[1].result?.value, { got: "recovered" });
  assert.equal(summary.plan.version, 2);
  assert.deepEqual(recorder.started, ["fail:server down", "fail:mirror"]);
  // The prompt carries the seed's text, the error, the step and the tools.
  const call = backend.calls[0];
  assert.equal(call.stepId, "plan.recover");
  assert.equal(call.kind, "step");
  assert.match(call.prompt, /^Step failed: Fetch the data\nError: server down\n/);
  assert.match(
    call.prompt,
    /Suggest one of:\n1\. Retry with different args\n2\. Skip and continue/,
  );
  assert.match(call.prompt, /- fetch \[failed\] fail — Fetch the data error: server down/);
  assert.ok(call.outputSchema);
});

Deno.test("recover → skip: the step and its dependents are skipped, the rest goes on", async () => {
  const { tools } = testTools();
  const backend = new ScriptedBackend({
    "plan.recover": [{ output: { action: "skip", reason: "optional data" } }],
  });
  const plan = makePlan([
    failing(),
    { id: "use", description: "Use", tool: "echo", args: { got: "$fetch" }, dependsOn: ["fetch"] },
    { id: "other", description: "Other", tool: "work", args: { name: "other", ms: 1 } },
  ]);
  const summary = await executePlan(plan, { tools, backend });
  assert.deepEqual(summary.plan.steps.map((s) => s.status), ["skipped", "skipped", "completed"]);
  assert.equal(summary.plan.steps[0].result?.error, "Skipped by recovery: optional data");
  assert.equal(summary.status, "completed");
});

Deno.test("recover → insert: new steps run first, then the failed step again; the plan is re-validated", async () => {
  const { tools, recorder } = testTools();
  const backend = new ScriptedBackend({
    "plan.recover": [{
      output: {
        action: "insert",
        steps: [
          {
            id: "wake",
            description: "Wake the server",
            tool: "work",
            args: { name: "wake", ms: 1 },
          },
          {
            id: "check",
            description: "Check it",
            tool: "work",
            args: { name: "check", ms: 1 },
            dependsOn: ["wake"],
          },
        ],
        args: { message: "server down", times: 1 },
        reason: "start the server first",
      },
    }],
  });
  const plan = makePlan([failing(), {
    id: "use",
    description: "Use",
    tool: "echo",
    args: { got: "$fetch" },
    dependsOn: ["fetch"],
  }]);
  const summary = await executePlan(plan, { tools, backend });
  assert.equal(summary.status, "completed");
  assert.deepEqual(summary.plan.steps.map((s) => [s.id, s.order, s.status]), [
    ["wake", 1, "completed"],
    ["check", 2, "completed"],
    ["fetch", 3, "completed"],
    ["use", 4, "completed"],
  ]);
  assert.deepEqual(summary.plan.steps[2].dependsOn, ["wake", "check"]);
  assert.deepEqual(recorder.started, ["fail:server down", "wake", "check", "fail:server down"]);
  assert.ok(summary.plan.version >= 2);
  assert.deepEqual(validatePlan(summary.plan, tools).problems, []);
});

Deno.test("recover → abort: the run ends aborted", async () => {
  const { tools, recorder } = testTools();
  const backend = new ScriptedBackend({
    "plan.recover": [{ output: { action: "abort", reason: "data is gone for good" } }],
  });
  const plan = makePlan([failing(), {
    id: "next",
    description: "N",
    tool: "work",
    args: { name: "next" },
    dependsOn: ["fetch"],
  }]);
  const summary = await executePlan(plan, { tools, backend, concurrency: 1 });
  assert.equal(summary.status, "aborted");
  assert.match(summary.error!, /recovery aborted the run: data is gone for good/);
  assert.deepEqual(summary.plan.steps.map((s) => s.status), ["failed", "blocked"]);
  assert.ok(!recorder.started.includes("next"));
});

Deno.test("an invalid recovery is re-asked once with its problems; twice invalid fails the step", async () => {
  const { tools } = testTools();
  const backend = new ScriptedBackend({
    "plan.recover": [
      { output: { action: "insert", steps: [{ id: "fetch", description: "dup", tool: "nope" }] } },
      { output: { action: "retry", args: { message: "ok", times: 0 } } },
    ],
  });
  const summary = await executePlan(makePlan([failing()]), { tools, backend });
  assert.equal(summary.status, "completed");
  assert.equal(backend.calls[1].kind, "reask");
  assert.match(
    backend.calls[1].prompt,
    /\n---\nYour previous answer was rejected: your decision could not be used\.\n- .*Duplicate step id "fetch"/s,
  );
  assert.match(
    backend.calls[1].prompt,
    /\nAnswer again with only a JSON object that matches the required JSON schema exactly\.$/,
  );
  assert.match(backend.calls[1].prompt, /Unknown tool: nope/);

  const bad = new ScriptedBackend({
    "plan.recover": ["no json here", { output: { action: "explode" } }],
  });
  const failed = await executePlan(makePlan([failing()]), { tools, backend: bad });
  assert.equal(failed.status, "failed");
  assert.equal(failed.plan.steps[0].status, "failed");
  assert.equal(bad.calls.length, 2);
  assert.match(bad.calls[1].prompt, /rejected: your answer contained no JSON object\.\n/);
});

Deno.test("recovery rounds are bounded per step", async () => {
  const { tools } = testTools();
  const backend = new ScriptedBackend({
    "plan.recover": [
      { output: { action: "retry", reason: "try again" } },
      { output: { action: "retry", reason: "and again" } },
    ],
  });
  const summary = await executePlan(makePlan([failing({ recover: 2 })]), { tools, backend });
  assert.equal(summary.status, "failed");
  assert.equal(backend.calls.length, 2);
  assert.equal(summary.plan.steps[0].result?.attempts, 3);
});

Deno.test("a backend failure during recovery fails the step with the reason", async () => {
  const { tools } = testTools();
  const backend = new ScriptedBackend({ "plan.recover": [{ error: "rate limited" }] });
  const events: string[] = [];
  const summary = await executePlan(makePlan([failing()]), {
    tools,
    backend,
    onProgress: (e) => e.logs?.forEach((l) => events.push(l.message)),
  });
  assert.equal(summary.status, "failed");
  assert.equal(summary.plan.steps[0].result?.error, "server down");
  assert.ok(events.some((m) => /rate limited/.test(m)), events.join("\n"));
});

Deno.test("cancelling while the LLM is asked leaves the step pending for the next run", async () => {
  const { tools } = testTools();
  const backend = new ScriptedBackend({
    "plan.recover": [{ delayMs: 2000, output: { action: "skip" } }],
  });
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error("stop")), 30);
  const summary = await executePlan(makePlan([failing()]), {
    tools,
    backend,
    signal: controller.signal,
  });
  assert.equal(summary.status, "cancelled");
  assert.equal(summary.plan.steps[0].status, "pending");
});
