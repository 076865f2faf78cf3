/**
 * A run that hands off one 10 MB value and goes on for 5 more iterations, with the file store
 * (durability "fsync"): the time of the whole run, and — printed once — the bytes its run files
 * take. A handoff value of at least 16 KiB is stored once, in the `step_end` line of the step that
 * handed it off; checkpoints refer to that line (src/flow/checkpoint.ts). Before, every checkpoint
 * line of the log, the checkpoint file and each later checkpoint repeated it twice (per step and as
 * the latest value of its key).
 */
import { join } from "node:path";
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { ScriptedBackend } from "../src/llm/scripted.ts";
import { FileRunStore } from "../src/store/file.ts";
import { seed004Files, writeAgent } from "../tests/flow/fixtures.ts";

const VALUE_BYTES = 10 * 1024 * 1024;
const LATER_ITERATIONS = 5;
const root = await Deno.makeTempDir({ prefix: "stepflow-handoff-bench-" });
await writeAgent(root, "issue-solver", seed004Files());
const definition = await loadAgentDefinition("issue-solver", { cwd: root });
const big = "x".repeat(VALUE_BYTES);

function backend(): ScriptedBackend {
  let n = 0;
  return new ScriptedBackend((req) => {
    if (req.stepId === "complete.issue") {
      return { text: "", structuredOutput: { stepId: "complete.issue", summary: "done" } };
    }
    if (req.stepId === "initial.issue") {
      return {
        text: "",
        structuredOutput: { stepId: "initial.issue", issue: big, next_action: { action: "next" } },
      };
    }
    n++;
    return {
      text: "",
      structuredOutput: {
        stepId: "continuation.issue",
        progress: { completed_files: [`f${n}`] },
        next_action: { action: n < LATER_ITERATIONS ? "repeat" : "complete" },
      },
    };
  });
}

async function runFilesBytes(dir: string): Promise<number> {
  let total = 0;
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile) total += (await Deno.stat(join(dir, entry.name))).size;
  }
  return total;
}

let reported = false;
Deno.bench({
  name: `runner: a 10 MB handoff value, then ${LATER_ITERATIONS} iterations, file store`,
  group: "handoff",
  n: 3,
  warmup: 1,
  async fn(b) {
    const dir = await Deno.makeTempDir({ dir: root, prefix: "runs-" });
    b.start();
    const result = await new StepFlowRunner(definition, {
      backend: backend(),
      store: new FileRunStore(dir),
    }).run({ args: { topic: "bench" } });
    b.end();
    if (result.completionReason !== "completed") throw new Error(result.completionReason);
    if (!reported) {
      reported = true;
      const bytes = await runFilesBytes(dir);
      console.log(`run files: ${(bytes / 1e6).toFixed(1)} MB for a ${VALUE_BYTES / 1e6} MB value`);
    }
    await Deno.remove(dir, { recursive: true });
  },
});
