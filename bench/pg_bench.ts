/**
 * The PostgreSQL store and the workers, against the server in `STEPFLOW_BENCH_PG_URL` (or
 * `STEPFLOW_TEST_PG_URL`); without one this file skips with a note, so `deno task bench` runs on
 * any machine.
 *
 * - Per-iteration overhead: the gate-routed step of bench/store_bench.ts repeated 500 times with
 *   the PostgreSQL store (one commit per iteration: log entries + checkpoint in one statement) vs
 *   the in-memory store. Divide by 500 for the cost per iteration.
 * - Throughput: 200 short runs (the 6-step pipeline agent, zero-latency scripted backend) submitted
 *   to the queue and driven by 1, 2 and 4 worker processes (concurrency 2 each), from the first
 *   submission until the last run completed. Divide 200 by the time for runs per second.
 */
import { join } from "node:path";
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { MemoryRunStore } from "../src/store/memory.ts";
import { openPgConnection } from "../src/store/pg_connection.ts";
import { PostgresRunStore } from "../src/store/postgres.ts";
import type { RunStore } from "../src/store/types.ts";
import { openRunQueue } from "../src/worker/queue.ts";
import { submitRun } from "../src/worker/submit.ts";
import { seed004Files, seed004LoopBackend, writeAgent } from "../tests/flow/fixtures.ts";
import { pipelineFiles } from "../tests/store/helpers.ts";

const url = Deno.env.get("STEPFLOW_BENCH_PG_URL") || Deno.env.get("STEPFLOW_TEST_PG_URL");
const ITERATIONS = 500;
const RUNS = 200;
const WORKER_FIXTURE = new URL("../tests/worker/fixtures/crash_worker.ts", import.meta.url);
/** Worker processes still running (killed when the bench ends, however it ends). */
const LIVE = new Set<Deno.ChildProcess>();

if (!url) {
  console.log(
    "bench/pg_bench.ts: skipped — set STEPFLOW_BENCH_PG_URL=postgres://… to measure the PostgreSQL store and the workers.",
  );
} else {
  const root = await Deno.makeTempDir({ prefix: "stepflow-pg-bench-" });
  await writeAgent(root, "issue-solver", seed004Files());
  await writeAgent(root, "pipeline", pipelineFiles());
  const issueSolver = await loadAgentDefinition("issue-solver", { cwd: root });
  const pipeline = await loadAgentDefinition("pipeline", { cwd: root });
  const schema = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;

  const backend = () => seed004LoopBackend(ITERATIONS);
  const runOnce = async (store: RunStore) => {
    const result = await new StepFlowRunner(issueSolver, {
      backend: backend(),
      maxTotalIterations: ITERATIONS + 1,
      store,
    }).run({ args: { topic: "bench" } });
    if (result.iterations !== ITERATIONS) throw new Error(`bench run: ${result.completionReason}`);
  };

  Deno.bench({
    name: `runner: ${ITERATIONS} iterations, memory store`,
    group: "pg-iteration",
    baseline: true,
    n: 3,
    warmup: 1,
    async fn() {
      await runOnce(new MemoryRunStore());
    },
  });

  const store = new PostgresRunStore(url, { schema, agent: "issue-solver" });
  Deno.bench({
    name: `runner: ${ITERATIONS} iterations, PostgreSQL store (one commit per iteration)`,
    group: "pg-iteration",
    n: 3,
    warmup: 1,
    async fn() {
      await runOnce(store);
    },
  });

  let round = 0;
  for (const workers of [1, 2, 4]) {
    Deno.bench({
      name: `${RUNS} pipeline runs (6 iterations each), ${workers} worker process(es) × 2`,
      group: "pg-throughput",
      ...(workers === 1 ? { baseline: true } : {}),
      n: 1,
      warmup: 1,
      async fn(b) {
        // A fresh schema per round: each round measures its own 200 runs.
        const runSchema = `${schema}_r${++round}`;
        const runs = new PostgresRunStore(url, { schema: runSchema, agent: "pipeline" });
        await runs.list(); // migrate before the workers start
        const db = await openPgConnection(url, { schema: runSchema });
        const children = await Promise.all(
          Array.from({ length: workers }, () => spawnWorker(url, runSchema, join(root, ".agent"))),
        );
        const queue = await openRunQueue(url, { schema: runSchema });
        b.start();
        for (let i = 0; i < RUNS; i++) {
          await submitRun(runs, pipeline, { args: { topic: `t${i}` } }, { url, queue });
        }
        // A count, not list(): the poll must not compete with the workers for the CPU.
        for (;;) {
          const open = await db.query<{ open: number }>(
            `SELECT count(*)::integer AS open FROM ${db.schema}.runs WHERE status <> 'completed'`,
          );
          if (open.rows[0].open === 0) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        b.end();
        await queue.stop({ graceful: false });
        for (const child of children) {
          child.kill("SIGKILL");
          await child.status;
          LIVE.delete(child);
        }
        await db.close();
        await runs.close();
      },
    });
  }

  globalThis.addEventListener("unload", () => {
    for (const child of LIVE) {
      try {
        child.kill("SIGKILL");
      } catch {
        // gone
      }
    }
    try {
      Deno.removeSync(root, { recursive: true });
    } catch {
      // gone
    }
  });
}

async function spawnWorker(
  url: string,
  schema: string,
  agentRoot: string,
): Promise<Deno.ChildProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      WORKER_FIXTURE.pathname,
      url,
      schema,
      agentRoot,
      "/dev/null",
      "30000",
      "2",
      "0",
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  LIVE.add(child);
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("bench worker exited before it was ready");
    out += value;
  }
  reader.releaseLock();
  return child;
}
