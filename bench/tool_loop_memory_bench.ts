/**
 * Memory of a step with 1,000 tool calls, measured in a process of its own
 * (`bench/tool_loop_memory.ts`, started with `--expose-gc` so that the figures are after a full
 * collection) and printed before the timings; and the time of such a step when each result is
 * 10,000 characters, with the conversation's bound in force (the oldest results elided).
 */
import { z } from "zod";
import { completeWithTools } from "../src/engine/tool_loop.ts";
import { ToolRegistry } from "../src/tools/registry.ts";
import { BENCH_REQUEST, BYPASS_POLICY, InstantModel, toolOutput } from "./tool_loop_fixtures.ts";

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

const tools = new ToolRegistry().register({
  name: "read",
  description: "Answers 10,000 characters at once",
  inputSchema: z.object({ value: z.number() }).strict(),
  execute: (args) => toolOutput((args as { value: number }).value, 10_000),
});

Deno.bench("tool loop: 1,000 calls of 10,000-character results, conversation bounded", async () => {
  await completeWithTools(BENCH_REQUEST, {
    backend: new InstantModel(1_000, 32, "read"),
    tools,
    offered: ["read"],
    policy: BYPASS_POLICY,
  });
});
