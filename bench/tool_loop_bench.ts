/**
 * The tool loop's own work, which must stay negligible next to a model call and a tool:
 * - overhead per tool call with a zero-latency model and a no-op tool (target ≤ 50 µs per call):
 *   1,000 calls, 32 per turn, divided by 1,000;
 * - one round trip to server-everything's `echo` over stdio (a real MCP server from npm).
 */
import { z } from "zod";
import { completeWithTools } from "../src/engine/tool_loop.ts";
import { McpConnection } from "../src/mcp/connection.ts";
import { ToolRegistry } from "../src/tools/registry.ts";
import { serverCommand } from "../tests/mcp/npm_servers.ts";
import { BENCH_REQUEST, BYPASS_POLICY, InstantModel } from "./tool_loop_fixtures.ts";

const CALLS = 1_000;
const PER_TURN = 32;

const tools = new ToolRegistry().register({
  name: "noop",
  description: "Does nothing",
  inputSchema: z.object({ value: z.number() }).strict(),
  execute: () => "ok",
});
Deno.bench(
  `tool loop: ${CALLS} no-op calls with a zero-latency model (÷${CALLS} = per call)`,
  async () => {
    await completeWithTools(BENCH_REQUEST, {
      backend: new InstantModel(CALLS, PER_TURN, "noop"),
      tools,
      offered: ["noop"],
      // The no-op tool is no agent tool a rule could name: bypassPermissions (the decision is
      // still made for every call).
      policy: BYPASS_POLICY,
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
