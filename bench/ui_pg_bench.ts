/**
 * The dashboard's runs list over 10,000 runs in the PostgreSQL store (target ≤ 300 ms server
 * time), against the server in `STEPFLOW_BENCH_PG_URL` (or `STEPFLOW_TEST_PG_URL`); without one
 * this file skips with a note.
 *
 * - the first page and a filtered deep page through the handler (filter, count, order and page in
 *   one SQL query: `PostgresRunStore.listPage`);
 * - for comparison, what the page cost before the store paged itself: `list()` of every run (every
 *   checkpoint sent and parsed), then filtered and sliced here;
 * - a run's listing line by id (`summary`), what a run page and an action look up.
 *
 * The runs are written straight into the tables (a checkpoint with a 12-entry history and handoff,
 * as the runner writes them) in batches, so the setup takes seconds.
 */
import { PostgresRunStore } from "../src/store/postgres.ts";
import { dashboardHandler } from "../src/ui/server.ts";

const url = Deno.env.get("STEPFLOW_BENCH_PG_URL") || Deno.env.get("STEPFLOW_TEST_PG_URL");
const RUNS = 10_000;

if (!url) {
  console.log(
    "bench/ui_pg_bench.ts: skipped — set STEPFLOW_BENCH_PG_URL=postgres://… to measure the dashboard over the PostgreSQL store.",
  );
} else {
  const name = `bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const { Client } = await import("pg");
  const admin = new Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const db = new URL(url);
  db.pathname = `/${name}`;
  const store = new PostgresRunStore(db.toString(), { onWarning: () => {} });
  await store.listPage({ limit: 0 }); // creates the tables
  const client = new Client({ connectionString: db.toString() });
  await client.connect();
  const statuses = ["completed", "completed", "completed", "failed", "aborted"];
  for (let from = 0; from < RUNS; from += 1000) {
    const ids: string[] = [];
    const agents: string[] = [];
    const states: string[] = [];
    const starts: string[] = [];
    const checkpoints: string[] = [];
    for (let i = from; i < from + 1000; i++) {
      const runId = `20260101T${String(i).padStart(6, "0")}Z-bench`;
      const startedAt = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
      const agent = i % 3 === 0 ? "other-agent" : "bench-agent";
      const status = statuses[i % statuses.length];
      const history = Array.from({ length: 12 }, (_, k) => ({
        stepId: `step.${k % 4}`,
        iteration: k + 1,
        attempt: 1,
        intent: "next",
        transition: "next",
        nextStepId: `step.${(k + 1) % 4}`,
        startedAt,
        durationMs: 900,
      }));
      ids.push(runId);
      agents.push(agent);
      states.push(status);
      starts.push(startedAt);
      checkpoints.push(JSON.stringify({
        version: 1,
        runId,
        agent,
        status,
        startedAt,
        updatedAt: new Date(Date.parse(startedAt) + 11_000).toISOString(),
        logEntries: 14,
        state: {
          iteration: 12,
          historyLength: 12,
          history,
          handoff: { "step.0": { summary: "x".repeat(400) } },
          usage: { inputTokens: 12_000, outputTokens: 3_100, costUsd: 0.05 },
          end: { reason: "completed", stepId: "step.3" },
        },
      }));
    }
    await client.query(
      `INSERT INTO stepflow.runs (run_id, agent, status, started_at, updated_at, log_entries, checkpoint)
       SELECT id, a, s, t, t, 14, c::json
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(id, a, s, t, c)`,
      [ids, agents, states, starts, checkpoints],
    );
  }
  await client.query("ANALYZE stepflow.runs");
  await client.end();

  const handler = dashboardHandler({
    source: { cwd: Deno.cwd(), stores: [{ name: "pg", store, runAgentStore: db.toString() }] },
  });
  const request = (query: string) => new Request(`http://127.0.0.1/${query}`);

  Deno.bench("pg runs list, 10,000 runs: first page", async () => {
    const res = await handler(request(""));
    if (!(await res.text()).includes("10000 of 10000 runs")) throw new Error("wrong page");
  });

  Deno.bench("pg runs list, 10,000 runs: agent + status filter, page 40", async () => {
    const res = await handler(request("?agent=bench-agent&status=completed&page=40"));
    if (!(await res.text()).includes("page 40 / ")) throw new Error("wrong page");
  });

  Deno.bench(
    "pg runs list, 10,000 runs: before — list() every run, filter and page here",
    async () => {
      const all = await store.list();
      const matching = all.filter((r) => r.agent === "bench-agent" && r.status === "completed");
      if (matching.slice(39 * 50, 40 * 50).length !== 50) throw new Error("wrong page");
    },
  );

  Deno.bench("pg run lookup by id (run page, actions)", async () => {
    if (!(await store.summary("20260101T004999Z-bench"))) throw new Error("not found");
  });

  globalThis.addEventListener("unload", () => {
    // Best effort: the bench database is dropped by the next cluster reset otherwise.
    void store.close();
  });
}
