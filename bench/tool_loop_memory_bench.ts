/**
 * Memory of a step with 1,000 tool calls, measured in a process of its own
 * (`bench/tool_loop_memory.ts`, started with `--expose-gc` so that the figures are after a full
 * collection) and printed before the timings; and the time of such a step when each result is
 * 10,000 characters, with the conversation's bound in force (the oldest results elided).
 */
import { z } from "zod";
import { completeWithTools } from "../src/engine/tool_loop.ts";
import type { ToolTurnBackend, ToolTurnRequest, ToolTurnResponse } from "../src/llm/tool_turn.ts";
import { ToolRegistry } from "../src/tools/registry.ts";

const script = new URL("./tool_loop_memory.ts", import.meta.url).pathname;
const measured = await new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", "--v8-flags=--expose-gc", script],
  stdout: "piped",
  stderr: "inherit",
}).output();
if (!measured.success) throw new Error(`${script} failed (exit ${measured.code}).`);
console.log("tool loop memory, 1,000 calls at the step's last turn:");
for (const line of new TextDecoder().decode(measured.stdout).trim().split("\n")) {
  console.log(`  ${line}`);
}

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

class InstantModel implements ToolTurnBackend {
  readonly name = "instant";
  made = 0;
  toolTurn(_request: ToolTurnRequest): Promise<ToolTurnResponse> {
    if (this.made >= CALLS) return Promise.resolve({ text: "done", toolCalls: [] });
    const n = Math.min(PER_TURN, CALLS - this.made);
    const toolCalls = Array.from({ length: n }, (_, i) => ({
      id: `c${this.made + i}`,
      name: "read",
      arguments: { value: i },
    }));
    this.made += n;
    return Promise.resolve({ text: "", toolCalls });
  }
}

const tools = new ToolRegistry().register({
  name: "read",
  description: "Answers 10,000 characters at once",
  inputSchema: z.object({ value: z.number() }).strict(),
  execute: (args) => output((args as { value: number }).value, 10_000),
});

Deno.bench("tool loop: 1,000 calls of 10,000-character results, conversation bounded", async () => {
  await completeWithTools(
    { kind: "step", agent: "bench", stepId: "s", iteration: 1, prompt: "Go.", cwd: "." },
    {
      backend: new InstantModel(),
      tools,
      offered: ["read"],
      policy: { mode: "bypassPermissions", allow: [], deny: [] },
    },
  );
});
