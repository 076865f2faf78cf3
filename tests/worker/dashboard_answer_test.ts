/**
 * The dashboard's answer form on a run submitted to the workers (PostgreSQL): the answer goes
 * through the real `run-agent --answer` (with the dashboard's own backend flags, ignored there),
 * is recorded once as given by `dashboard`, and the worker — not the dashboard's child — continues
 * the run to its end.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { submitRun } from "../../src/worker/submit.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { startDashboard } from "../ui/browser.ts";
import { waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

const SCRIPT = {
  "draft.release": [{ output: { plan: "tag, build, publish", next_action: { action: "next" } } }],
  "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
};

Deno.test({
  name: "dashboard: the answer to a submitted run is recorded once and a worker continues the run",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow-ui-worker-answer-" });
    await writeAgent(root, "release", releaseFiles());
    await Deno.writeTextFile(join(root, "release.script.json"), JSON.stringify(SCRIPT));
    const lines: string[] = [];
    const worker = await startWorker({
      store: db,
      agentRoot: join(root, ".agent"),
      pollMs: 100,
      log: (line) => void lines.push(line),
      backendFor: () =>
        Promise.resolve(
          new ScriptedBackend(SCRIPT as ConstructorParameters<typeof ScriptedBackend>[0]),
        ),
    });
    const store = new PostgresRunStore(db, { agent: "release" });
    const children: Deno.ChildProcess[] = [];
    const shown: PostgresRunStore[] = [];
    try {
      const definition = await loadAgentDefinition("release", { cwd: root });
      const runId = await submitRun(store, definition, { args: { version: "7" } }, { url: db });
      await waitFor(
        "the run to wait",
        async () => (await store.loadCheckpoint(runId))?.status === "waiting" ? true : undefined,
      );
      const requestId = ((await store.loadCheckpoint(runId))!.state.waiting as {
        requestId: string;
      }).requestId;
      const stores = await discoverStores(root, db);
      shown.push(...stores.map((s) => s.store as PostgresRunStore));
      await using ui = await startDashboard(root, {
        stores,
        actions: {
          runAgentArgs: ["--script", "release.script.json"],
          onSpawn: (c) => void children.push(c),
        },
      });
      const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
      const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
      const res = await fetch(`${ui.url}runs/${runId}/answer`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-stepflow-csrf": secret,
          origin: new URL(ui.url).origin,
        },
        body: JSON.stringify({ requestId, value: { decision: "next", note: "from the web" } }),
      });
      const text = await res.text();
      assert.ok(res.status === 202 || res.status === 200, text);
      assert.equal((await children.at(-1)!.status).code, 0);
      await waitFor(
        "the worker to complete the answered run",
        () => Promise.resolve(lines.find((l) => l.includes(`run ${runId}: completed`))),
      );
      assert.ok(
        lines.some((l) => l.includes(`run ${runId} (release): resuming`)),
        lines.join("\n"),
      );
      const answers = (await store.readLog(runId)).filter((e) => e.type === "input_answer");
      assert.equal(answers.length, 1);
      assert.equal(answers[0].answeredBy, "dashboard");
      assert.equal((await store.loadCheckpoint(runId))?.status, "completed");
    } finally {
      await Promise.all(children.map((c) => c.status));
      await worker.stop();
      await store.close();
      for (const s of shown) await s.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});
