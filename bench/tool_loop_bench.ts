/**
 * The tool loop's own work, which must stay negligible next to a model call and a tool:
 * - overhead per tool call with a zero-latency model and a no-op tool (target ≤ 50 µs per call):
 *   1,000 calls, 32 per turn, divided by 1,000;
 * - one round trip to server-everything's `echo` over stdio (a real MCP server from npm): stepflow's
 *   client (`McpConnection`) against the official SDK's `Client` with its own stdio transport
 *   (the baseline), and that SDK client with its server started in a session of its own
 *   (`setsid`, as stepflow's transport started every server before its supervisor made a process
 *   group of its own in the run's session instead) — on a loaded Linux machine the kernel schedules
 *   each session as a group of its own, which alone moves a round trip by up to 2×, one way or
 *   the other depending on where the load is.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
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

const everything = await serverCommand("mcp-server-everything");
const echo = await McpConnection.connect("everything", { command: everything });

/** The official client over its own stdio transport, started as `command args`. */
async function sdkClient(command: string, args: string[]): Promise<Client> {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(new StdioClientTransport({ command, args, stderr: "pipe" }));
  return client;
}
const sdk = await sdkClient(everything, []);
const setsid = await new Deno.Command("setsid", { args: ["--version"], stdout: "null" }).output()
  .then((o) => o.success, () => false);
const sdkOwnSession = setsid ? await sdkClient("setsid", [everything]) : undefined;
globalThis.addEventListener("unload", () => {
  // The servers leave with their input closed when this process ends; close them explicitly too.
  void echo.close();
  void sdk.close();
  void sdkOwnSession?.close();
});

Deno.bench({
  name: "MCP: echo round trip, the official SDK client (its stdio transport)",
  group: "MCP echo",
  baseline: true,
  async fn() {
    await sdk.callTool({ name: "echo", arguments: { message: "ping" } });
  },
});
Deno.bench({
  name: "MCP: echo round trip, stepflow's client (McpConnection)",
  group: "MCP echo",
  async fn() {
    await echo.callTool("echo", { message: "ping" });
  },
});
if (sdkOwnSession) {
  Deno.bench({
    name: "MCP: echo round trip, the official SDK client, its server in a session of its own",
    group: "MCP echo",
    async fn() {
      await sdkOwnSession.callTool({ name: "echo", arguments: { message: "ping" } });
    },
  });
}
