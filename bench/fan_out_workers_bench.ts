/**
 * Fan-out steps on PostgreSQL workers, against the server in `STEPFLOW_BENCH_PG_URL` (or
 * `STEPFLOW_TEST_PG_URL`; without one this file skips with a note): a fan-out of 200 children
 * (a zero-latency model, `concurrency` 16) submitted to 1, 2 and 4 workers of 4 slots each,
 * started in this process. Measured from the submit to the parent's completion (the bench's time;
 * children per second printed), and printed per run: the time from the last child's end (its
 * `run_end` line) to the parent's pickup (its `run_resume` line) — the wake (LISTEN/NOTIFY) and a
 * worker taking the parent up. Target: under 200 ms.
 */
import { join } from "node:path";
import { PostgresRunStore } from "../src/store/postgres.ts";
import { startWorker } from "../src/worker/worker.ts";
import { submitRun } from "../src/worker/submit.ts";
import { fanOutsOf } from "../src/store/fan_out_lines.ts";
import { benchAgents, instantModel, items } from "./fan_out_fixtures.ts";

const url = Deno.env.get("STEPFLOW_BENCH_PG_URL") || Deno.env.get("STEPFLOW_TEST_PG_URL");
const CHILDREN = 200;

if (!url) {
  console.log(
    "bench/fan_out_workers_bench.ts: skipped — set STEPFLOW_BENCH_PG_URL=postgres://… to measure fan-outs on workers.",
  );
} else {
  const root = await Deno.makeTempDir({ prefix: "stepflow-fanout-workers-bench-" });
  const { fan } = await benchAgents(root, 16);
  for (const workers of [1, 2, 4]) {
    Deno.bench({
      name: `${CHILDREN} children on ${workers} worker${workers === 1 ? "" : "s"} (4 slots each)`,
      group: "fan-out on workers",
      baseline: workers === 1,
      n: 3,
      warmup: 0,
      async fn(b) {
        const schema = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
        const store = new PostgresRunStore(url, { schema, agent: "fan", onWarning: () => {} });
        await store.list();
        const running = await Promise.all(
          Array.from({ length: workers }, (_, i) =>
            startWorker({
              store: url,
              schema,
              agentRoot: join(root, ".agent"),
              concurrency: 4,
              pollMs: 2_000,
              owner: `bench-w${i}`,
              log: () => {},
              backendFor: () => Promise.resolve(instantModel()),
            })),
        );
        try {
          b.start();
          const runId = await submitRun(store, fan, { args: { items: items(CHILDREN) } }, {
            url,
            schema,
          });
          for (;;) {
            const status = (await store.loadCheckpoint(runId).catch(() => undefined))?.status;
            if (status === "completed") break;
            if (status !== undefined && status !== "running") throw new Error(`run ${status}`);
            await new Promise((r) => setTimeout(r, 10));
          }
          b.end();
          await report(store, runId, workers);
        } finally {
          for (const w of running) await w.stop();
          await store.close();
        }
      },
    });
  }
}

/** Prints the run's throughput and the time from its last child's end to its pickup. */
async function report(store: PostgresRunStore, runId: string, workers: number): Promise<void> {
  const log = await store.readLog(runId);
  const started = Date.parse(String(log[0].ts));
  const ended = Date.parse(String(log.findLast((e) => e.type === "run_end")?.ts));
  const [fanOut] = fanOutsOf(log);
  let lastChildEnd = 0;
  for (const item of fanOut.items.values()) {
    const childLog = await store.readLog(item.children[0].childRunId);
    const end = Date.parse(String(childLog.findLast((e) => e.type === "run_end")?.ts));
    lastChildEnd = Math.max(lastChildEnd, end);
  }
  const pickup = log.filter((e) => e.type === "run_resume")
    .map((e) => Date.parse(String(e.ts)))
    .find((t) => t >= lastChildEnd);
  console.log(
    `  ${workers} worker(s): ${CHILDREN} children in ${ended - started} ms (${
      (CHILDREN / ((ended - started) / 1000)).toFixed(0)
    } children/s); last child's end → parent's pickup ${
      pickup === undefined ? "?" : `${pickup - lastChildEnd} ms`
    }`,
  );
}
