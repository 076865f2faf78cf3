import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { runStoreDirFor, runStoreFor } from "../../src/store/location.ts";
import type { RunCheckpoint, RunLogEntry } from "../../src/store/types.ts";
import { pipelineFiles, pipelineScript } from "./helpers.ts";
import { writeAgent } from "../flow/fixtures.ts";

const TS = "2026-01-01T00:00:00.000Z";

function entry(runId: string, type: string, extra: Record<string, unknown> = {}): RunLogEntry {
  return { ts: TS, runId, type, ...extra };
}

function checkpoint(runId: string, extra: Partial<RunCheckpoint> = {}): RunCheckpoint {
  return {
    version: 1,
    runId,
    agent: "demo",
    status: "running",
    startedAt: TS,
    updatedAt: "2026-01-01T00:00:05.000Z",
    logEntries: 0,
    state: {},
    ...extra,
  };
}

async function tempStore(options = {}) {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-store-" });
  const warnings: string[] = [];
  const store = new FileRunStore(join(dir, "runs"), {
    onWarning: (m) => void warnings.push(m),
    ...options,
  });
  return { dir: store.dir, store, warnings };
}

/** Writes a run with `n` log entries and a checkpoint counting them, under its lock. */
async function writeRun(store: FileRunStore, runId: string, n = 3) {
  const lock = await store.lock(runId);
  await store.append(runId, entry(runId, "run_start"));
  for (let i = 1; i < n; i++) {
    await store.append(runId, entry(runId, "step_end", { stepId: "a.b", iteration: i }));
  }
  await store.saveCheckpoint(checkpoint(runId, { logEntries: n }));
  await lock.release();
}

async function expectError(promise: Promise<unknown>, code: string, ...patterns: RegExp[]) {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, `expected ${code}, got ${error}`);
  assert.equal(error.code, code, error.message);
  for (const p of patterns) assert.match(error.message, p);
  return error;
}

Deno.test("log and checkpoint round-trip through the files <runId>.jsonl and <runId>.checkpoint.json", async () => {
  for (const durability of ["fsync", "process"] as const) {
    const { store, dir } = await tempStore({ durability });
    await writeRun(store, "r1", 3);
    const text = await Deno.readTextFile(join(dir, "r1.jsonl"));
    // "fsync" also records the checkpoint in the log (one flush per iteration): one more line.
    const lines = durability === "fsync" ? 4 : 3;
    assert.equal(text.split("\n").length, lines + 1, `${lines} lines, each ended by a newline`);
    assert.equal(text.includes('"type":"store_checkpoint"'), durability === "fsync");
    assert.deepEqual((await store.readLog("r1")).map((e) => e.type), [
      "run_start",
      "step_end",
      "step_end",
    ]);
    assert.deepEqual(await store.loadCheckpoint("r1"), checkpoint("r1", { logEntries: 3 }));
    assert.deepEqual(
      JSON.parse(await Deno.readTextFile(join(dir, "r1.checkpoint.json"))).runId,
      "r1",
    );
    await assert.rejects(Deno.stat(join(dir, "r1.checkpoint.json.tmp")), Deno.errors.NotFound);
    await assert.rejects(
      Deno.stat(join(dir, "r1.lock")),
      Deno.errors.NotFound,
      "released lock is removed",
    );
    assert.equal(await store.loadCheckpoint("unknown"), undefined);
    assert.deepEqual(await store.readLog("unknown"), []);
  }
});

Deno.test("a leftover checkpoint temp file (crash before the rename) never replaces the checkpoint", async () => {
  const { store, dir } = await tempStore();
  await writeRun(store, "r1", 2);
  await Deno.writeTextFile(join(dir, "r1.checkpoint.json.tmp"), '{"version":1,"runId":"r1","ag');
  assert.equal((await store.loadCheckpoint("r1"))!.logEntries, 2);
  assert.equal((await store.list()).length, 1);
  // The next write simply replaces the leftover.
  const lock = await store.lock("r1");
  await store.saveCheckpoint(checkpoint("r1", { logEntries: 2, status: "completed" }));
  await lock.release();
  assert.equal((await store.loadCheckpoint("r1"))!.status, "completed");
  await assert.rejects(Deno.stat(join(dir, "r1.checkpoint.json.tmp")), Deno.errors.NotFound);
});

