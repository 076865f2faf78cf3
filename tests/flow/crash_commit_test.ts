/**
 * A process killed right after any commit of a run: what it committed is either a resumable run or
 * an ended one whose log holds its `run_end`, and resuming yields the uninterrupted history, ended
 * exactly once. The store keeps the `RunStore` contract the PostgreSQL store implements literally:
 * appended entries are durable only once the next checkpoint is saved.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { HistoryEntry } from "../../src/flow/types.ts";
import { ScriptedBackend, type ScriptedScript } from "../../src/llm/scripted.ts";
import { historyFromLog } from "../../src/store/format.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import type { RunStore } from "../../src/store/types.ts";
import { DyingStore } from "./dying_store.ts";
import { pipelineFiles, pipelineScript } from "../store/helpers.ts";
import { writeAgent } from "./fixtures.ts";

function timeless(history: readonly HistoryEntry[]): unknown[] {
  return history.map(({ startedAt: _s, durationMs: _d, ...rest }) => rest);
}

Deno.test("a kill after any commit leaves a run that resumes to one run_end and the full history", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-crash-commit-" });
  try {
    await writeAgent(root, "pipeline", pipelineFiles());
    const definition = await loadAgentDefinition(join(root, ".agent", "pipeline"));
    const backend = () => new ScriptedBackend(pipelineScript() as ScriptedScript);
    const runWith = (store: RunStore) =>
      new StepFlowRunner(definition, { backend: backend(), store });

    const uninterrupted = new DyingStore(new MemoryRunStore());
    const reference = await runWith(uninterrupted).run({ args: { topic: "t" }, cwd: root });
    assert.equal(reference.completionReason, "completed");
    const expected = timeless(reference.state.history);

    for (let dieAfter = 1; dieAfter <= uninterrupted.commits; dieAfter++) {
      const committed = new MemoryRunStore();
      const runId = `run-${dieAfter}`;
      await assert.rejects(
        runWith(new DyingStore(committed, dieAfter)).run({
          runId,
          args: { topic: "t" },
          cwd: root,
        }),
        new RegExp(`killed after commit ${dieAfter}`),
      );
      const left = (await committed.loadCheckpoint(runId))!;
      const leftLog = await committed.readLog(runId);
      if (left.status !== "running") {
        assert.equal(left.status, "completed", `commit ${dieAfter}`);
        assert.ok(
          leftLog.some((e) => e.type === "run_end"),
          `commit ${dieAfter} recorded the run as completed without its run_end: nothing resumes it`,
        );
      } else {
        const resumed = await runWith(new DyingStore(committed)).run({ resume: runId, cwd: root });
        assert.equal(resumed.completionReason, "completed", `commit ${dieAfter}`);
      }
      const log = await committed.readLog(runId);
      const count = (type: string) => log.filter((e) => e.type === type).length;
      assert.equal(count("run_start"), 1, `commit ${dieAfter}: run_start entries`);
      assert.equal(count("run_end"), 1, `commit ${dieAfter}: run_end entries`);
      assert.equal((await committed.loadCheckpoint(runId))!.status, "completed");
      const final = (await committed.loadCheckpoint(runId))!;
      const history = historyFromLog(log, final.state.historyLength as number);
      assert.deepEqual(timeless(history as HistoryEntry[]), expected, `commit ${dieAfter}`);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
