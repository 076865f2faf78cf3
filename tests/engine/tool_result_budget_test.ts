/**
 * The bound of a step's tool conversation: old tool results are elided in batches once the results
 * held pass the budget, the latest turn's never, and the prefix stays the same bytes in between.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { completeWithTools } from "../../src/engine/tool_loop.ts";
import { elidedNote } from "../../src/engine/tool_result_budget.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import type { ToolTurnMessage } from "../../src/llm/tool_turn.ts";
import { ToolRegistry } from "../../src/tools/registry.ts";

const tools = new ToolRegistry().register({
  name: "big",
  description: "Returns `size` characters",
  inputSchema: z.object({ size: z.number() }).strict(),
  execute: (args) => "x".repeat((args as { size: number }).size),
});
const policy = { mode: "bypassPermissions" as const, allow: [], deny: [] };
const request = {
  kind: "step" as const,
  agent: "t",
  stepId: "s",
  iteration: 1,
  prompt: "Go.",
  cwd: ".",
};

function results(messages: ToolTurnMessage[]): string[] {
  return messages.flatMap((m) => m.role === "tool" ? m.results.map((r) => r.content) : []);
}

function run(turns: number, size: number, maxToolResultChars?: number) {
  const call = { toolCalls: [{ name: "big", arguments: { size } }] };
  const backend = new ScriptedBackend({
    s: [...Array.from({ length: turns }, () => call), "done"],
  });
  return {
    backend,
    done: completeWithTools(request, {
      backend,
      tools,
      offered: ["big"],
      policy,
      maxToolTurns: turns + 1,
      ...(maxToolResultChars !== undefined ? { maxToolResultChars } : {}),
    }),
  };
}

Deno.test("old tool results are elided oldest first, in a batch down to half the budget", async () => {
  const { backend, done } = run(6, 1_000, 3_000);
  assert.equal((await done).text, "done");
  const sent = backend.toolTurns.map((t) => results(t.messages));
  // Turns 2–3 hold 1,000 and 2,000 characters; the 4th result makes 4,000 > 3,000: the oldest
  // three go, down to ≤ 1,500 (the latest is kept).
  assert.deepEqual(sent[3].map((r) => r.length), [1_000, 1_000, 1_000]);
  const note = elidedNote("big", 1_000);
  assert.deepEqual(sent[4], [note, note, note, "x".repeat(1_000)]);
  // Nothing changes in the prefix until the budget is passed again (1,390 + 1,000 ≤ 3,000) …
  assert.deepEqual(sent[5].slice(0, 4), sent[4]);
  // … then the next batch goes: 3,390 > 3,000, down towards 1,500, the latest kept.
  assert.deepEqual(sent[6], [...Array(5).fill(note), "x".repeat(1_000)]);
});

Deno.test("the latest turn's results are never elided, whatever their size", async () => {
  const { backend, done } = run(2, 10_000, 3_000);
  await done;
  const last = results(backend.toolTurns[2].messages);
  assert.deepEqual(last, [elidedNote("big", 10_000), "x".repeat(10_000)]);
});

Deno.test("results shorter than their note are kept; Infinity turns the bound off", async () => {
  const small = run(5, 10, 20);
  await small.done;
  assert.deepEqual(results(small.backend.toolTurns[5].messages), Array(5).fill("x".repeat(10)));
  const unbounded = run(5, 100_000, Infinity);
  await unbounded.done;
  assert.equal(results(unbounded.backend.toolTurns[5].messages).join("").length, 500_000);
});

Deno.test("by default a step holds at most 200,000 characters of tool results", async () => {
  const { backend, done } = run(12, 30_000);
  await done;
  for (const turn of backend.toolTurns) {
    const held = results(turn.messages).join("").length;
    assert.ok(held <= 200_000 + 30_000, `held ${held}`);
  }
  assert.ok(results(backend.toolTurns[12].messages).some((r) => r.startsWith("[elided: ")));
});
