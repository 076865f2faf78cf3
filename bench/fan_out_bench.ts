/**
 * Fan-out steps, with a zero-latency model and the file store (its default durability, one
 * flush per commit), in one sitting so the ratios hold on a busy machine:
 *
 * - overhead per child: a fan-out of 10 items one at a time, against ten plain agent steps in a
 *   row (each runs the same child once): the time per child, fan-out against agent step (target:
 *   at most 2×), and with 4 at once;
 * - time linear in the items: 100 and 1,000 items (concurrency 16) — per item the same.
 *
 * The memory of a 1,000-item fan-out is measured in a process of its own
 * (`bench/fan_out_memory.ts`, with `--expose-gc`) and printed before the timings.
 */
import { join } from "node:path";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { FileRunStore } from "../src/store/file.ts";
import type { AgentDefinition } from "../src/definition/types.ts";
import { benchAgents, CHAIN, instantModel, items } from "./fan_out_fixtures.ts";

const script = new URL("./fan_out_memory.ts", import.meta.url).pathname;
const measured = await new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", "--v8-flags=--expose-gc", script],
  stdout: "piped",
  stderr: "inherit",
}).output();
if (!measured.success) throw new Error(`${script} failed (exit ${measured.code}).`);
console.log("fan-out memory (heap after a full collection; rss of the process):");
for (const line of new TextDecoder().decode(measured.stdout).trim().split("\n")) {
  console.log(`  ${line}`);
}

const root = await Deno.makeTempDir({ prefix: "stepflow-fanout-bench-" });
const one = await benchAgents(join(root, "one"), 1);
const four = await benchAgents(join(root, "four"), 4);
const wide = await benchAgents(join(root, "wide"), 16);

async function drive(definition: AgentDefinition, store: string, args: Record<string, unknown>) {
  const result = await new StepFlowRunner(definition, {
    backend: instantModel(),
    store: new FileRunStore(join(root, store)),
  }).run({ args });
  if (!result.success) throw new Error(`${result.completionReason}: ${result.error?.message}`);
}

Deno.bench({
  name: `agent steps: ${CHAIN} in a row, one child each`,
  group: "per child",
  baseline: true,
  n: 20,
  warmup: 2,
  async fn() {
    await drive(one.chain, "chain", {});
  },
});

Deno.bench({
  name: `fan-out: ${CHAIN} items, one at a time`,
  group: "per child",
  n: 20,
  warmup: 2,
  async fn() {
    await drive(one.fan, "fan1", { items: items(CHAIN) });
  },
});

Deno.bench({
  name: `fan-out: ${CHAIN} items, 4 at once`,
  group: "per child",
  n: 20,
  warmup: 2,
  async fn() {
    await drive(four.fan, "fan4", { items: items(CHAIN) });
  },
});

Deno.bench({
  name: "fan-out: 100 items, 16 at once",
  group: "linear",
  baseline: true,
  n: 5,
  warmup: 1,
  async fn() {
    await drive(wide.fan, "fan100", { items: items(100) });
  },
});

Deno.bench({
  name: "fan-out: 1,000 items, 16 at once",
  group: "linear",
  n: 2,
  warmup: 0,
  async fn() {
    await drive(wide.fan, "fan1000", { items: items(1_000) });
  },
});
