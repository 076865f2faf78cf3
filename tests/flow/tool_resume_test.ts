/**
 * Durable tool calls through the real runner on a real agent folder: a run whose store stops
 * recording at any one of its writes (what a SIGKILL leaves: nothing after that write is durable;
 * appends count only once a checkpoint commits them, as on PostgreSQL) is resumed, and continues
 * inside the step with tools — finished calls are replayed, not run again; a non-idempotent call
 * found started and unfinished stops the resume with TOOL_CALL_UNFINISHED unless re-running it is
 * allowed. The real SIGKILL campaign is tests/cli/tool_kill_test.ts.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { RunOptions } from "../../src/flow/types.ts";
import { ScriptedBackend, type ScriptedScript } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { historyFromLog } from "../../src/store/format.ts";
import type { RunCheckpoint, RunLogEntry, RunStore } from "../../src/store/types.ts";
import { comparableHistory, seed001Files, seed001Script, writeAgent } from "./fixtures.ts";
import { FULL_CAMPAIGN } from "../kill_campaign.ts";

/** The implementation step reads, appends a line with Bash (not idempotent), reads again. */
export function toolScript(): ScriptedScript {
  return seed001Script({
    s_a8f3: ["Plan: append a line."],
    s_b2c1: [
      { toolCalls: [{ name: "Read", arguments: { file_path: "src/app.ts" } }] },
      {
        text: "Appending.",
        toolCalls: [
          { name: "Bash", arguments: { command: "echo done >> out.txt" } },
          { name: "Glob", arguments: { pattern: "*.txt" } },
        ],
      },
      { toolCalls: [{ name: "Read", arguments: { file_path: "out.txt" } }] },
      "Appended one line.",
    ],
  });
}

/** A store that stops recording at its `crashAt`-th write (append or checkpoint), like a kill. */
class CrashingStore implements RunStore {
  readonly inner = new MemoryRunStore();
  writes = 0;
  /** The writes of the step with the Bash call: from its step_start to its step_end. */
  readonly toolStep = { from: 0, to: 0 };
  crashAt = Infinity;
  crashed = false;
  #pending: { runId: string; entry: RunLogEntry }[] = [];

  #write(): void {
    if (this.crashed || ++this.writes === this.crashAt) {
      this.crashed = true;
      throw new Error("simulated crash: the process stopped here");
    }
  }
  append(runId: string, entry: RunLogEntry): Promise<void> {
    this.#write();
    if (entry.stepId === "s_b2c1" && entry.type === "step_start") this.toolStep.from = this.writes;
    if (entry.stepId === "s_b2c1" && entry.type === "step_end") this.toolStep.to = this.writes + 1;
    this.#pending.push({ runId, entry });
    return Promise.resolve();
  }
  async saveCheckpoint(checkpoint: RunCheckpoint): Promise<void> {
    this.#write();
    for (const p of this.#pending.splice(0)) await this.inner.append(p.runId, p.entry);
    await this.inner.saveCheckpoint(checkpoint);
  }
  /** After the "crash": what was not committed is gone; a new process starts recording again. */
  restart(): void {
    this.#pending = [];
    this.crashed = false;
    this.crashAt = Infinity;
  }
  loadCheckpoint(runId: string) {
    return this.inner.loadCheckpoint(runId);
  }
  readLog(runId: string) {
    return this.inner.readLog(runId);
  }
  lock(runId: string) {
    return this.inner.lock(runId);
  }
  list() {
    return this.inner.list();
  }
}

async function setup() {
  const root = await Deno.makeTempDir({ prefix: "stepflow_tool_resume_" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "Glob", "Bash"],
    permissionMode: "bypassPermissions",
  });
  await writeAgent(root, "code-improver", files);
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "src/app.ts"), "export const answer = 41;\n");
  return { root, def: await loadAgentDefinition("code-improver", { cwd: root }) };
}

const lines = async (root: string) =>
  (await Deno.readTextFile(join(root, "out.txt")).catch(() => "")).split("\n").filter(Boolean)
    .length;

