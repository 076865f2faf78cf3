/**
 * The tool loop's own work, which must stay negligible next to a model call and a tool:
 * - overhead per tool call with a zero-latency model and a no-op tool (target ≤ 50 µs per call):
 *   1,000 calls, 32 per turn, divided by 1,000;
 * - one round trip to server-everything's `echo` over stdio (a real MCP server from npm).
 */
import { z } from "zod";
import { completeWithTools } from "../src/engine/tool_loop.ts";
import type { ToolTurnBackend, ToolTurnRequest, ToolTurnResponse } from "../src/llm/tool_turn.ts";
import { McpConnection } from "../src/mcp/connection.ts";
import { ToolRegistry } from "../src/tools/registry.ts";
import { serverCommand } from "../tests/mcp/npm_servers.ts";

const CALLS = 1_000;
const PER_TURN = 32;

/** A model that answers at once: `PER_TURN` no-op calls per turn until `CALLS`, then the answer. */
class InstantModel implements ToolTurnBackend {
  readonly name = "instant";
  made = 0;
  toolTurn(_request: ToolTurnRequest): Promise<ToolTurnResponse> {
    if (this.made >= CALLS) return Promise.resolve({ text: "done", toolCalls: [] });
    const n = Math.min(PER_TURN, CALLS - this.made);
    const toolCalls = Array.from({ length: n }, (_, i) => ({
      id: `c${this.made + i}`,
      name: "noop",
      arguments: { value: i },
    }));
    this.made += n;
    return Promise.resolve({ text: "", toolCalls });
  }
}

const tools = new ToolRegistry().register({
  name: "noop",
  description: "Does nothing",
  inputSchema: z.object({ value: z.number() }).strict(),
  execute: () => "ok",
});
// The no-op tool is no agent tool a rule could name: run it in bypassPermissions mode (the decision
// is still made for every call).
const policy = { mode: "bypassPermissions" as const, allow: [], deny: [] };
const request = {
  kind: "step" as const,
  agent: "bench",
  stepId: "s",
  iteration: 1,
  prompt: "Go.",
  cwd: ".",
};

Deno.bench(
  `tool loop: ${CALLS} no-op calls with a zero-latency model (÷${CALLS} = per call)`,
  async () => {
    await completeWithTools(request, {
      backend: new InstantModel(),
      tools,
      offered: ["noop"],
      policy,
      maxToolTurns: CALLS,
    });
  },
);

const echo = await McpConnection.connect("everything", {
  command: await serverCommand("mcp-server-everything"),
});
globalThis.addEventListener("unload", () => {
  // The server leaves with its input closed when this process ends; close it explicitly too.
  void echo.close();
});

Deno.bench("MCP: one echo round trip to server-everything over stdio", async () => {
  await echo.callTool("echo", { message: "ping" });
});
