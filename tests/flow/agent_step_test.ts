import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { runStoreDirFor, runStoreFor } from "../../src/store/location.ts";
import { freshSchema, pg } from "../store/pg_server.ts";
import { shipBackend, shipFiles, writeShipAgents } from "./agent_step_fixtures.ts";
import { gateSchema, writeAgent } from "./fixtures.ts";
import { releaseFiles } from "./input_fixtures.ts";
import { childArgs } from "../../src/flow/step_agent.ts";
import type { RunnerState } from "../../src/flow/run_state.ts";

async function setup(step: Record<string, unknown> = {}) {
  const root = await Deno.makeTempDir();
  await writeShipAgents(root, step);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const store = new FileRunStore(join(root, "runs"));
  return { root, definition, store };
}

function code(expected: string) {
  return (error: unknown) => {
    assert.ok(error instanceof StepflowError, String(error));
    assert.equal(error.code, expected, error.message);
    return true;
  };
}

Deno.test("an agent step runs the child as its own run; the child's wait is the parent's, and answering the parent finishes both", async () => {
  const { definition, store } = await setup();
  const backend = shipBackend();
  const runner = new StepFlowRunner(definition, { backend, store });
  const first = await runner.run();
  assert.equal(first.completionReason, "waiting");
  assert.equal(first.finalStepId, "release.ship");
  assert.equal(first.waiting?.stepId, "release.ship");
  assert.equal(first.waiting?.prompt, "Ship 2.0.0? The plan: tag, publish");
  const childId = first.waiting!.child!.runId;
  assert.equal(first.waiting!.child!.stepId, "approve.release");
  assert.notEqual(childId, first.runId);
  assert.equal((await store.loadCheckpoint(first.runId))?.status, "waiting");
  const childCheckpoint = (await store.loadCheckpoint(childId))!;
  assert.equal(childCheckpoint.status, "waiting");
  assert.deepEqual(childCheckpoint.state.parent, {
    runId: first.runId,
    agent: "ship",
    stepId: "release.ship",
    depth: 1,
  });
  assert.deepEqual(childCheckpoint.state.args, { version: "2.0.0" });
  // The parent's log names the child before the child's first line was written.
  const startLine = (await store.readLog(first.runId)).find((e) => e.type === "agent_start")!;
  assert.equal(startLine.childRunId, childId);
  // Usage so far (plan.ship and the child's draft.release) is the parent's too.
  assert.equal(first.usage.inputTokens, 20);

  // A bad answer is refused against the child's schema, and nothing is recorded anywhere.
  await assert.rejects(
    new StepFlowRunner(definition, { backend, store }).answer(first.runId, { decision: "maybe" }),
    code("INPUT_ANSWER_INVALID"),
  );
  assert.equal((await store.loadCheckpoint(childId))?.status, "waiting");

  const done = await new StepFlowRunner(definition, { backend, store }).answer(
    first.runId,
    { decision: "next", note: "go" },
    { answeredBy: "ops" },
  );
  assert.equal(done.completionReason, "completed", JSON.stringify(done.error));
  assert.deepEqual(done.state.history.map((h) => h.stepId), [
    "plan.ship",
    "release.ship",
    "complete.ship",
  ]);
  const entry = done.state.history[1];
  assert.deepEqual(entry.child, {
    runId: childId,
    agent: "release",
    completionReason: "completed",
    // The child's total (draft.release and complete.release), which the parent's usage includes.
    // The scripted backend's model has no price: both calls' cost is unknown, not $0.
    usage: {
      inputTokens: 20,
      outputTokens: 10,
      costUsd: 0,
      calls: 2,
      callsWithoutUsage: 0,
      callsWithoutCost: 2,
    },
  });
  assert.deepEqual(done.state.handoff["release.ship"], { summary: "2.0.0 shipped" });
  assert.equal(backend.calls.at(-1)?.prompt.includes("Report: 2.0.0 shipped"), true);
  // Four calls of 10 + 5 tokens: the child's two roll up into the parent's totals, once each.
  assert.equal(done.usage.inputTokens, 40);
  assert.equal(done.usage.outputTokens, 20);
  assert.equal(done.usage.calls, 4);

  const child = (await store.loadCheckpoint(childId))!;
  assert.equal(child.status, "completed");
  const answered = (await store.readLog(childId)).find((e) => e.type === "input_answer")!;
  assert.equal(answered.answeredBy, "ops");
  const summaries = await store.list();
  assert.equal(summaries.find((s) => s.runId === childId)?.parentRunId, first.runId);
  assert.equal(summaries.filter((s) => s.agent === "release").length, 1, "one child run");
});

