/**
 * A large handoff value is stored once — in the `step_end` line of the step that handed it off —
 * and every checkpoint refers to that line: the run files hold it once however many iterations
 * follow, later prompts still see it, and a run killed after any of its commits resumes to the
 * same state and history as an uninterrupted one.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { HANDOFF_BY_REFERENCE_CHARS } from "../../src/flow/checkpoint.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { HistoryEntry } from "../../src/flow/types.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { historyFromLog } from "../../src/store/format.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import type { RunStore } from "../../src/store/types.ts";
import { DyingStore } from "./dying_store.ts";
import { seed004Files, writeAgent } from "./fixtures.ts";

/** A value over the threshold, with a marker to count in the run files. */
const BIG = `<<big-value>>${"x".repeat(HANDOFF_BY_REFERENCE_CHARS * 2)}`;
/** An object value over the threshold too (its JSON is what counts). */
const BIG_OBJECT = {
  rows: Array.from({ length: 400 }, (_, i) => `<<row>> ${i} ${"y".repeat(60)}`),
};

async function agent(root: string, promptUsesValue: boolean) {
  const files = seed004Files();
  // Later steps may read the value through {handoff.issue}: a resumed run must still see it (the
  // log records every prompt as sent, so such a prompt holds the value again by design).
  files.prompts["steps/continuation/issue/f_default.md"] = promptUsesValue
    ? "Continue (iteration {iteration}) with {handoff.issue}"
    : "Continue (iteration {iteration}).";
  await writeAgent(root, "issue-solver", files);
  return await loadAgentDefinition("issue-solver", { cwd: root });
}

/**
 * initial (hands off BIG and BIG_OBJECT) → continuation until iteration 5 → complete. Answers
 * depend on the prompt only, so a resumed run gets the answers the uninterrupted one got.
 */
function backend(prompts: string[] = []) {
  return new ScriptedBackend((req) => {
    prompts.push(req.prompt);
    if (req.stepId === "complete.issue") {
      return { text: "", structuredOutput: { stepId: "complete.issue", summary: "done" } };
    }
    if (req.stepId === "initial.issue") {
      return {
        text: "",
        structuredOutput: {
          stepId: "initial.issue",
          issue: BIG,
          analysis: { understanding: BIG_OBJECT, approach: "small" },
          next_action: { action: "next" },
        },
      };
    }
    const iteration = Number(/iteration (\d+)/.exec(req.prompt)![1]);
    return {
      text: "",
      structuredOutput: {
        stepId: "continuation.issue",
        progress: { completed_files: [`f${iteration}`], pending_tasks: [] },
        next_action: { action: iteration < 5 ? "repeat" : "complete" },
      },
    };
  });
}

function count(text: string, marker: string): number {
  return text.split(marker).length - 1;
}

function timeless(history: readonly HistoryEntry[]): unknown[] {
  return history.map(({ startedAt: _s, durationMs: _d, ...rest }) => rest);
}

Deno.test("a large handoff value (a string, an object) is stored once beside the answer it came from", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-large-handoff-" });
  try {
    const definition = await agent(root, false);
    const dir = join(root, "runs");
    const prompts: string[] = [];
    const result = await new StepFlowRunner(definition, {
      backend: backend(prompts),
      store: new FileRunStore(dir),
    }).run({ args: { topic: "t" } });
    assert.equal(result.completionReason, "completed");
    let files = "";
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile) files += await Deno.readTextFile(join(dir, entry.name));
    }
    // Twice, never more: once as the handoff (what resume reads) and once inside the model's
    // answer as it was recorded (what a replay file gives back; docs/durable-runs.md).
    assert.equal(count(files, "<<big-value>>"), 2, "the string value: the handoff and the answer");
    assert.equal(count(files, "<<row>> 7 "), 2, "the object value: the handoff and the answer");
    assert.equal(prompts.filter((p) => p.startsWith("Continue")).length, 4);
    // The final state holds the values themselves.
    assert.deepEqual(result.state.handoff["initial.issue"].understanding, BIG_OBJECT);

    // Resumed from the files (a new store object reads the log back): still the value itself.
    const checkpoint = (await new FileRunStore(dir).loadCheckpoint(result.runId))!;
    assert.equal(checkpoint.version, 2);
    assert.equal((checkpoint.state.latestHandoff as Record<string, unknown>).issue, null);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a run with a large handoff killed after any commit resumes to the uninterrupted state", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-large-handoff-crash-" });
  try {
    const definition = await agent(root, true);
    const runWith = (store: RunStore, prompts?: string[]) =>
      new StepFlowRunner(definition, { backend: backend(prompts), store });
    const uninterrupted = new DyingStore(new MemoryRunStore());
    const reference = await runWith(uninterrupted).run({ args: { topic: "t" } });
    assert.equal(reference.completionReason, "completed");
    for (let dieAfter = 1; dieAfter <= uninterrupted.commits; dieAfter++) {
      const committed = new MemoryRunStore();
      const runId = `run-${dieAfter}`;
      await assert.rejects(
        runWith(new DyingStore(committed, dieAfter)).run({ runId, args: { topic: "t" } }),
        new RegExp(`killed after commit ${dieAfter}`),
      );
      const left = (await committed.loadCheckpoint(runId))!;
      if (left.status === "running") {
        const prompts: string[] = [];
        const resumed = await runWith(new DyingStore(committed), prompts).run({ resume: runId });
        assert.equal(resumed.completionReason, "completed", `commit ${dieAfter}`);
        for (const p of prompts.filter((p) => p.startsWith("Continue"))) {
          assert.ok(p.includes(BIG), `commit ${dieAfter}: a resumed prompt lost {handoff.issue}`);
        }
        assert.deepEqual(resumed.state.handoff, reference.state.handoff, `commit ${dieAfter}`);
      }
      const log = await committed.readLog(runId);
      const final = (await committed.loadCheckpoint(runId))!;
      assert.equal(final.status, "completed");
      const history = historyFromLog(log, final.state.historyLength as number);
      assert.deepEqual(
        timeless(history as HistoryEntry[]),
        timeless(reference.state.history),
        `commit ${dieAfter}`,
      );
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
