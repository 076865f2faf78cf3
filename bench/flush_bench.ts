/**
 * The file store's default `fsync` mode against the floor it cannot beat: one `write` +
 * `fdatasync` per iteration, measured in the same run on the same disk (target ≤ 1.3× of one
 * flush). Every bench does 200 rounds:
 *
 * - the bare loop (the baseline), and the same with as many bytes per round as an iteration
 *   appends (a log that grows faster allocates blocks more often, which a flush must commit);
 * - the file store alone, called as the runner calls it per iteration (`step_start`, `step_end`,
 *   checkpoint), with entries of the sizes a real iteration writes — the store's own cost;
 * - the runner over the file store, and over the memory store: their difference is what the file
 *   store adds to a real run (the runner's own work — prompt, validation, gate, events — is in
 *   both).
 *
 * The disk is shared with other work: compare the figures of one run, and run it several times.
 * The run directory is a fresh temp folder (set TMPDIR to measure another disk).
 */
import { join } from "node:path";
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { FileRunStore } from "../src/store/file.ts";
import { MemoryRunStore } from "../src/store/memory.ts";
import type { RunCheckpoint, RunStore } from "../src/store/types.ts";
import { seed004Files, seed004LoopBackend, writeAgent } from "../tests/flow/fixtures.ts";

const ROUNDS = 200;
const root = await Deno.makeTempDir({ prefix: "stepflow-flush-bench-" });
await writeAgent(root, "issue-solver", seed004Files());
const definition = await loadAgentDefinition("issue-solver", { cwd: root });
/** As many bytes as one iteration appends (step_start, step_end, checkpoint line). */
const ITERATION_BYTES = new TextEncoder().encode(`${JSON.stringify({ pad: "x".repeat(1450) })}\n`);
/** A log line about the size of a step_end entry. */
const LINE = new TextEncoder().encode(`${JSON.stringify({ pad: "x".repeat(400) })}\n`);

const backend = () => seed004LoopBackend(ROUNDS, { usage: { inputTokens: 10, outputTokens: 2 } });

/** 200 rounds of one `write` of `line` + `fdatasync` on a fresh file. */
function bareRounds(b: Deno.BenchContext, line: Uint8Array) {
  const path = join(root, `bare-${crypto.randomUUID()}.jsonl`);
  const file = Deno.openSync(path, { append: true, create: true });
  b.start();
  for (let i = 0; i < ROUNDS; i++) {
    let off = 0;
    while (off < line.length) off += file.writeSync(line.subarray(off));
    file.syncDataSync();
  }
  b.end();
  file.close();
  Deno.removeSync(path);
}

Deno.bench({
  name: `bare write + fdatasync, ${ROUNDS.toLocaleString("en")} rounds (one flush per round)`,
  group: "flush",
  baseline: true,
  n: 8,
  warmup: 1,
  fn: (b) => bareRounds(b, LINE),
});

Deno.bench({
  name: `bare write of an iteration's bytes (1.5 kB) + fdatasync, ${
    ROUNDS.toLocaleString("en")
  } rounds`,
  group: "flush",
  n: 8,
  warmup: 1,
  fn: (b) => bareRounds(b, ITERATION_BYTES),
});

/** A step_start / step_end entry and a checkpoint of the sizes the runner writes (~0.25/0.5/0.65 kB). */
function iterationRecords(runId: string, i: number) {
  const ts = new Date().toISOString();
  const start = {
    ts,
    runId,
    type: "step_start",
    stepId: "initial.issue",
    iteration: i,
    prompt: "p".repeat(120),
  };
  const end = {
    ts,
    runId,
    type: "step_end",
    stepId: "initial.issue",
    iteration: i,
    transition: "repeat",
    nextStepId: "initial.issue",
    output: { stepId: "initial.issue", next_action: { action: "repeat" }, note: "o".repeat(220) },
  };
  const checkpoint: RunCheckpoint = {
    version: 1,
    runId,
    agent: "issue-solver",
    status: "running",
    startedAt: ts,
    updatedAt: ts,
    logEntries: 2 * i + 1,
    state: {
      currentStepId: "initial.issue",
      iteration: i + 1,
      historyLength: i,
      pad: "s".repeat(420),
    },
  };
  return { start, end, checkpoint };
}

Deno.bench({
  name: `file store alone (fsync), ${ROUNDS.toLocaleString("en")} iterations`,
  group: "flush",
  n: 8,
  warmup: 1,
  async fn(b) {
    const dir = await Deno.makeTempDir({ dir: root, prefix: "store-" });
    const store = new FileRunStore(dir, { durability: "fsync" });
    const runId = "bench";
    const lock = await store.lock(runId);
    await store.append(runId, { ts: new Date().toISOString(), runId, type: "run_start" });
    await store.saveCheckpoint(iterationRecords(runId, 0).checkpoint);
    b.start();
    for (let i = 1; i <= ROUNDS; i++) {
      const { start, end, checkpoint } = iterationRecords(runId, i);
      await store.append(runId, start);
      await store.append(runId, end);
      await store.saveCheckpoint(checkpoint);
    }
    b.end();
    await lock.release();
    await Deno.remove(dir, { recursive: true });
  },
});

async function runnerRound(b: Deno.BenchContext, store: RunStore) {
  b.start();
  const result = await new StepFlowRunner(definition, {
    backend: backend(),
    maxTotalIterations: ROUNDS + 1,
    store,
  }).run({ args: { topic: "bench" } });
  b.end();
  if (!result.success || result.iterations !== ROUNDS) {
    throw new Error(`bench run failed: ${result.completionReason} after ${result.iterations}`);
  }
}

Deno.bench({
  name: `runner + file store (fsync), ${ROUNDS.toLocaleString("en")} iterations`,
  group: "flush",
  n: 8,
  warmup: 1,
  async fn(b) {
    const dir = await Deno.makeTempDir({ dir: root, prefix: "runs-" });
    await runnerRound(b, new FileRunStore(dir, { durability: "fsync" }));
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.bench({
  name: `runner + memory store (no flush), ${ROUNDS.toLocaleString("en")} iterations`,
  group: "flush",
  n: 8,
  warmup: 1,
  async fn(b) {
    await runnerRound(b, new MemoryRunStore());
  },
});
