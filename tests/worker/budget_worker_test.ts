/**
 * A budget given with `--submit` travels with the run to the worker that drives it (with the prices
 * read by the submitting process): the worker's run stops `budget_exceeded` at the budget plus one
 * call, and `--submit --wait` exits 5 as a run in this process would.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { closingAnswer, loopAnswer, looperFiles } from "../flow/budget_fixtures.ts";
import { runCli } from "../cli/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

Deno.test({
  name:
    "worker: --submit --budget-usd reaches the worker; the run stops budget_exceeded and --wait exits 5",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow_budget_worker_" });
    // A model only the submitting process has a price for (its --pricing file).
    await writeAgent(
      root,
      "looper",
      looperFiles({
        behavior: { completionType: "loop", model: "house-model" },
      }),
    );
    await Deno.writeTextFile(
      join(root, "prices.json"),
      JSON.stringify({ "house-model": { inputUsdPerMTok: 2.5, outputUsdPerMTok: 10 } }),
    );
    const script = {
      "work.loop": [
        ...Array.from({ length: 6 }, () => loopAnswer("repeat")),
        loopAnswer("complete"),
      ],
      "complete.loop": [closingAnswer],
    };
    const worker = await startWorker({
      store: db,
      agentRoot: join(root, ".agent"),
      pollMs: 100,
      backendFor: () => Promise.resolve(new ScriptedBackend(script)),
      log: () => {},
    });
    const store = new PostgresRunStore(db, { agent: "looper" });
    try {
      const waited = await runCli([
        "--agent",
        "looper",
        "--store",
        db,
        "--submit",
        "--wait",
        "--budget-usd",
        "1",
        "--pricing",
        "prices.json",
      ], { userDir: root });
      assert.equal(waited.code, 5, waited.stderr + waited.stdout);
      const [run] = await store.list();
      assert.equal(run.status, "budget_exceeded");
      const checkpoint = (await store.loadCheckpoint(run.runId))!;
      const state = checkpoint.state as {
        budget?: unknown;
        usage: { costUsd: number; calls: number };
      };
      assert.deepEqual(state.budget, { usd: 1 });
      // Three calls of $0.35: the third passes $1.00, no fourth.
      assert.equal(state.usage.calls, 3);
      assert.ok(Math.abs(state.usage.costUsd - 1.05) < 1e-9, String(state.usage.costUsd));
    } finally {
      await worker.stop();
      await store.close();
    }
  },
});
