/**
 * Tool-plan scheduling: 10,000 steps / 50,000 edges of no-op tools run end to end by the in-degree
 * executor (target ≤ 200 ms), with the seed's naive algorithm — repeated scans for ready steps, one
 * `Promise.all` wave at a time — measured beside it on the same graphs.
 *
 * Two graph shapes, both exactly 10,000 steps and 50,000 edges:
 * - `random`: each step depends on 5 random earlier steps (a wide DAG, a few dozen levels deep);
 * - `deep`: each step depends on the 5 steps before it (a DAG 10,000 levels deep).
 *
 * Run: `deno bench -A bench/plan_bench.ts`
 *
 * @module
 */
import { z } from "zod";
import { ToolRegistry } from "../src/tools/registry.ts";
import { executePlan } from "../src/plan/executor.ts";
import { validatePlan } from "../src/plan/validate.ts";
import type { Plan, Step } from "../src/plan/types.ts";

const STEPS = 10_000;
const EDGES = 50_000;

const tools = new ToolRegistry().register({
  name: "noop",
  description: "Does nothing",
  inputSchema: z.object({}),
  execute: () => null,
});

/** A deterministic pseudo-random generator (mulberry32), so every run benches the same graph. */
function random(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function buildPlan(shape: "random" | "deep"): Plan {
  const next = random(42);
  const steps: Step[] = [];
  let edges = 0;
  for (let i = 0; i < STEPS; i++) {
    const want = Math.min(i, 5);
    const deps = new Set<number>();
    if (shape === "deep") { for (let k = 1; k <= want; k++) deps.add(i - k); }
    else while (deps.size < want) deps.add(Math.floor(next() * i));
    edges += deps.size;
    steps.push({
      id: `s${i}`,
      order: i + 1,
      description: `Step ${i}`,
      tool: "noop",
      args: {},
      dependsOn: [...deps].map((d) => `s${d}`),
      status: "pending",
    });
  }
  // Top up to exactly EDGES with one more dependency on some steps.
  for (let i = STEPS - 1; edges < EDGES; i--) {
    const candidate = `s${shape === "deep" ? i - 6 : Math.floor(next() * (i - 6))}`;
    if (steps[i].dependsOn.includes(candidate)) continue;
    steps[i].dependsOn.push(candidate);
    edges++;
  }
  return {
    id: `bench_${shape}`,
    taskId: "bench",
    version: 1,
    createdAt: "2025-01-01T00:00:00.000Z",
    steps,
  };
}

/**
 * The seed's ExecutionEngine.execute, kept as written: find every pending step whose dependencies
 * are satisfied by scanning the whole plan, run that wave with Promise.all, repeat. (Dependency
 * lookups use a Map — the seed leaves `allDependenciesSatisfied` open — so only the repeated scan
 * is measured, not a linear `find` per dependency.)
 */
async function naiveExecute(plan: Plan): Promise<number> {
  const status = new Map<string, string>();
  for (const s of plan.steps) status.set(s.id, "pending");
  const context = new Map<string, unknown>();
  const ctx = { workspaceRoot: "." };
  let completed = 0;
  while ([...status.values()].some((s) => s === "pending")) {
    const readySteps = plan.steps.filter((s) =>
      status.get(s.id) === "pending" && s.dependsOn.every((d) => status.get(d) === "completed")
    );
    if (readySteps.length === 0) break;
    await Promise.all(readySteps.map(async (step) => {
      status.set(step.id, "running");
      try {
        const value = await tools.invoke(step.tool, step.args, ctx);
        status.set(step.id, "completed");
        context.set(step.id, value);
        completed++;
      } catch {
        status.set(step.id, "failed");
      }
    }));
  }
  return completed;
}

for (const shape of ["random", "deep"] as const) {
  const plan = buildPlan(shape);
  const edges = plan.steps.reduce((n, s) => n + s.dependsOn.length, 0);
  if (plan.steps.length !== STEPS || edges !== EDGES) {
    throw new Error(`bench graph is ${plan.steps.length} steps / ${edges} edges`);
  }
  const group = `${shape} DAG, ${STEPS} steps / ${EDGES} edges`;

  Deno.bench({
    name: `executePlan (in-degree, concurrency 4, validation included) — ${shape}`,
    group,
    baseline: true,
    n: 20,
    warmup: 3,
    async fn() {
      const summary = await executePlan(plan, { tools });
      if (summary.steps.completed.length !== STEPS) throw new Error(summary.error);
    },
  });

  Deno.bench({
    name: `executePlan (in-degree, concurrency 4, validate: false) — ${shape}`,
    group,
    n: 20,
    warmup: 3,
    async fn() {
      const summary = await executePlan(plan, { tools, validate: false });
      if (summary.steps.completed.length !== STEPS) throw new Error(summary.error);
    },
  });

  Deno.bench({
    name: `seed's naive scan (unbounded waves) — ${shape}`,
    group,
    n: shape === "deep" ? 3 : 20,
    warmup: 1,
    async fn() {
      const completed = await naiveExecute(plan);
      if (completed !== STEPS) throw new Error(`naive completed ${completed}`);
    },
  });

  Deno.bench({
    name: `validatePlan — ${shape}`,
    group: `validation, ${STEPS} steps / ${EDGES} edges`,
    n: 20,
    warmup: 3,
    fn() {
      const result = validatePlan(plan, tools);
      if (!result.ok) throw new Error(result.problems[0].message);
    },
  });
}
