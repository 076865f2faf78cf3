/**
 * The file store's default `fsync` mode against the floor it cannot beat: one `write` +
 * `fdatasync` per iteration, measured in the same run on the same disk. Both do 200 rounds; the
 * runner's figure includes its own per-iteration work (prompt, validation, gate, events), so the
 * ratio is an upper bound of the store's flush overhead (target ≤ 1.3× of one flush).
 *
 * The run directory is a fresh temp folder (set TMPDIR to measure another disk).
 */
import { join } from "node:path";
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { ScriptedBackend } from "../src/llm/scripted.ts";
import { FileRunStore } from "../src/store/file.ts";
import { seed004Files, writeAgent } from "../tests/flow/fixtures.ts";

const ROUNDS = 200;
const root = await Deno.makeTempDir({ prefix: "stepflow-flush-bench-" });
await writeAgent(root, "issue-solver", seed004Files());
const definition = await loadAgentDefinition("issue-solver", { cwd: root });
/** A log line about the size of a step_end entry. */
const LINE = new TextEncoder().encode(`${JSON.stringify({ pad: "x".repeat(400) })}\n`);

function backend() {
  let n = 0;
  const repeat = {
    text: "",
    structuredOutput: { stepId: "initial.issue", next_action: { action: "repeat" } },
    usage: { inputTokens: 10, outputTokens: 2 },
  };
  const complete = {
    text: "",
    structuredOutput: { stepId: "initial.issue", next_action: { action: "complete" } },
  };
  const closing = { text: "", structuredOutput: { stepId: "complete.issue", summary: "done" } };
  return new ScriptedBackend((req) => {
    if (req.stepId === "complete.issue") return closing;
    return ++n < ROUNDS - 1 ? repeat : complete;
  });
}

Deno.bench({
  name: `bare write + fdatasync, ${ROUNDS.toLocaleString("en")} rounds (one flush per round)`,
  group: "flush",
  baseline: true,
  n: 3,
  warmup: 1,
  fn(b) {
    const path = join(root, `bare-${crypto.randomUUID()}.jsonl`);
    const file = Deno.openSync(path, { append: true, create: true });
    b.start();
    for (let i = 0; i < ROUNDS; i++) {
      let off = 0;
      while (off < LINE.length) off += file.writeSync(LINE.subarray(off));
      file.syncDataSync();
    }
    b.end();
    file.close();
    Deno.removeSync(path);
  },
});

Deno.bench({
  name: `runner + file store (fsync), ${ROUNDS.toLocaleString("en")} iterations`,
  group: "flush",
  n: 3,
  warmup: 1,
  async fn(b) {
    const dir = await Deno.makeTempDir({ dir: root, prefix: "runs-" });
    const store = new FileRunStore(dir, { durability: "fsync" });
    b.start();
    const result = await new StepFlowRunner(definition, {
      backend: backend(),
      maxTotalIterations: ROUNDS + 1,
      store,
    }).run({ args: { topic: "bench" } });
    b.end();
    if (!result.success || result.iterations !== ROUNDS) {
      throw new Error(`bench run failed: ${result.completionReason} after ${result.iterations}`);
    }
    await Deno.remove(dir, { recursive: true });
  },
});