Deno.test("a child that does not complete fails the agent step: onError decides (fail, jump)", async () => {
  const { definition, store } = await setup();
  // The child's closing step fails after the person said yes.
  const broken = () => shipBackend({ "complete.release": [{ error: "HTTP 400 bad request" }] });
  const first = await new StepFlowRunner(definition, { backend: broken(), store }).run();
  const failed = await new StepFlowRunner(definition, { backend: broken(), store }).answer(
    first.runId,
    { decision: "next" },
  );
  assert.equal(failed.completionReason, "step_failed");
  assert.equal(failed.error?.code, "AGENT_STEP_FAILED");
  assert.match(failed.error!.message, /child run \S+ of agent "release" ended step_failed/);
  assert.equal(failed.state.history.at(-1)?.child?.completionReason, "step_failed");

  const jumping = await setup({ onError: 'jump="complete.ship"' });
  const backend = shipBackend({
    "complete.release": [{ error: "HTTP 400 bad request" }],
    "complete.ship": [{ output: { summary: "done", next_action: { action: "complete" } } }],
  });
  const run = await new StepFlowRunner(jumping.definition, { backend, store: jumping.store }).run();
  const jumped = await new StepFlowRunner(jumping.definition, { backend, store: jumping.store })
    .answer(run.runId, { decision: "next" });
  assert.equal(jumped.completionReason, "completed", JSON.stringify(jumped.error));
  assert.deepEqual(jumped.state.history.map((h) => [h.stepId, h.transition]), [
    ["plan.ship", "next"],
    ["release.ship", "jump"],
    ["complete.ship", "complete"],
  ]);
});

Deno.test("a person who declines the child's question ends the child and the parent declined, whatever onError says", async () => {
  const { definition, store } = await setup({ onError: 'jump="complete.ship"' });
  const first = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run();
  assert.equal(first.completionReason, "waiting");
  const ended = await new StepFlowRunner(definition, { backend: shipBackend(), store }).answer(
    first.runId,
    { decision: "abort", note: "freeze week" },
    { answeredBy: "erin" },
  );
  assert.equal(ended.completionReason, "declined", JSON.stringify(ended.error));
  assert.equal(ended.error, undefined);
  assert.equal(ended.finalStepId, "release.ship");
  const childRunId = ended.state.history.at(-1)!.child!.runId;
  assert.equal(ended.state.history.at(-1)?.child?.completionReason, "declined");
  assert.deepEqual(
    { ...ended.declined, at: undefined, requestId: undefined },
    {
      stepId: "release.ship",
      by: "erin",
      at: undefined,
      requestId: undefined,
      intent: "abort",
      note: { note: "freeze week" },
      childRunId,
    },
  );
  assert.equal((await store.loadCheckpoint(childRunId))?.status, "declined");
  assert.equal((await store.loadCheckpoint(first.runId))?.status, "declined");
});

Deno.test("cancelling the parent cancels its child; redriving the parent redrives that child, never a second one", async () => {
  const { definition, store } = await setup();
  const controller = new AbortController();
  const script = shipBackend();
  let drafts = 0;
  // The child's first call is in flight when the parent is cancelled (Ctrl-C, the dashboard).
  const backend = new ScriptedBackend(async (req) => {
    if (req.stepId === "draft.release" && drafts++ === 0) {
      controller.abort();
      return { output: { plan: "never", next_action: { action: "next" } }, delayMs: 60_000 };
    }
    const answer = await script.complete(req);
    return { text: answer.text, output: answer.structuredOutput };
  });
  const runner = new StepFlowRunner(definition, { backend, store });
  const cancelled = await runner.run({ signal: controller.signal });
  assert.equal(cancelled.completionReason, "cancelled");
  const children = (await store.list()).filter((s) => s.agent === "release");
  assert.equal(children.length, 1);
  assert.equal(children[0].status, "cancelled");

  const resumed = await new StepFlowRunner(definition, { backend, store }).run({
    redrive: cancelled.runId,
  });
  assert.equal(resumed.completionReason, "waiting");
  assert.equal(resumed.waiting?.child?.runId, children[0].runId, "the same child continues");
  assert.equal((await store.list()).filter((s) => s.agent === "release").length, 1);
});

Deno.test("agent steps nest no deeper than maxAgentDepth (AGENT_STEP_DEPTH, onError applies)", async () => {
  const { definition, store } = await setup();
  const result = await new StepFlowRunner(definition, {
    backend: shipBackend(),
    store,
    maxAgentDepth: 0,
  }).run();
  assert.equal(result.completionReason, "step_failed");
  assert.equal(result.error?.code, "AGENT_STEP_DEPTH");
  assert.match(result.error!.message, /beyond maxAgentDepth 0/);
  assert.equal((await store.list()).length, 1, "no child run was started");
});

