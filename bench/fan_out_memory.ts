/**
 * Memory of a fan-out of 1,000 items in one process (16 at once, a zero-latency model, the file
 * store), against one of 100: the heap held at the busiest moment (sampled after a full collection
 * as children end) and after the run, and the process's resident size. Run by `fan_out_bench.ts`
 * (so by `deno task bench`) with `--expose-gc`; prints one JSON line per case. Alone:
 * `deno run -A --v8-flags=--expose-gc bench/fan_out_memory.ts`.
 *
 * @module
 */
import { join } from "node:path";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { FileRunStore } from "../src/store/file.ts";
import { benchAgents, instantModel, items } from "./fan_out_fixtures.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Run with --v8-flags=--expose-gc: the figures need a full collection.");

function heapUsed(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

const root = await Deno.makeTempDir({ prefix: "stepflow-fanout-memory-" });
const { fan } = await benchAgents(root, 16);
const MB = 1024 * 1024;

for (const n of [100, 1_000, 100]) {
  const baseline = heapUsed();
  let peak = 0;
  let ended = 0;
  const started = performance.now();
  const result = await new StepFlowRunner(fan, {
    backend: instantModel(),
    store: new FileRunStore(join(root, `runs-${n}-${Date.now()}`)),
    events: {
      // Sampled every 50 children (a full collection each time is slow).
      onFanOut: (_info, report) => {
        if (report.change?.kind !== "ended" || ++ended % 50 !== 0) return;
        peak = Math.max(peak, heapUsed() - baseline);
      },
    },
  }).run({ args: { items: items(n) } });
  if (!result.success) throw new Error(`${result.completionReason}: ${result.error?.message}`);
  const ms = performance.now() - started;
  const after = heapUsed() - baseline;
  console.log(JSON.stringify({
    items: n,
    ms: Math.round(ms),
    msPerItem: Number((ms / n).toFixed(2)),
    peakHeapMB: Number((peak / MB).toFixed(1)),
    heapAfterMB: Number((after / MB).toFixed(1)),
    rssMB: Number((Deno.memoryUsage().rss / MB).toFixed(1)),
  }));
}
