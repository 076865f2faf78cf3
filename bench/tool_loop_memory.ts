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
import type { ToolTurnBackend, ToolTurnRequest, ToolTurnResponse } from "../src/llm/tool_turn.ts";
import { ToolRegistry } from "../src/tools/registry.ts";

const CALLS = 1_000;

/**
 * A tool's output as tools make it: decoded from bytes, so a flat string of its own (a string
 * built with `padEnd` or `repeat` shares its pieces and would weigh almost nothing).
 */
function output(value: number, chars: number): string {
  const bytes = new Uint8Array(chars).fill(0x78);
  bytes.set(new TextEncoder().encode(String(value)).subarray(0, chars));
  return new TextDecoder().decode(bytes);
}
const PER_TURN = 32;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Run with --v8-flags=--expose-gc: the figures need a full collection.");

function heapUsed(): number {
  gc!();
  gc!();
  return Deno.memoryUsage().heapUsed;
}

/** Calls the tool until `CALLS`, then measures what the loop holds at the final turn. */
class MeasuringModel implements ToolTurnBackend {
  readonly name = "measuring";
  made = 0;
  heldBytes = 0;
  resultChars = 0;
  constructor(readonly baseline: number) {}
  toolTurn(request: ToolTurnRequest): Promise<ToolTurnResponse> {
    if (this.made >= CALLS) {
      this.heldBytes = heapUsed() - this.baseline;
      this.resultChars = request.messages.reduce(
        (sum, m) =>
          sum + (m.role === "tool" ? m.results.reduce((s, r) => s + r.content.length, 0) : 0),
        0,
      );
      return Promise.resolve({ text: "done", toolCalls: [] });
    }
    const n = Math.min(PER_TURN, CALLS - this.made);
    const toolCalls = Array.from({ length: n }, (_, i) => ({
      id: `c${this.made + i}`,
      name: "tool",
      arguments: { value: i },
    }));
    this.made += n;
    return Promise.resolve({ text: "", toolCalls });
  }
}

async function measure(resultChars: number, maxToolResultChars?: number) {
  const tools = new ToolRegistry().register({
    name: "tool",
    description: "Answers at once",
    inputSchema: z.object({ value: z.number() }).strict(),
    execute: (args) => output((args as { value: number }).value, resultChars),
  });
  const model = new MeasuringModel(heapUsed());
  await completeWithTools(
    { kind: "step", agent: "bench", stepId: "s", iteration: 1, prompt: "Go.", cwd: "." },
    {
      backend: model,
      tools,
      offered: ["tool"],
      policy: { mode: "bypassPermissions", allow: [], deny: [] },
      ...(maxToolResultChars !== undefined ? { maxToolResultChars } : {}),
    },
  );
  return {
    calls: model.made,
    resultCharsPerCall: resultChars,
    bound: maxToolResultChars === Infinity ? "none" : "default (200,000 characters)",
    heldMiB: Number((model.heldBytes / 1024 / 1024).toFixed(2)),
    resultCharsSentInLastTurn: model.resultChars,
  };
}

for (
  const [chars, bound] of [[2, undefined], [10_000, undefined], [10_000, Infinity]] as const
) {
  console.log(JSON.stringify(await measure(chars, bound)));
}