Deno.test("a handoff reference with no value leaves a required child parameter unset: AGENT_STEP_ARGS before any child starts", async () => {
  const { definition, store } = await setup({ args: { version: "{handoff.nothing}" } });
  const result = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run();
  assert.equal(result.error?.code, "AGENT_STEP_ARGS");
  assert.match(result.error!.message, /parameter "version" of agent "release" has no value/);
  assert.equal((await store.list()).length, 1);
});

Deno.test("a child answered directly: the parent's answer is refused (nothing recorded), and --resume of the parent takes the child's result", async () => {
  const { root, definition, store } = await setup();
  const first = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run();
  const childId = first.waiting!.child!.runId;
  const child = await loadAgentDefinition("release", { cwd: root });
  const backend = shipBackend();
  const childDone = await new StepFlowRunner(child, { backend, store }).answer(childId, {
    decision: "next",
  });
  assert.equal(childDone.completionReason, "completed");
  await assert.rejects(
    new StepFlowRunner(definition, { backend, store }).answer(first.runId, { decision: "next" }),
    (error: unknown) => {
      assert.ok(error instanceof StepflowError);
      assert.equal(error.code, "INPUT_NOT_WAITING");
      assert.match(error.message, /\(it was answered directly\); resume this run to go on/);
      return true;
    },
  );
  assert.equal((await store.loadCheckpoint(first.runId))?.status, "waiting");
  const resumed = await new StepFlowRunner(definition, { backend, store }).run({
    resume: first.runId,
  });
  assert.equal(resumed.completionReason, "completed", JSON.stringify(resumed.error));
  assert.deepEqual(resumed.state.handoff["release.ship"], { summary: "2.0.0 shipped" });
  assert.equal((await store.list()).filter((s) => s.agent === "release").length, 1);
});

Deno.test({
  name:
    "agent steps on PostgreSQL: the child is a run of its own in the same database, answered through the parent",
  ignore: pg === undefined,
  async fn() {
    const { definition } = await setup();
    const schema = freshSchema();
    const store = new PostgresRunStore(pg!.url, { schema, agent: "ship" });
    const other = new PostgresRunStore(pg!.url, { schema, agent: "ship" });
    try {
      const first = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run();
      assert.equal(first.completionReason, "waiting");
      const childId = first.waiting!.child!.runId;
      assert.equal((await store.loadCheckpoint(childId))?.status, "waiting");
      // Answered through another connection, as another process would.
      const done = await new StepFlowRunner(definition, { backend: shipBackend(), store: other })
        .answer(first.runId, { decision: "next" });
      assert.equal(done.completionReason, "completed", JSON.stringify(done.error));
      const child = (await store.loadCheckpoint(childId))!;
      assert.equal(child.status, "completed");
      assert.equal(child.agent, "release");
      assert.equal((child.state.parent as { runId: string }).runId, first.runId);
      assert.equal(done.usage.calls, 4);
    } finally {
      await store.close();
      await other.close();
    }
  },
});

Deno.test("pausing the parent pauses its child: the child's next call waits for resume()", async () => {
  const root = await Deno.makeTempDir();
  await writeAgent(root, "two", {
    agent: { name: "two", behavior: { completionType: "two" } },
    registry: {
      version: "1.0.0",
      entryStepMapping: { two: "a.two" },
      steps: {
        "a.two": {
          prompt: { c1: "steps", c2: "a", c3: "two" },
          structuredGate: { allowedIntents: ["next"], intentField: "next_action.action" },
          transitions: { next: { target: "complete.two" } },
          outputSchemaRef: { file: "two.schema.json", schema: "#/definitions/a" },
        },
        "complete.two": {
          prompt: { c1: "steps", c2: "complete", c3: "two" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "two.schema.json", schema: "#/definitions/complete" },
        },
      },
    },
    prompts: { "steps/a/two/f_default.md": "A", "steps/complete/two/f_default.md": "B" },
    schemas: {
      "two.schema.json": {
        definitions: { a: gateSchema(["next"]), complete: gateSchema(["complete"]) },
      },
    },
  });
  const files = shipFiles({ agent: "two", args: {}, handoffFields: undefined });
  const steps = files.registry.steps as Record<string, Record<string, unknown>>;
  delete steps["release.ship"].handoffFields;
  await writeAgent(root, "ship", files);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  let resumed = false;
  const backend = new ScriptedBackend((req) => {
    if (req.stepId === "a.two") {
      runner.pause();
      setTimeout(() => {
        resumed = true;
        runner.resume();
      }, 50);
    }
    if (req.stepId === "complete.two") {
      assert.ok(resumed, "the child's next call came while the parent was paused");
    }
    const action = req.stepId.startsWith("complete.") ? "complete" : "next";
    return { output: { version: "1", next_action: { action } } };
  });
  const runner = new StepFlowRunner(definition, { backend });
  const result = await runner.run();
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  assert.deepEqual(backend.calls.map((c) => c.stepId), [
    "plan.ship",
    "a.two",
    "complete.two",
    "complete.ship",
  ]);
});

