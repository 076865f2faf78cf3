/**
 * QPlan `each` side by side with the reference interpreter (QPlan v0.6.3): the same script, run
 * from its text (tokenize, parse, validate, run), summing numbers with `math add` — target: stepflow
 * ≥ 3× the reference on both forms at 100k and 1M iterations.
 *
 * - **literal**: the list is written in the script (`var [0, 1, …] -> nums`), so reading the
 *   script is part of the work;
 * - **params**: the list comes in as a param (`@params "nums"`), so the loop is the work.
 *
 * The reference is not a dependency of the project: build it in a scratch folder and point
 * `STEPFLOW_QPLAN_REFERENCE` at it (default `/work/scratch/qplan-ref`):
 *
 * ```sh
 * # a checkout of the qplan-lang/qplan repository at its v0.6.3 release, in /work/scratch/qplan-ref
 * cd /work/scratch/qplan-ref && npm install && npx tsc   # builds dist/
 * deno bench -A bench/qplan_reference_bench.ts
 * ```
 *
 * Without the build only stepflow's side runs (a line on stderr says so). Each group's baseline
 * is the reference; `deno bench` prints stepflow's speed-up beside it.
 *
 * @module
 */
import { createQPlanRegistry, runScript } from "../src/qplan/mod.ts";

const REFERENCE_DIR = Deno.env.get("STEPFLOW_QPLAN_REFERENCE") ?? "/work/scratch/qplan-ref";

/** The reference's entry point: runs a script and resolves to its context. */
type RunQplan = (
  script: string,
  options?: { params?: Record<string, unknown> },
) => Promise<{ get(name: string): unknown }>;

async function loadReference(): Promise<RunQplan | undefined> {
  const entry = `${REFERENCE_DIR}/dist/index.js`;
  try {
    await Deno.stat(entry);
  } catch {
    console.error(
      `qplan_reference_bench: no reference build at ${entry}; only stepflow's side runs (see the module documentation)`,
    );
    return undefined;
  }
  const module = await import(`file://${entry}`);
  return module.runQplan as RunQplan;
}

const runQplan = await loadReference();
const registry = createQPlanRegistry({ print: () => {} });
const LOOP = "var 0 -> total\neach n in nums {\n  math add a=total b=n -> total\n}\n";

for (const size of [100_000, 1_000_000]) {
  const nums = Array.from({ length: size }, (_, i) => i % 100);
  const expected = nums.reduce((sum, n) => sum + n, 0);
  const label = size === 100_000 ? "100k" : "1M";
  const forms = {
    literal: { script: `var [${nums.join(", ")}] -> nums\n${LOOP}`, params: undefined },
    params: { script: `@params "nums"\n${LOOP}`, params: { nums } },
  };
  for (const [form, { script, params }] of Object.entries(forms)) {
    const group = `${form} ${label}`;
    const n = size === 100_000 ? 20 : 5;
    if (runQplan) {
      Deno.bench({
        name: `reference v0.6.3: each, ${form} list of ${label}`,
        group,
        baseline: true,
        n,
        warmup: 2,
        async fn() {
          const ctx = await runQplan(script, params ? { params } : {});
          if (ctx.get("total") !== expected) throw new Error(`reference: ${ctx.get("total")}`);
        },
      });
    }
    Deno.bench({
      name: `stepflow: each, ${form} list of ${label}`,
      group,
      n,
      warmup: 2,
      async fn() {
        const result = await runScript(script, { registry, ...(params ? { params } : {}) });
        if (result.status !== "completed" || result.vars.total !== expected) {
          throw new Error(`stepflow: ${result.status} ${result.error?.message}`);
        }
      },
    });
  }
}
