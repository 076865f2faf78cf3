import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { writeAgent } from "./fixtures.ts";
import { releaseBackend, releaseFiles } from "./input_fixtures.ts";

async function setup(approve: Record<string, unknown> = {}) {
  const root = await Deno.makeTempDir();
  await writeAgent(root, "release", releaseFiles(approve));
  const definition = await loadAgentDefinition("release", { cwd: root });
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

Deno.test("an input step ends the drive waiting: the request is recorded and no lock is held", async () => {
  const { definition, store } = await setup();
  const result = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "1.2.0" },
  });
  assert.equal(result.completionReason, "waiting");
  assert.equal(result.success, false);
  assert.equal(result.finalStepId, "approve.release");
  assert.equal(result.waiting?.stepId, "approve.release");
  assert.equal(result.waiting?.prompt, "Ship 1.2.0? The plan: tag, build, publish");
  assert.equal(result.iterations, 1, "a wait is not an iteration");
  assert.deepEqual(result.state.history.map((h) => h.stepId), ["draft.release"]);

  const checkpoint = (await store.loadCheckpoint(result.runId))!;
  assert.equal(checkpoint.status, "waiting");
  const log = await store.readLog(result.runId);
  const request = log.find((e) => e.type === "input_request")!;
  assert.equal(request.requestId, result.waiting!.requestId);
  assert.deepEqual(request.prompt, { text: result.waiting!.prompt, length: 41 });
  assert.equal(log.some((e) => e.type === "run_end"), false, "a waiting run has not ended");
  // Nobody holds the run while it waits.
  const lock = await store.lock(result.runId);
  await lock.release();
  const [summary] = await store.list();
  assert.equal(summary.status, "waiting");
  assert.equal(summary.stepId, "approve.release");
  // Retention never deletes a run that still waits for its answer.
  assert.deepEqual(await store.prune(0), []);
  assert.equal((await store.loadCheckpoint(result.runId))?.status, "waiting");
});

Deno.test("an answer is checked, recorded with who and when, and continues the run to its end", async () => {
  const { definition, store } = await setup();
  const backend = releaseBackend();
  const first = await new StepFlowRunner(definition, { backend, store }).run({
    args: { version: "1.2.0" },
  });
  const logBefore = await store.readLog(first.runId);

  // A bad answer is refused with the validator's message; nothing is recorded.
  await assert.rejects(
    new StepFlowRunner(definition, { backend, store }).answer(first.runId, { decision: "ship" }),
    (error: unknown) => {
      code("INPUT_ANSWER_INVALID")(error);
      assert.match((error as Error).message, /allowed values/);
      assert.match((error as Error).message, /Nothing was recorded/);
      return true;
    },
  );
  assert.equal((await store.readLog(first.runId)).length, logBefore.length);
  assert.equal((await store.loadCheckpoint(first.runId))!.status, "waiting");

  const done = await new StepFlowRunner(definition, { backend, store }).answer(
    first.runId,
    { decision: "next", note: "go" },
    { answeredBy: "alice" },
  );
  assert.equal(done.success, true, JSON.stringify(done.error));
  assert.deepEqual(
    done.state.history.map((h) => `${h.iteration}:${h.stepId}:${h.intent}`),
    ["1:draft.release:next", "2:approve.release:next", "3:complete.release:complete"],
  );
  const answered = done.state.history[1];
  assert.equal(answered.input?.answeredBy, "alice");
  assert.equal(answered.input?.requestId, first.waiting!.requestId);
  assert.ok(answered.input?.answeredAt);
  assert.equal(answered.answer?.text, JSON.stringify({ decision: "next", note: "go" }));
  assert.deepEqual(done.state.handoff["approve.release"], { note: "go" });
  // The handoff reached the next prompt.
  assert.equal(backend.calls.at(-1)?.prompt, "Report the release (go).");

  const log = await store.readLog(first.runId);
  const answer = log.find((e) => e.type === "input_answer")!;
  assert.equal(answer.answeredBy, "alice");
  assert.deepEqual(answer.value, { decision: "next", note: "go" });
  assert.equal(answer.requestId, first.waiting!.requestId);

  // Answering again: the run no longer waits.
  await assert.rejects(
    new StepFlowRunner(definition, { backend, store }).answer(first.runId, { decision: "next" }),
    code("INPUT_NOT_WAITING"),
  );
});

