/**
 * Several runs at once on ONE runner: each run is a value of its own (its state, log, checkpoints,
 * lock, events and child runs), so runs started together are recorded as if each ran alone, and
 * the runner's pause, resume and abort — and each run's own handle and signal — reach every run
 * they should and every child run below it (a child's Bash process included).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { StepInfo } from "../../src/events/types.ts";
import { StepflowError } from "../../src/errors.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import type { LlmRequest } from "../../src/llm/types.ts";
import { pidAlive } from "../../src/pid_alive.ts";
import { historyFromLog } from "../../src/store/format.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { type AgentFiles, gateSchema, writeAgent } from "./fixtures.ts";

const USAGE = { inputTokens: 10, outputTokens: 5 };

/** The child agent: work.worker (hands off `result`; with `tools`, may run Bash) → complete. */
function workerFiles(tools: boolean): AgentFiles {
  const schema = (intents: string[], extra: Record<string, unknown> = {}) => ({
    ...gateSchema(intents),
    properties: { ...gateSchema(intents).properties, ...extra },
  });
  return {
    agent: {
      name: "worker",
      behavior: { completionType: "worker", ...(tools ? { allowedTools: ["Bash"] } : {}) },
      parameters: { topic: { type: "string", required: true } },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { worker: "work.worker" },
      steps: {
        "work.worker": {
          prompt: { c1: "steps", c2: "work", c3: "worker" },
          structuredGate: {
            allowedIntents: ["next"],
            intentField: "next_action.action",
            handoffFields: ["result"],
          },
          transitions: { next: { target: "complete.worker" } },
          outputSchemaRef: { file: "worker.schema.json", schema: "#/definitions/work" },
        },
        "complete.worker": {
          prompt: { c1: "steps", c2: "complete", c3: "worker" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "worker.schema.json", schema: "#/definitions/complete" },
        },
      },
    },
    prompts: {
      "steps/work/worker/f_default.md": "[{uv-topic}] work",
      "steps/complete/worker/f_default.md": "[{uv-topic}] summarize {handoff.result}",
    },
    schemas: {
      "worker.schema.json": {
        definitions: {
          work: schema(["next"], { result: { type: "string" } }),
          complete: gateSchema(["complete"]),
        },
      },
    },
  };
}

/** The parent agent: plan.boss → delegate.boss (agent step: worker) → complete.boss. */
function bossFiles(): AgentFiles {
  return {
    agent: {
      name: "boss",
      behavior: { completionType: "boss" },
      parameters: { topic: { type: "string", required: true } },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { boss: "plan.boss" },
      steps: {
        "plan.boss": {
          prompt: { c1: "steps", c2: "plan", c3: "boss" },
          structuredGate: { allowedIntents: ["next"], intentField: "next_action.action" },
          transitions: { next: { target: "delegate.boss" } },
          outputSchemaRef: { file: "boss.schema.json", schema: "#/definitions/plan" },
        },
        "delegate.boss": {
          kind: "agent",
          agent: "worker",
          args: { topic: "{uv-topic}" },
          handoffFields: ["summary"],
          transitions: { next: { target: "complete.boss" } },
        },
        "complete.boss": {
          prompt: { c1: "steps", c2: "complete", c3: "boss" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "boss.schema.json", schema: "#/definitions/complete" },
        },
      },
    },
    prompts: {
      "steps/plan/boss/f_default.md": "[{uv-topic}] plan",
      "steps/complete/boss/f_default.md": "[{uv-topic}] report {handoff.summary}",
    },
    schemas: {
      "boss.schema.json": {
        definitions: { plan: gateSchema(["next"]), complete: gateSchema(["complete"]) },
      },
    },
  };
}