Deno.test("childArgs: handoff and parameter references, literals, the child's defaults, wrong types refused", async () => {
  const root = await Deno.makeTempDir();
  await writeAgent(root, "release", {
    ...releaseFiles(),
    agent: {
      name: "release",
      behavior: { completionType: "release" },
      parameters: {
        version: { type: "string", required: true },
        channel: { type: "string", default: "stable", enum: ["stable", "beta"] },
        dryRun: { type: "boolean" },
      },
    },
  });
  await writeAgent(root, "ship", {
    ...shipFiles({ args: { version: "{handoff.version}", dryRun: "{uv-dry}" } }),
    agent: {
      name: "ship",
      behavior: { completionType: "ship" },
      parameters: { dry: { type: "boolean" } },
    },
  });
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const step = definition.steps["release.ship"];
  const state = (handoff: Record<string, unknown>, args: Record<string, unknown>) =>
    ({ latestHandoff: handoff, args }) as unknown as RunnerState;
  assert.deepEqual(childArgs(step, state({ version: "2.0" }, { dry: true })), {
    version: "2.0",
    dryRun: true,
    channel: "stable",
  });
  assert.throws(
    () => childArgs(step, state({ version: 2 }, {})),
    code("AGENT_STEP_ARGS"),
  );
  assert.throws(() => childArgs(step, state({}, {})), /parameter "version" .* has no value/);
});

Deno.test("a parent recorded before children were filed under their own agent (the child beside it) is answered and continued where its child is", async () => {
  const root = await Deno.makeTempDir();
  await writeShipAgents(root);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const release = await loadAgentDefinition("release", { cwd: root });
  // The layout earlier versions wrote: the child's files in the parent's folder, its link in the
  // parent's checkpoint without `store` (what a store made for one folder still writes).
  const shipDir = runStoreDirFor(definition, root);
  const before = new FileRunStore(shipDir);
  const first = await new StepFlowRunner(definition, { backend: shipBackend(), store: before })
    .run({ cwd: root });
  assert.equal(first.completionReason, "waiting");
  const childId = first.waiting!.child!.runId;
  const link = (await before.loadCheckpoint(first.runId))!.state.child as Record<string, unknown>;
  assert.equal(link.runId, childId);
  assert.equal("store" in link, false, "the link of an earlier version: no store named");
  assert.equal((await before.loadCheckpoint(childId))?.status, "waiting");

  // Continued with the agent's store, as run-agent does: the child is taken where it is.
  const store = runStoreFor(definition, { cwd: root });
  const done = await new StepFlowRunner(definition, { backend: shipBackend(), store }).answer(
    first.runId,
    { decision: "next" },
  );
  assert.equal(done.completionReason, "completed", JSON.stringify(done.error));
  assert.equal(done.state.history[1].child?.runId, childId);
  assert.equal((await before.loadCheckpoint(childId))?.status, "completed");
  assert.deepEqual(await store.forAgent(release).list(), [], "no second child elsewhere");
  assert.equal((await before.list()).filter((s) => s.agent === "release").length, 1);
});

Deno.test("a child filed under its own agent: continuing the parent with a store that cannot find it is AGENT_STEP_CHILD_STORE, nothing recorded", async () => {
  const root = await Deno.makeTempDir();
  await writeShipAgents(root);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const store = runStoreFor(definition, { cwd: root });
  const first = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run({
    cwd: root,
  });
  assert.equal(first.completionReason, "waiting");
  const link = (await store.loadCheckpoint(first.runId))!.state.child as Record<string, unknown>;
  assert.equal(link.store, "agent");
  const folderOnly = new FileRunStore(store.dir);
  const logged = (await folderOnly.readLog(first.runId)).length;
  for (
    const attempt of [
      () =>
        new StepFlowRunner(definition, { backend: shipBackend(), store: folderOnly }).answer(
          first.runId,
          { decision: "next" },
        ),
      () =>
        new StepFlowRunner(definition, { backend: shipBackend(), store: folderOnly }).run({
          resume: first.runId,
        }),
    ]
  ) {
    await assert.rejects(attempt(), code("AGENT_STEP_CHILD_STORE"));
  }
  assert.equal((await folderOnly.loadCheckpoint(first.runId))?.status, "waiting");
  assert.equal((await folderOnly.readLog(first.runId)).length, logged, "nothing was written");
});