Deno.test("a torn last log line is dropped on read and cut off, with a warning, before the next append", async () => {
  // "process": the log holds only the runner's entries (no checkpoint lines) — lines are counted.
  const { store, dir, warnings } = await tempStore({ durability: "process" });
  await writeRun(store, "r1", 3);
  const file = join(dir, "r1.jsonl");
  await Deno.writeTextFile(file, '{"ts":"2026-01-01T00:00:00.000Z","runId":"r1","ty', {
    append: true,
  });
  assert.equal((await store.readLog("r1")).length, 3);
  const lock = await store.lock("r1");
  await store.append("r1", entry("r1", "run_resume"));
  await lock.release();
  const lines = (await Deno.readTextFile(file)).split("\n");
  assert.equal(lines.length, 5);
  assert.deepEqual((await store.readLog("r1")).map((e) => e.type).at(-1), "run_resume");
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /r1\.jsonl ended with a torn line \(49 bytes written by a crash/);
});

Deno.test("damage inside the log names the file, the line and the last good entry", async () => {
  const { store, dir } = await tempStore();
  await writeRun(store, "r1", 4);
  const file = join(dir, "r1.jsonl");
  const lines = (await Deno.readTextFile(file)).split("\n");
  lines[2] = lines[2].slice(0, 20) + "#garbage#";
  await Deno.writeTextFile(file, lines.join("\n"));
  const error = await expectError(
    store.readLog("r1"),
    "RUN_LOG_CORRUPT",
    new RegExp(
      `Run log ${file.replaceAll(".", "\\.")} is corrupt at line 3: the line is not valid JSON`,
    ),
    /The last good entry is line 2 \(step_end of step "a\.b", iteration 1, at 2026-01-01T00:00:00\.000Z\)/,
    /Only a torn last line .* is tolerated/,
  );
  assert.equal(error.details?.line, 3);
  // Resume reads the checkpoint first: that fails with the same message, never silently.
  await expectError(store.loadCheckpoint("r1"), "RUN_LOG_CORRUPT", /corrupt at line 3/);
});

Deno.test("a complete last line that is not an entry is damage, not a torn append", async () => {
  const { store, dir } = await tempStore({ durability: "process" });
  await writeRun(store, "r1", 2);
  await Deno.writeTextFile(join(dir, "r1.jsonl"), '{"ts":"x","runId":"other","type":"t"}\n', {
    append: true,
  });
  await expectError(
    store.readLog("r1"),
    "RUN_LOG_CORRUPT",
    /at line 3: the entry belongs to run "other", not "r1"\. The last good entry is line 2/,
  );
  await Deno.writeTextFile(join(dir, "r2.jsonl"), "\n");
  await expectError(
    store.readLog("r2"),
    "RUN_LOG_CORRUPT",
    /at line 1: the line is empty\. No entry before it is readable\./,
  );
});

