/**
 * What durable tool calls cost: a step with 50 tool calls run by the real runner over the file
 * store (`fsync` mode), with a scripted zero-latency model. A call of a tool that is not idempotent
 * (Write) is made durable before it acts and once it ended — two flushes — while one of an
 * idempotent tool (Read) only appends its lines. Over the memory store (no flush at all) the same
 * runs give the floor: (file − memory) ÷ 50 is the recording's cost per call.
 *
 * The disk is shared with other work: compare the figures of one run.
 */
import { join } from "node:path";
import { loadAgentDefinition } from "../src/definition/load.ts";
import { StepFlowRunner } from "../src/flow/runner.ts";
import { ScriptedBackend, type ScriptedEntry } from "../src/llm/scripted.ts";
import { FileRunStore } from "../src/store/file.ts";
import { MemoryRunStore } from "../src/store/memory.ts";
import type { RunStore } from "../src/store/types.ts";
import { seed001Files, writeAgent } from "../tests/flow/fixtures.ts";

const CALLS = 50;
// Deno.bench awaits only an `async` fn: each fn below is one.
const root = await Deno.makeTempDir({ prefix: "stepflow-durable-calls-bench-" });
const files = seed001Files();
Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
  allowedTools: ["Read", "Write"],
  permissionMode: "bypassPermissions",
});
await writeAgent(root, "code-improver", files);
await Deno.writeTextFile(join(root, "note.txt"), "note\n");
const definition = await loadAgentDefinition("code-improver", { cwd: root });
const ok = { output: { result: "ok", message: "fine" } };

function backend(tool: "Read" | "Write"): ScriptedBackend {
  const args = tool === "Read"
    ? { file_path: "note.txt" }
    : { file_path: "out.txt", content: "x\n" };
  const turns: ScriptedEntry[] = Array.from({ length: CALLS }, () => ({
    toolCalls: [{ name: tool, arguments: args }],
  }));
  return new ScriptedBackend({
    s_a8f3: ["plan"],
    "s_a8f3#check": [ok],
    s_b2c1: [...turns, "done"],
    "s_b2c1#check": [ok],
    s_c9d4: ["done"],
    "s_c9d4#check": [ok],
  });
}

async function run(
  b: Deno.BenchContext,
  tool: "Read" | "Write",
  store: () => RunStore,
): Promise<void> {
  const runner = new StepFlowRunner(definition, { backend: backend(tool), store: store() });
  b.start();
  const result = await runner.run({ args: { topic: "t" }, cwd: root });
  b.end();
  if (!result.success) throw new Error(JSON.stringify(result.error));
}

const fileStore = () => new FileRunStore(join(root, "runs"));
const memoryStore = () => new MemoryRunStore();

for (const tool of ["Write", "Read"] as const) {
  const what = tool === "Write" ? "not idempotent: 2 flushes per call" : "idempotent: no flush";
  Deno.bench({
    name: `${CALLS} ${tool} calls (${what}), file store`,
    group: tool,
    n: 10,
    warmup: 1,
    async fn(b) {
      await run(b, tool, fileStore);
    },
  });
  Deno.bench({
    name: `${CALLS} ${tool} calls, memory store (the floor)`,
    group: tool,
    baseline: true,
    n: 10,
    warmup: 1,
    async fn(b) {
      await run(b, tool, memoryStore);
    },
  });
}