async function setup(tools = false) {
  const root = await Deno.makeTempDir({ prefix: "stepflow-concurrent-" });
  await writeAgent(root, "worker", workerFiles(tools));
  await writeAgent(root, "boss", bossFiles());
  const boss = await loadAgentDefinition("boss", { cwd: root });
  const worker = await loadAgentDefinition("worker", { cwd: root });
  // The store run-agent uses: each agent's runs in its own folder.
  const store = runStoreFor(boss, { cwd: root, durability: "process" });
  return { root, boss, worker, store, workerStore: store.forAgent(worker) };
}

/** The topic a prompt is about (every prompt starts with `[topic]`). */
function topicOf(req: LlmRequest): string {
  return /^\[(\w+)\]/.exec(req.prompt)![1];
}

/** A model that answers each step for the prompt's topic (usage 10/5 a call). */
function answer(req: LlmRequest): Record<string, unknown> {
  const topic = topicOf(req);
  switch (req.stepId) {
    case "work.worker":
      return { result: `${topic} done`, next_action: { action: "next" } };
    case "complete.worker":
      return {
        summary: `${topic}: ${req.prompt.split(" ").slice(2).join(" ")}`,
        next_action: { action: "complete" },
      };
    case "complete.boss":
      return { summary: req.prompt, next_action: { action: "complete" } };
    default:
      return { next_action: { action: "next" } };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("runs started together on one runner are each recorded as if they ran alone, children included", async () => {
  const { root, boss, store, workerStore } = await setup();
  let inFlight = 0;
  let mostInFlight = 0;
  const backend = new ScriptedBackend(async (req) => {
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    await sleep(20);
    inFlight--;
    return { output: answer(req), usage: USAGE };
  });
  const started = new Map<string, string[]>();
  const runner = new StepFlowRunner(boss, {
    backend,
    store,
    events: {
      onStepStart: (info: StepInfo) => {
        started.set(info.runId, [...started.get(info.runId) ?? [], info.stepId]);
      },
    },
  });
  const topics = ["alpha", "beta", "gamma"];
  const handles = topics.map((topic) => runner.start({ args: { topic }, cwd: root }));
  assert.equal(new Set(handles.map((h) => h.runId)).size, 3, "three runs, three ids");
  const results = await Promise.all(handles.map((h) => h.result));
  assert.ok(mostInFlight > 1, `the runs overlapped (at most ${mostInFlight} call at once)`);
  assert.equal(runner.state, "completed");

  const childIds = new Set<string>();
  for (const [i, result] of results.entries()) {
    const topic = topics[i];
    assert.equal(result.runId, handles[i].runId);
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
    assert.equal(handles[i].state, "completed");
    assert.deepEqual(result.state.history.map((h) => h.stepId), [
      "plan.boss",
      "delegate.boss",
      "complete.boss",
    ]);
    // Its own handoff: its child's summary, about its own topic.
    assert.equal(result.state.handoff["delegate.boss"].summary, `${topic}: ${topic} done`);
    assert.match(
      String((result.output as { summary: string }).summary),
      new RegExp(`^\\[${topic}\\] report ${topic}: ${topic} done$`),
    );
    // Its own events, in its own order.
    assert.deepEqual(started.get(result.runId), ["plan.boss", "delegate.boss", "complete.boss"]);
    // Its own record: the parent in the boss folder, its child in the worker folder, linked.
    const entry = result.state.history[1];
    const childId = entry.child!.runId;
    childIds.add(childId);
    const log = await store.readLog(result.runId);
    assert.deepEqual(
      log.filter((e) => e.type === "agent_start").map((e) => e.childRunId),
      [childId],
    );
    assert.equal((await store.loadCheckpoint(result.runId))?.status, "completed");
    const child = (await workerStore.loadCheckpoint(childId))!;
    assert.equal(child.status, "completed");
    assert.equal(child.agent, "worker");
    assert.deepEqual(child.state.args, { topic });
    assert.equal((child.state.parent as { runId: string }).runId, result.runId);
    const childHistory = historyFromLog(await workerStore.readLog(childId));
    assert.deepEqual(childHistory.map((e) => e.stepId), ["work.worker", "complete.worker"]);
    // Usage rolls up: the parent's two calls and its child's two; the child keeps its own.
    assert.deepEqual(entry.child!.usage?.calls, 2);
    assert.equal(result.usage.calls, 4);
    assert.equal(result.usage.inputTokens, 40);
    assert.equal((child.state.usage as { inputTokens: number }).inputTokens, 20);
  }
  assert.equal(childIds.size, 3, "one child per run");
  assert.deepEqual((await store.list()).map((s) => s.agent), ["boss", "boss", "boss"]);
  const children = await workerStore.list();
  assert.deepEqual(children.map((s) => s.agent), ["worker", "worker", "worker"]);
  assert.deepEqual(
    new Set(children.map((s) => s.parentRunId)),
    new Set(results.map((r) => r.runId)),
  );
});

Deno.test("the runner's pause and resume reach every run it drives and their child runs", async () => {
  const { root, boss, store } = await setup();
  let arrived = 0;
  let release!: () => void;
  const bothWorking = new Promise<void>((r) => release = r);
  const calls: string[] = [];
  const backend = new ScriptedBackend(async (req) => {
    calls.push(`${topicOf(req)} ${req.stepId}`);
    if (req.stepId === "work.worker" && ++arrived === 2) release();
    if (req.stepId === "work.worker") await bothWorking;
    return { output: answer(req) };
  });
  const runner = new StepFlowRunner(boss, { backend, store });
  const a = runner.start({ args: { topic: "alpha" }, cwd: root });
  const b = runner.start({ args: { topic: "beta" }, cwd: root });
  await bothWorking;
  // Both children are in their first call: the pause holds everything before its next call.
  runner.pause();
  assert.equal(runner.state, "paused");
  assert.equal(a.state, "paused");
  assert.equal(b.state, "paused");
  await sleep(150);
  assert.deepEqual(calls.filter((c) => !c.endsWith("work.worker") && !c.endsWith("plan.boss")), []);
  runner.resume();
  const [ra, rb] = await Promise.all([a.result, b.result]);
  assert.equal(ra.completionReason, "completed", JSON.stringify(ra.error));
  assert.equal(rb.completionReason, "completed", JSON.stringify(rb.error));
  assert.equal(calls.length, 8);
});

/** Running: it exists and is not a zombie. */
function running(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

async function pidIn(file: string): Promise<number> {
  for (let i = 0; i < 1_000; i++) {
    const text = await Deno.readTextFile(file).catch(() => "");
    if (/^\d+\s*$/.test(text)) return Number(text.trim());
    await sleep(10);
  }
  throw new Error(`no pid in ${file}`);
}

async function gone(pid: number): Promise<void> {
  for (let i = 0; i < 500 && running(pid); i++) await sleep(10);
  assert.equal(running(pid), false, `process ${pid} is still running`);
}

/** A model whose child's first turn runs a long Bash command that writes its pid. */
function bashBackend(): ScriptedBackend {
  return new ScriptedBackend((req) => {
    if (req.stepId === "work.worker") {
      const topic = topicOf(req);
      return {
        toolCalls: [{
          name: "Bash",
          arguments: { command: `sleep 300 & echo $! > ${topic}.pid; wait` },
        }],
      };
    }
    return { output: answer(req) };
  });
}

Deno.test("the runner's abort reaches every run and its child runs: each child's Bash process is gone", async () => {
  const { root, boss, store, workerStore } = await setup(true);
  const runner = new StepFlowRunner(boss, { backend: bashBackend(), store });
  const handles = ["alpha", "beta"].map((topic) => runner.start({ args: { topic }, cwd: root }));
  const pids = await Promise.all(["alpha", "beta"].map((t) => pidIn(join(root, `${t}.pid`))));
  for (const pid of pids) assert.ok(running(pid));
  runner.abort();
  const results = await Promise.all(handles.map((h) => h.result));
  for (const result of results) {
    assert.equal(result.completionReason, "aborted");
    const childId = (await store.readLog(result.runId)).find((e) => e.type === "agent_start")!
      .childRunId as string;
    assert.equal((await workerStore.loadCheckpoint(childId))?.status, "cancelled");
  }
  for (const pid of pids) await gone(pid);
  assert.equal(runner.state, "aborted");
});

Deno.test("a run's own handle and signal stop that run and its child only; the others go on", async () => {
  const { root, boss, store, workerStore } = await setup(true);
  const controller = new AbortController();
  let bashes = 0;
  const backend = new ScriptedBackend((req) => {
    // Only the first two topics run a Bash command that never ends; "gamma" works at once.
    if (req.stepId === "work.worker" && topicOf(req) !== "gamma" && bashes++ < 2) {
      const topic = topicOf(req);
      return {
        toolCalls: [{
          name: "Bash",
          arguments: { command: `sleep 300 & echo $! > ${topic}.pid; wait` },
        }],
      };
    }
    return { output: answer(req) };
  });
  const runner = new StepFlowRunner(boss, { backend, store });
  const alpha = runner.start({ args: { topic: "alpha" }, cwd: root });
  const beta = runner.start({ args: { topic: "beta" }, cwd: root, signal: controller.signal });
  const [alphaPid, betaPid] = await Promise.all([
    pidIn(join(root, "alpha.pid")),
    pidIn(join(root, "beta.pid")),
  ]);
  const gamma = runner.start({ args: { topic: "gamma" }, cwd: root });
  alpha.abort();
  controller.abort();
  const [ra, rb, rg] = await Promise.all([alpha.result, beta.result, gamma.result]);
  assert.equal(ra.completionReason, "aborted");
  assert.equal(rb.completionReason, "cancelled");
  assert.equal(rg.completionReason, "completed", JSON.stringify(rg.error));
  await gone(alphaPid);
  await gone(betaPid);
  const childOf = async (runId: string) =>
    (await store.readLog(runId)).find((e) => e.type === "agent_start")!.childRunId as string;
  assert.equal((await workerStore.loadCheckpoint(await childOf(ra.runId)))?.status, "cancelled");
  assert.equal((await workerStore.loadCheckpoint(await childOf(rb.runId)))?.status, "cancelled");
  assert.equal((await workerStore.loadCheckpoint(await childOf(rg.runId)))?.status, "completed");
});

Deno.test("one runner drives a run id once at a time: the same id twice at once is RUN_IN_PROGRESS", async () => {
  const { root, boss, store } = await setup();
  const backend = new ScriptedBackend(async (req) => {
    await sleep(20);
    return { output: answer(req) };
  });
  const runner = new StepFlowRunner(boss, { backend, store });
  const first = runner.start({ args: { topic: "alpha" }, cwd: root, runId: "run-one" });
  const second = runner.start({ args: { topic: "alpha" }, cwd: root, runId: "run-one" });
  await assert.rejects(second.result, (error: unknown) => {
    assert.ok(error instanceof StepflowError);
    assert.equal(error.code, "RUN_IN_PROGRESS");
    return true;
  });
  assert.equal((await first.result).completionReason, "completed");
});

Deno.test("a run paused through its handle before its drive started is held before its first call", async () => {
  const { root, boss, store } = await setup();
  const calls: string[] = [];
  const backend = new ScriptedBackend((req) => {
    calls.push(`${topicOf(req)} ${req.stepId}`);
    return { output: answer(req) };
  });
  const runner = new StepFlowRunner(boss, { backend, store });
  const held = runner.start({ args: { topic: "alpha" }, cwd: root });
  held.pause();
  const free = runner.start({ args: { topic: "beta" }, cwd: root });
  assert.equal((await free.result).completionReason, "completed");
  assert.equal(held.state, "paused");
  assert.deepEqual(calls.filter((c) => c.startsWith("alpha")), []);
  held.resume();
  assert.equal((await held.result).completionReason, "completed");
  assert.equal(calls.filter((c) => c.startsWith("alpha")).length, 4);
});