Deno.test("an answer nested deeper than a model's output may be is refused, nothing recorded", async () => {
  const { definition, store } = await setup();
  const first = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "1" },
  });
  let deep: unknown = "x";
  for (let i = 0; i < 100_000; i++) deep = [deep];
  const before = (await store.readLog(first.runId)).length;
  await assert.rejects(
    new StepFlowRunner(definition, { store }).answer(first.runId, { decision: "next", note: deep }),
    (error: unknown) => {
      code("INPUT_ANSWER_INVALID")(error);
      assert.match((error as Error).message, /must not be nested deeper than 64 levels/);
      return true;
    },
  );
  assert.equal((await store.readLog(first.runId)).length, before);
  assert.equal((await store.loadCheckpoint(first.runId))?.status, "waiting");
});

Deno.test("an answer naming an old request, or a run that never waited, is refused", async () => {
  const { definition, store } = await setup();
  const first = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "1" },
  });
  await assert.rejects(
    new StepFlowRunner(definition, { store }).answer(first.runId, { decision: "next" }, {
      requestId: "an-earlier-request",
    }),
    code("INPUT_NOT_WAITING"),
  );
  await assert.rejects(
    new StepFlowRunner(definition, { store }).answer("no-such-run", { decision: "next" }),
    code("RUN_NOT_FOUND"),
  );
  // resume without an answer says how to answer
  await assert.rejects(
    new StepFlowRunner(definition, { store }).run({ resume: first.runId }),
    (error: unknown) => {
      code("INPUT_WAITING")(error);
      assert.deepEqual((error as StepflowError).details?.next, {
        action: "answer",
        runId: first.runId,
        args: ["--value", "<json>"],
      });
      return true;
    },
  );
  await assert.rejects(
    new StepFlowRunner(definition, { store }).run({ redrive: first.runId }),
    code("RUN_NOT_REDRIVABLE"),
  );
});

Deno.test("two answers racing: exactly one is recorded, the other is refused", async () => {
  const { definition, store, root } = await setup();
  const first = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "1" },
  });
  for (let round = 0; round < 3; round++) {
    const runId = round === 0 ? first.runId : (await new StepFlowRunner(definition, {
      backend: releaseBackend(),
      store,
    }).run({ args: { version: "1" } })).runId;
    // Two store instances, as two processes would have.
    const stores = [store, new FileRunStore(join(root, "runs"))];
    const settled = await Promise.allSettled(
      ["next", "abort"].map((decision, i) =>
        new StepFlowRunner(definition, { backend: releaseBackend(), store: stores[i] }).answer(
          runId,
          { decision },
          { answeredBy: `answerer-${i}` },
        )
      ),
    );
    const won = settled.filter((s) => s.status === "fulfilled");
    const lost = settled.filter((s) => s.status === "rejected");
    assert.equal(won.length, 1, JSON.stringify(settled));
    assert.equal(lost.length, 1);
    code("INPUT_NOT_WAITING")((lost[0] as PromiseRejectedResult).reason);
    const answers = (await store.readLog(runId)).filter((e) => e.type === "input_answer");
    assert.equal(answers.length, 1);
  }
});

Deno.test("a person's abort ends the run declined, with who and their note; a memory store holds a wait too", async () => {
  const { definition } = await setup();
  const store = new MemoryRunStore();
  const first = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "1" },
  });
  assert.equal(first.completionReason, "waiting");
  const ended = await new StepFlowRunner(definition, { store }).answer(first.runId, {
    decision: "abort",
    note: "not this week",
  }, { answeredBy: "erin" });
  assert.equal(ended.completionReason, "declined");
  assert.equal(ended.success, false);
  assert.equal(ended.error, undefined, "a person's no is not an error");
  assert.equal(ended.finalStepId, "approve.release");
  const entry = ended.state.history.at(-1)!;
  assert.equal(entry.input?.answeredBy, "erin");
  assert.equal(entry.transition, "abort");
  assert.deepEqual(ended.declined, {
    stepId: "approve.release",
    requestId: first.waiting!.requestId,
    by: "erin",
    at: entry.input!.answeredAt,
    intent: "abort",
    note: { note: "not this week" },
  });
  const checkpoint = (await store.loadCheckpoint(first.runId))!;
  assert.equal(checkpoint.status, "declined");
  const end = (checkpoint.state as { end: Record<string, unknown> }).end;
  assert.equal(end.reason, "declined");
  assert.deepEqual(end.declined, ended.declined);
  assert.equal(end.error, undefined);
  const [summary] = await store.list();
  assert.equal(summary.status, "declined");
  // An answer with nothing but the decision has no note.
  const again = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "2" },
  });
  const bare = await new StepFlowRunner(definition, { store }).answer(again.runId, {
    decision: "abort",
  });
  assert.equal(bare.completionReason, "declined");
  assert.equal(bare.declined?.by, "api");
  assert.equal("note" in bare.declined!, false);
});