async function historyOf(store: RunStore, runId: string) {
  const checkpoint = (await store.loadCheckpoint(runId))!;
  return comparableHistory(
    historyFromLog(await store.readLog(runId), checkpoint.state.historyLength as number),
  );
}

Deno.test("a run stopped at any write of a step with tools resumes inside the step: no Bash twice, history as uninterrupted", async () => {
  const { root, def } = await setup();
  try {
    // The uninterrupted run: how many writes it makes, and its history.
    const clean = new CrashingStore();
    const first = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(toolScript()),
      store: clean,
    }).run({ args: { topic: "t" }, cwd: root, runId: "clean" });
    assert.equal(first.success, true, JSON.stringify(first.error));
    assert.equal(await lines(root), 1);
    const expected = await historyOf(clean, "clean");
    const cleanLog = await clean.readLog("clean");
    // Every call's start and end, and each model turn, are in the log.
    const turns = cleanLog.filter((e) => e.type === "tool_turn");
    assert.equal(turns.filter((e) => e.stepId === "s_b2c1").length, 5); // 4, then its check
    assert.equal(turns.length, 9); // and one per other call (every step of the agent has tools)
    assert.equal(cleanLog.filter((e) => e.type === "tool_call_start").length, 4);
    assert.equal(cleanLog.filter((e) => e.type === "tool_call").length, 4);

    let unfinished = 0;
    let inside = 0;
    // Every write of the run in the full campaign; those of the step with tools otherwise.
    const from = FULL_CAMPAIGN ? 1 : clean.toolStep.from;
    const to = FULL_CAMPAIGN ? clean.writes : clean.toolStep.to;
    for (let at = from; at <= to; at++) {
      await Deno.remove(join(root, "out.txt")).catch(() => {});
      const store = new CrashingStore();
      store.crashAt = at;
      const runId = `crash-${at}`;
      await new StepFlowRunner(def, {
        backend: new ScriptedBackend(toolScript()),
        store,
        onWarning: () => {},
      }).run({ args: { topic: "t" }, cwd: root, runId }).catch(() => undefined);
      assert.ok(store.crashed, `write ${at}: the run stopped there`);
      store.restart();
      if (!(await store.loadCheckpoint(runId))) continue; // stopped before its first checkpoint
      const ran = await lines(root);
      const resume = (rerunUnfinishedCall?: RunOptions["rerunUnfinishedCall"]) =>
        new StepFlowRunner(def, {
          backend: new ScriptedBackend(toolScript()),
          store,
          onWarning: () => {},
        }).run({ resume: runId, ...(rerunUnfinishedCall ? { rerunUnfinishedCall } : {}) });
      let result;
      try {
        result = await resume();
        assert.equal(await lines(root), 1, `write ${at}: Bash ran exactly once`);
      } catch (error) {
        // Stopped between the Bash call's durable start and its durable end: it may have run.
        assert.ok(error instanceof StepflowError, String(error));
        assert.equal(error.code, "TOOL_CALL_UNFINISHED", `write ${at}: ${error.message}`);
        assert.match(error.message, /Bash \(echo done >> out\.txt\)/);
        assert.deepEqual(error.details?.next, {
          action: "resume",
          runId: error.details?.runId,
          args: ["--rerun-unfinished-call"],
        });
        assert.equal(await lines(root), ran, `write ${at}: nothing ran on the refused resume`);
        unfinished++;
        // A check function is asked once, under the lock, with the calls and their start lines.
        const asked: { callId: string; tool: string; startLine: number }[][] = [];
        await assert.rejects(
          resume((calls) => (asked.push([...calls]), false)),
          (refused: StepflowError) => refused.code === "TOOL_CALL_UNFINISHED",
        );
        assert.equal(await lines(root), ran, `write ${at}: a check saying no ran nothing`);
        assert.equal(asked.length, 1);
        const [call] = asked[0];
        const start = (await store.readLog(runId))[call.startLine];
        assert.equal(start.type, "tool_call_start", `write ${at}`);
        assert.equal(start.callId, call.callId);
        assert.equal(call.tool, "Bash");
        result = await resume(unfinished % 2 === 0 ? true : () => Promise.resolve(true));
        assert.equal(await lines(root), ran + 1, `write ${at}: the allowed re-run ran Bash again`);
      }
      assert.equal(result.success, true, `write ${at}: ${JSON.stringify(result.error)}`);
      assert.deepEqual(await historyOf(store, runId), expected, `write ${at}`);
      const log = await store.readLog(runId);
      const resumed = log.find((e) => e.type === "run_resume" && e.inStep !== undefined);
      if (resumed) inside++;
    }
    // Some stops fall inside the Bash call, and many resumes continued inside the step.
    assert.ok(unfinished >= 1, `unfinished ${unfinished}`);
    assert.ok(inside >= 3, `resumed inside ${inside}`);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a resumed step replays finished calls to the model: the conversation equals the uninterrupted one", async () => {
  const { root, def } = await setup();
  try {
    const clean = new ScriptedBackend(toolScript());
    await new StepFlowRunner(def, { backend: clean, store: new MemoryRunStore() }).run({
      args: { topic: "t" },
      cwd: root,
    });
    await Deno.remove(join(root, "out.txt"));
    // Stop right after the Bash call's end was made durable (its second flush): at the next write.
    const store = new CrashingStore();
    let flushes = 0;
    const save = store.saveCheckpoint.bind(store);
    store.saveCheckpoint = async (checkpoint) => {
      if ((checkpoint.state as { inStep?: unknown }).inStep && ++flushes === 2) {
        store.crashAt = store.writes + 2;
      }
      await save(checkpoint);
    };
    await new StepFlowRunner(def, { backend: new ScriptedBackend(toolScript()), store }).run({
      args: { topic: "t" },
      cwd: root,
      runId: "r",
    }).catch(() => undefined);
    store.restart();
    const backend = new ScriptedBackend(toolScript());
    const result = await new StepFlowRunner(def, { backend, store }).run({ resume: "r" });
    assert.equal(result.success, true, JSON.stringify(result.error));
    assert.equal(await lines(root), 1);
    // The resumed model turn got the same conversation as the uninterrupted one's turn 3.
    const resumedTurn = backend.toolTurns.find((t) => t.stepId === "s_b2c1")!;
    const cleanTurn = clean.toolTurns.filter((t) => t.stepId === "s_b2c1")[2];
    assert.deepEqual(resumedTurn.messages, cleanTurn.messages);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a worker suspending its runs does not stop a step with tools mid-call: the step ends, then the run is suspended", async () => {
  const { root, def } = await setup();
  try {
    const store = new CrashingStore();
    // As PostgresRunStore does while its worker shuts down: commit, then say so.
    const save = store.saveCheckpoint.bind(store);
    store.saveCheckpoint = async (checkpoint) => {
      await save(checkpoint);
      if (
        checkpoint.status === "running" && store.writes > store.toolStep.from && store.toolStep.from
      ) {
        throw new StepflowError("RUN_SUSPENDED", `Run ${checkpoint.runId} was suspended.`);
      }
    };
    await assert.rejects(
      () =>
        new StepFlowRunner(def, { backend: new ScriptedBackend(toolScript()), store }).run({
          args: { topic: "t" },
          cwd: root,
          runId: "s",
        }),
      (e) => e instanceof StepflowError && e.code === "RUN_SUSPENDED",
    );
    // Suspended at the end of the step with tools, not inside it: nothing is left unfinished.
    const checkpoint = (await store.loadCheckpoint("s"))!;
    assert.equal((checkpoint.state as { inStep?: unknown }).inStep, undefined);
    assert.equal(checkpoint.state.currentStepId, "s_c9d4");
    assert.equal(await lines(root), 1);
    store.saveCheckpoint = save;
    const result = await new StepFlowRunner(def, {
      backend: new ScriptedBackend(toolScript()),
      store,
    }).run({ resume: "s" });
    assert.equal(result.success, true, JSON.stringify(result.error));
    assert.equal(await lines(root), 1);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
