/**
 * The run page of a run the workers hold (PostgreSQL, a real throwaway server): a real `run-agent`
 * on the PostgreSQL store is SIGKILLed in its Bash call; its row is then made what a dead worker
 * leaves — a submitted run whose lease expired — and held with the resume's own refusal, as a
 * worker does (`markHeld`). The page shows the notice marked held; the plain Resume is refused;
 * the confirmed re-run hands the run back to the workers (`run-agent --resume RUN
 * --rerun-unfinished-call --submit`): the hold is cleared and the permission recorded.
 */
import assert from "node:assert/strict";
import { unfinishedCallError } from "../../src/flow/tool_call_resume.ts";
import type { PostgresRunStore } from "../../src/store/postgres.ts";
import { serveDashboard } from "../../src/ui/server.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { markHeld, submissionOf } from "../../src/worker/submissions.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";
import { killedInBash, SCRIPT_FILE } from "./killed_in_bash.ts";

Deno.test({
  name:
    "dashboard: a run the workers hold (killed in a Bash call) is handed back to them by the confirmed re-run",
  ignore: pg === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const url = await freshDatabase(pg!);
    const run = await killedInBash(url);
    const store = run.store as PostgresRunStore;
    const stores = await discoverStores(run.root, url);
    const ui = serveDashboard({
      source: { cwd: run.root, stores },
      port: 0,
      actions: { runAgentArgs: ["--script", SCRIPT_FILE] },
    });
    try {
      // What a worker that died in the call leaves: a submitted run, its lease expired.
      const { Client } = await import("pg");
      const client = new Client({ connectionString: url });
      await client.connect();
      await client.query(
        `UPDATE stepflow.runs SET request = '{"args":{"topic":"t"}}', agent_hash = 'h',
           lease_owner = NULL, lease_expires_at = NULL WHERE run_id = $1`,
        [run.runId],
      );
      await client.end();
      const log = await store.readLog(run.runId);
      const start = log.find((e) => e.type === "tool_call_start")!;
      const refusal = unfinishedCallError(run.runId, "code-improver", "s_b2c1", [
        {
          tool: "Bash",
          callId: String(start.callId),
          idempotent: false,
          startLine: log.indexOf(start),
        },
      ]);
      assert.ok(await markHeld(store, run.runId, refusal.message));

      const page = await (await fetch(`${ui.url}runs/${run.runId}`)).text();
      assert.match(page, /<div id="unfinished-call" class="notice warn" data-held="true">/);
      assert.match(page, /The workers hold this run/);
      assert.match(page, /Resume, re-running Bash echo done/);
      assert.match(
        page,
        /Run Bash echo done &gt;&gt; out\.txt &amp;&amp; sleep 1\.5 again on the workers\?/,
      );
      const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
      const post = async (action: string, body?: unknown) => {
        const res = await fetch(`${ui.url}runs/${run.runId}/${action}`, {
          method: "POST",
          headers: { "x-stepflow-csrf": secret },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        return { status: res.status, json: await res.json() };
      };
      const resume = await post("resume");
      assert.equal(resume.json.code, "TOOL_CALL_UNFINISHED");
      assert.match(resume.json.message, /was stopped \(killed or crashed\) in step "s_b2c1"/);
      const rerun = await post("rerun", { calls: [start.callId] });
      assert.equal(rerun.status, 202, rerun.json.message);
      assert.match(rerun.json.message, /handed back to the workers/);
      const submitted = await submissionOf(store, run.runId);
      assert.equal(submitted?.held, undefined, "the hold is cleared");
      // The permission covers the calls started before the hand-back (the log's length then).
      assert.deepEqual(
        submitted?.request.rerunUnfinishedCall,
        { beforeLine: (await store.readLog(run.runId)).length },
        "the permission is recorded",
      );
      assert.equal(await run.bashRuns(), 1, "nothing ran here: a worker re-runs the call");
    } finally {
      await ui.close();
      for (const s of stores) await (s.store as PostgresRunStore).close();
      await store.close();
      await Deno.remove(run.root, { recursive: true });
    }
  },
});
