/**
 * stepflow's side of the fan-out comparison with Mastra and LangGraph.js in docs/performance.md
 * ("Fan-out side by side"): the fan-out of `bench/fan_out_fixtures.ts` — a parent whose one step
 * runs the child agent "echo" once per item, 4 at once, and hands off the results in item order —
 * with the zero-latency model of the fan-out bench. Each child is a run of its own: its prompt built
 * from the template, one model call, the answer checked against the step's output schema, the gate,
 * the run's log and checkpoint in the store.
 *
 * Run by `fan_out_side_by_side.ts`, or alone:
 * `deno run -A bench/peers/fan_out_stepflow.ts memory|file|file-process ITEMS ROUNDS`
 * (`file`: the file store with its default `"fsync"` durability; `file-process`: the file store
 * with `durability: "process"`, no flush). Prints one JSON line per round after a warm-up of 20 items:
 * `{ tool, store, items, wallMs, cpuMs }`.
 *
 * @module
 */
import process from "node:process";
import { join } from "node:path";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import type { RunStore } from "../../src/store/types.ts";
import { benchAgents, instantModel, items } from "../fan_out_fixtures.ts";

const store = Deno.args[0] ?? "memory";
const ITEMS = Number(Deno.args[1] ?? 100);
const ROUNDS = Number(Deno.args[2] ?? 3);
const CONCURRENCY = 4;

const root = await Deno.makeTempDir({ prefix: "stepflow-fanout-peers-" });
const { fan } = await benchAgents(root, CONCURRENCY);

function openStore(round: number): RunStore {
  const folder = join(root, `runs-${round}`);
  if (store === "memory") return new MemoryRunStore();
  if (store === "file") return new FileRunStore(folder);
  if (store === "file-process") return new FileRunStore(folder, { durability: "process" });
  throw new Error(`Unknown store ${JSON.stringify(store)}: use memory, file or file-process.`);
}

async function once(round: number, n = ITEMS): Promise<{ wallMs: number; cpuMs: number }> {
  const list = items(n);
  const runner = new StepFlowRunner(fan, { backend: instantModel(), store: openStore(round) });
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await runner.run({ args: { items: list } });
  const wallMs = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (!result.success) throw new Error(`${result.completionReason}: ${result.error?.message}`);
  const { results } = result.state.handoff["run.each"] as { results: { item: unknown }[] };
  if (results.length !== n || results.some((r, i) => r.item !== list[i])) {
    throw new Error("stepflow: the results are not in item order");
  }
  return { wallMs, cpuMs: (c.user + c.system) / 1000 };
}

try {
  await once(-1, Math.min(ITEMS, 20)); // warm-up (20 items)
  for (let r = 0; r < ROUNDS; r++) {
    console.log(JSON.stringify({ tool: "stepflow", store, items: ITEMS, ...(await once(r)) }));
  }
} finally {
  await Deno.remove(root, { recursive: true });
}