Deno.test("a log shorter than its checkpoint says is a truncated log, named with its last good entry", async () => {
  const { store, dir } = await tempStore();
  await writeRun(store, "r1", 4);
  const file = join(dir, "r1.jsonl");
  const lines = (await Deno.readTextFile(file)).split("\n");
  await Deno.writeTextFile(file, lines.slice(0, 2).join("\n") + "\n");
  await expectError(
    store.loadCheckpoint("r1"),
    "RUN_LOG_TRUNCATED",
    /r1\.jsonl holds 2 entries, but checkpoint .*r1\.checkpoint\.json was written after 4/,
    /The last good entry is line 2 \(step_end of step "a\.b", iteration 1/,
  );
});

Deno.test("a corrupt or foreign checkpoint names the file and where the log stands", async () => {
  // "process": the checkpoint file is the checkpoint (in "fsync" mode it is a cache the log's
  // checkpoint lines replace, see checkpoint_cache_test.ts).
  const { store, dir } = await tempStore({ durability: "process" });
  await writeRun(store, "r1", 3);
  const file = join(dir, "r1.checkpoint.json");
  await Deno.writeTextFile(file, '{"version":1,"runId":"r1",');
  await expectError(
    store.loadCheckpoint("r1"),
    "RUN_CHECKPOINT_CORRUPT",
    new RegExp(`Checkpoint ${file.replaceAll(".", "\\.")} is corrupt: not valid JSON`),
    /The run log .*r1\.jsonl is intact: The last good entry is line 3 \(step_end of step "a\.b", iteration 2/,
    /stepflow will not restart the run silently/,
  );
  await Deno.writeTextFile(file, "");
  await expectError(store.loadCheckpoint("r1"), "RUN_CHECKPOINT_CORRUPT", /the file is empty/);
  await Deno.writeTextFile(file, JSON.stringify({ ...checkpoint("r1"), logEntries: -1 }));
  await expectError(store.loadCheckpoint("r1"), "RUN_CHECKPOINT_INVALID", /"logEntries": /);
  await Deno.writeTextFile(file, JSON.stringify(checkpoint("r9")));
  await expectError(store.loadCheckpoint("r1"), "RUN_CHECKPOINT_INVALID", /belongs to run "r9"/);
  // The listing survives a broken run and says what is wrong.
  const [summary] = await store.list();
  assert.equal(summary.runId, "r1");
  assert.match(summary.problem!, /belongs to run "r9"/);
});

Deno.test("a log without a checkpoint cannot be resumed, and says so", async () => {
  const { store, dir } = await tempStore();
  const lock = await store.lock("r1");
  await store.append("r1", entry("r1", "run_start"));
  await lock.release();
  await expectError(
    store.loadCheckpoint("r1"),
    "RUN_CHECKPOINT_MISSING",
    new RegExp(
      `has a run log \\(${join(dir, "r1.jsonl").replaceAll(".", "\\.")}\\) but no checkpoint`,
    ),
  );
  const [summary] = await store.list();
  assert.match(summary.problem!, /^no checkpoint/);
  assert.equal(summary.startedAt, TS);
});

Deno.test("run ids that could escape the directory are refused", async () => {
  const { store } = await tempStore();
  for (const bad of ["../x", "a/b", ".hidden", "", "a.b", "x".repeat(129)]) {
    await expectError(store.readLog(bad), "RUN_ID_INVALID", /Invalid run id/);
    await expectError(store.lock(bad), "RUN_ID_INVALID");
  }
});

Deno.test("list() reports status, steps, duration, tokens and whether a running run is alive", async () => {
  const { store } = await tempStore();
  const state = (extra: Record<string, unknown>) => ({
    historyLength: 4,
    iteration: 5,
    currentStepId: "work.build",
    usage: { inputTokens: 1200, outputTokens: 34, costUsd: 0.5, calls: 5 },
    ...extra,
  });
  let lock = await store.lock("r-old");
  await store.saveCheckpoint(checkpoint("r-old", {
    status: "failed",
    startedAt: "2025-01-01T00:00:00.000Z",
    updatedAt: "2025-01-01T00:01:00.000Z",
    state: state({ end: { reason: "step_failed", stepId: "work.test" } }),
  }));
  await lock.release();
  lock = await store.lock("r-interrupted");
  await store.saveCheckpoint(checkpoint("r-interrupted", { state: state({}) }));
  await lock.release();
  const live = await store.lock("r-live");
  await store.saveCheckpoint(checkpoint("r-live", { startedAt: "2026-02-01T00:00:00.000Z" }));
  const runs = await store.list();
  await live.release();
  assert.deepEqual(runs.map((r) => r.runId), ["r-live", "r-interrupted", "r-old"]);
  assert.equal(runs[0].live, true);
  assert.equal(runs[1].live, false);
  assert.deepEqual(runs[2], {
    runId: "r-old",
    agent: "demo",
    status: "failed",
    startedAt: "2025-01-01T00:00:00.000Z",
    updatedAt: "2025-01-01T00:01:00.000Z",
    steps: 4,
    iterations: 5,
    durationMs: 60_000,
    usage: { inputTokens: 1200, outputTokens: 34, costUsd: 0.5, calls: 5 },
    stepId: "work.test",
    completionReason: "step_failed",
  });
});

Deno.test("runStoreDirFor: logging.directory relative to the user's folder, else tmp/logs/agents/<name>", () => {
  assert.equal(
    runStoreDirFor({ name: "a", agent: { logging: { directory: "logs/x" } } }, "/home/u/p"),
    "/home/u/p/logs/x",
  );
  assert.equal(
    runStoreDirFor({ name: "a", agent: { logging: { directory: "/var/runs" } } }, "/home/u/p"),
    "/var/runs",
  );
  assert.equal(
    runStoreDirFor({ name: "code-improver", agent: {} }, "/w"),
    "/w/tmp/logs/agents/code-improver",
  );
});

Deno.test("the runner resumes from a FileRunStore written by another store instance", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-store-" });
  await writeAgent(root, "pipeline", pipelineFiles({ directory: "runs" }));
  const def = await loadAgentDefinition("pipeline", { cwd: root });
  const script = pipelineScript();
  // First process: the third step fails.
  const failing = { ...script, "work.test": [{ error: "quota exceeded" }] };
  const first = await new StepFlowRunner(def, {
    backend: new ScriptedBackend(failing as never),
    store: runStoreFor(def, { cwd: root }),
  }).run({ args: { topic: "t" } });
  assert.equal(first.completionReason, "step_failed");
  assert.equal(runStoreDirFor(def, root), join(root, "runs"));
  // Another "process": a fresh store over the same folder redrives it.
  const second = await new StepFlowRunner(def, {
    backend: new ScriptedBackend(script as never),
    store: runStoreFor(def, { cwd: root }),
  }).run({ redrive: first.runId });
  assert.equal(second.success, true, JSON.stringify(second.error));
  assert.deepEqual(second.state.history.map((h) => `${h.stepId}:${h.transition}`), [
    "work.plan:next",
    "work.build:next",
    "work.test:fail",
    "work.test:next",
    "work.fix:next",
    "work.review:complete",
    "complete.report:complete",
  ]);
  assert.deepEqual(second.state.handoff["work.build"], { note: "work.build done" });
  const log = await runStoreFor(def, { cwd: root }).readLog(first.runId);
  const ends = log.filter((l) => l.type === "step_end");
  assert.deepEqual(ends.at(-1)!.usage, {
    inputTokens: 1507,
    outputTokens: 153,
    costUsd: 0,
    calls: 6,
    callsWithoutUsage: 0,
    // The test's scripted answers name no model: their cost is unknown, never $0.
    callsWithoutCost: 6,
  });
  assert.deepEqual(ends[0].handoff, { note: "work.plan done" });
  assert.deepEqual(log.filter((l) => l.type.startsWith("run_")).map((l) => l.type), [
    "run_start",
    "run_end",
    "run_redrive",
    "run_end",
  ]);
});

Deno.test("fsync mode: the log is the record; a missing or older checkpoint file is rebuilt from it", async () => {
  const { store, dir } = await tempStore();
  await writeRun(store, "r1", 3);
  const older = await Deno.readTextFile(join(dir, "r1.checkpoint.json"));
  const lock = await store.lock("r1");
  await store.append("r1", entry("r1", "step_end", { stepId: "a.b", iteration: 3 }));
  await store.saveCheckpoint(checkpoint("r1", { logEntries: 4 }));
  await lock.release();
  // A crash between the log's flush and the cache write leaves the older cache: the log wins.
  await Deno.writeTextFile(join(dir, "r1.checkpoint.json"), older);
  assert.equal((await store.loadCheckpoint("r1"))?.logEntries, 4);
  // No cache at all: rebuilt from the log as well; the log's checkpoint lines never show in it.
  await Deno.remove(join(dir, "r1.checkpoint.json"));
  assert.equal((await store.loadCheckpoint("r1"))?.logEntries, 4);
  assert.equal((await store.list())[0].problem, undefined);
  assert.deepEqual((await store.readLog("r1")).map((e) => e.type), [
    "run_start",
    "step_end",
    "step_end",
    "step_end",
  ]);
});
