/**
 * Runner overhead per iteration: a gate-routed step that repeats 10,000 times against a
 * zero-latency scripted backend. Includes prompt resolution, schema resolution (stat-based cache),
 * ajv validation, gate, router and events. Divide the reported time by 10,000 for µs/iteration.
 */
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { MemoryRunStore } from "../src/store/memory.ts";
import { seed004Files, seed004LoopBackend, writeAgent } from "../tests/flow/fixtures.ts";

const ITERATIONS = 10_000;
const root = await Deno.makeTempDir({ prefix: "stepflow-bench-" });
await writeAgent(root, "issue-solver", seed004Files());
const definition = await loadAgentDefinition("issue-solver", { cwd: root });

const backend = () => seed004LoopBackend(ITERATIONS);

let handled = 0;
const events = { onStepStart: () => void handled++, onStepEnd: () => void handled++ };

Deno.bench({
  name: "runner: 10,000 gate-routed iterations (no store)",
  group: "runner",
  baseline: true,
  n: 5,
  warmup: 1,
  async fn() {
    const result = await new StepFlowRunner(definition, {
      backend: backend(),
      events,
      maxTotalIterations: ITERATIONS + 1,
    }).run({ args: { topic: "bench" } });
    if (!result.success || result.iterations !== ITERATIONS) {
      throw new Error(`bench run failed: ${result.completionReason} after ${result.iterations}`);
    }
  },
});

Deno.bench({
  name: "runner: 10,000 gate-routed iterations (memory store)",
  group: "runner",
  n: 5,
  warmup: 1,
  async fn() {
    const result = await new StepFlowRunner(definition, {
      backend: backend(),
      events,
      store: new MemoryRunStore(),
      maxTotalIterations: ITERATIONS + 1,
    }).run({ args: { topic: "bench" } });
    if (!result.success) throw new Error(result.completionReason);
  },
});
