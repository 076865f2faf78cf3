/**
 * Memory of a step with 1,000 tool calls (32 per turn, a zero-latency model, a tool that answers at
 * once): the heap the tool loop holds at the step's last turn, after a full garbage collection, and
 * the characters of tool results that turn carries. Run by `tool_loop_memory_bench.ts` (so by
 * `deno task bench`) in a process of its own started with `--expose-gc`; prints one JSON line per
 * case. Alone: `deno run -A --v8-flags=--expose-gc bench/tool_loop_memory.ts`.
 *
 * @module
 */
import { z } from "zod";
import { completeWithTools } from "../src/engine/tool_loop.ts";
import { ToolRegistry } from "../src/tools/registry.ts";
import { BENCH_REQUEST, BYPASS_POLICY, InstantModel, toolOutput } from "./tool_loop_fixtures.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Run with --v8-flags=--expose-gc: the figures need a full collection.");

function heapUsed(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

async function measure(resultChars: number, maxToolResultChars?: number) {
  const tools = new ToolRegistry().register({
    name: "tool",
    description: "Answers at once",
    inputSchema: z.object({ value: z.number() }).strict(),
    execute: (args) => toolOutput((args as { value: number }).value, resultChars),
  });
  let heldBytes = 0;
  let sentChars = 0;
  const baseline = heapUsed();
  const model = new InstantModel(1_000, 32, "tool", (request) => {
    heldBytes = heapUsed() - baseline;
    for (const m of request.messages) {
      if (m.role === "tool") { for (const r of m.results) sentChars += r.content.length; }
    }
  });
  await completeWithTools(BENCH_REQUEST, {
    backend: model,
    tools,
    offered: ["tool"],
    policy: BYPASS_POLICY,
    ...(maxToolResultChars !== undefined ? { maxToolResultChars } : {}),
  });
  return {
    calls: model.made,
    resultCharsPerCall: resultChars,
    bound: maxToolResultChars === Infinity ? "none" : "default (200,000 characters)",
    heldMiB: Number((heldBytes / 1024 / 1024).toFixed(2)),
    resultCharsSentInLastTurn: sentChars,
  };
}

for (
  const [chars, bound] of [[2, undefined], [10_000, undefined], [10_000, Infinity]] as const
) {
  console.log(JSON.stringify(await measure(chars, bound)));
}
