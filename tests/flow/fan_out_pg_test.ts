/**
 * A fan-out on PostgreSQL, in one process: its children are runs of their agent in the same
 * database, its log lines and mark carry it across drives (three waiting children answered through
 * other connections, in any order), and it ends with one child per item.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { freshSchema, pg } from "../store/pg_server.ts";
import { fleetResponder, writeFleetAgents } from "./fan_out_fixtures.ts";

Deno.test({
  name:
    "fan-out on PostgreSQL: waiting children answered through other connections; one child per item",
  ignore: pg === undefined,
  async fn() {
    const root = await Deno.makeTempDir();
    await writeFleetAgents(root, { concurrency: 2 }, "confirm");
    const definition = await loadAgentDefinition("fleet", { cwd: root });
    const schema = freshSchema();
    const stores: PostgresRunStore[] = [];
    const store = () => {
      const s = new PostgresRunStore(pg!.url, { schema, agent: "fleet" });
      stores.push(s);
      return s;
    };
    const files = ["a.ts", "b.ts", "c.ts"];
    const backend = () => new ScriptedBackend(fleetResponder({ files }));
    try {
      const first = await new StepFlowRunner(definition, { backend: backend(), store: store() })
        .run();
      assert.equal(first.completionReason, "waiting", JSON.stringify(first.error));
      assert.equal(first.waits?.length, 3);
      const answers = await Promise.allSettled(
        [2, 0, 1].map((i) =>
          new StepFlowRunner(definition, { backend: backend(), store: store() }).answer(
            first.runId,
            { decision: "next" },
            { requestId: first.waits![i].requestId },
          )
        ),
      );
      assert.deepEqual(
        answers.map((a) => a.status === "rejected" ? String(a.reason) : "fulfilled"),
        ["fulfilled", "fulfilled", "fulfilled"],
      );
      const reader = store();
      let status = (await reader.loadCheckpoint(first.runId))?.status;
      for (let i = 0; i < 100 && status !== "completed"; i++) {
        await new Promise((r) => setTimeout(r, 50));
        status = (await reader.loadCheckpoint(first.runId))?.status;
      }
      assert.equal(status, "completed");
      const [fanOut] = fanOutsOf(await reader.readLog(first.runId));
      assert.equal(fanOut.items.size, 3);
      for (const item of fanOut.items.values()) {
        assert.equal(item.children.length, 1);
        const child = (await reader.loadCheckpoint(item.children[0].childRunId))!;
        assert.equal(child.agent, "reviewer");
        assert.equal(child.status, "completed");
      }
    } finally {
      for (const s of stores) await s.close();
    }
  },
});
