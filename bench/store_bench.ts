/**
 * Runner overhead per iteration with the durable file store, beside the no-store and in-memory
 * figures of bench/flow_bench.ts: the same gate-routed step repeated 10,000 times against a
 * zero-latency scripted backend. With the file store every iteration appends two log lines
 * (step_start, step_end) and replaces the checkpoint atomically. Divide the reported time by
 * 10,000 for µs/iteration.
 *
 * `durability: "fsync"` (the default) flushes the log, the checkpoint's temp file and the directory
 * on every iteration; `"process"` skips the flushes (survives a killed process, not a power cut).
 * The run directory is a fresh temp folder (set TMPDIR to measure another disk).
 */
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { type Durability, FileRunStore } from "../src/store/file.ts";
import { MemoryRunStore } from "../src/store/memory.ts";
import type { RunStore } from "../src/store/types.ts";
import { seed004Files, seed004LoopBackend, writeAgent } from "../tests/flow/fixtures.ts";

const ITERATIONS = 10_000;
const root = await Deno.makeTempDir({ prefix: "stepflow-store-bench-" });
await writeAgent(root, "issue-solver", seed004Files());
const definition = await loadAgentDefinition("issue-solver", { cwd: root });

const backend = () =>
  seed004LoopBackend(ITERATIONS, { usage: { inputTokens: 10, outputTokens: 2 } });

async function runOnce(store?: RunStore): Promise<void> {
  const result = await new StepFlowRunner(definition, {
    backend: backend(),
    maxTotalIterations: ITERATIONS + 1,
    ...(store ? { store } : {}),
  }).run({ args: { topic: "bench" } });
  if (!result.success || result.iterations !== ITERATIONS) {
    throw new Error(`bench run failed: ${result.completionReason} after ${result.iterations}`);
  }
}

Deno.bench({
  name: "runner: 10,000 iterations, no store",
  group: "store",
  baseline: true,
  n: 3,
  warmup: 1,
  async fn() {
    await runOnce();
  },
});

Deno.bench({
  name: "runner: 10,000 iterations, memory store",
  group: "store",
  n: 3,
  warmup: 1,
  async fn() {
    await runOnce(new MemoryRunStore());
  },
});

for (const durability of ["fsync", "process"] as Durability[]) {
  Deno.bench({
    name: `runner: 10,000 iterations, file store (durability ${durability})`,
    group: "store",
    n: 3,
    warmup: 1,
    async fn(b) {
      const dir = await Deno.makeTempDir({ dir: root, prefix: "runs-" });
      const store = new FileRunStore(dir, { durability });
      b.start();
      await runOnce(store);
      b.end();
      await Deno.remove(dir, { recursive: true });
    },
  });
}