Deno.test("waitTimeout: once it passed, a resume takes its intent and a late answer is refused", async () => {
  const { definition, store } = await setup({ waitTimeout: { ms: 1, intent: "abort" } });
  const first = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "1" },
  });
  assert.ok(first.waiting?.expiresAt);
  assert.equal(first.waiting?.timeoutIntent, "abort");
  while (Date.now() <= Date.parse(first.waiting!.expiresAt!)) {
    await new Promise((r) => setTimeout(r, 2));
  }
  await assert.rejects(
    new StepFlowRunner(definition, { store }).answer(first.runId, { decision: "next" }),
    code("INPUT_WAIT_EXPIRED"),
  );
  assert.equal((await store.loadCheckpoint(first.runId))!.status, "waiting");
  const resumed = await new StepFlowRunner(definition, { store }).run({ resume: first.runId });
  assert.equal(resumed.completionReason, "aborted");
  const last = resumed.state.history.at(-1)!;
  assert.equal(last.stepId, "approve.release");
  assert.equal(last.intent, "abort");
  assert.equal(last.input?.timedOut, true);
  const log = await store.readLog(first.runId);
  assert.equal(log.filter((e) => e.type === "input_timeout").length, 1);
});

Deno.test("a waiting run survives its process: a new runner over the same folder answers it", async () => {
  const { definition, store, root } = await setup();
  const first = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "9" },
  });
  const elsewhere = new FileRunStore(join(root, "runs"));
  const reloaded = await loadAgentDefinition("release", { cwd: root });
  const done = await new StepFlowRunner(reloaded, { backend: releaseBackend(), store: elsewhere })
    .answer(first.runId, { decision: "next" }, { answeredBy: "bob" });
  assert.equal(done.success, true, JSON.stringify(done.error));
  // The resumed history keeps the first drive's entries.
  assert.deepEqual(done.state.history.map((h) => h.stepId), [
    "draft.release",
    "approve.release",
    "complete.release",
  ]);
});

Deno.test("an answer committed by a process that stopped before its log line: the next drive writes the line, once", async () => {
  const { definition, store } = await setup();
  const backend = releaseBackend();
  const first = await new StepFlowRunner(definition, { backend, store }).run({
    args: { version: "1.2.0" },
  });
  // A store whose process "dies" at the answer's line: after the checkpoint that committed it.
  const dying = new Proxy(store, {
    get(target, key) {
      if (key === "append") {
        return (runId: string, entry: { type: string }) =>
          entry.type === "input_answer"
            ? Promise.reject(new Error("simulated kill before the answer's line"))
            : target.append(runId, entry as Parameters<FileRunStore["append"]>[1]);
      }
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  await assert.rejects(
    new StepFlowRunner(definition, { backend, store: dying }).recordAnswer(first.runId, {
      decision: "next",
    }, { answeredBy: "ops" }),
    /simulated kill/,
  );
  assert.equal((await store.loadCheckpoint(first.runId))!.status, "running", "the answer holds");
  const lines = async () =>
    (await store.readLog(first.runId)).filter((e) => e.type === "input_answer");
  assert.equal((await lines()).length, 0, "its line was never written");
  const done = await new StepFlowRunner(definition, { backend, store }).run({
    resume: first.runId,
  });
  assert.equal(done.success, true, JSON.stringify(done.error));
  const answers = await lines();
  assert.equal(answers.length, 1, "written by the resume, once");
  assert.equal(answers[0].answeredBy, "ops");
});
