/**
 * The MCP servers of a run: each started (or reached) once, in parallel, its tools registered in
 * the one tool registry as `mcp__<server>__<tool>`, and all closed together at the run's end — no
 * process left behind.
 *
 * @module
 */
import { createSchemaCompiler } from "../definition/schema_compiler.ts";
import { StepflowError } from "../errors.ts";
import type { ToolRegistry } from "../tools/registry.ts";
import type { AnyTool } from "../tools/types.ts";
import type { McpServerConfig } from "../definition/mcp_servers.ts";
import { McpConnection, type McpConnectOptions } from "./connection.ts";
import { toRegistryTool } from "./tools.ts";

/** One server's tools, as connected. */
export interface McpServerSummary {
  /** The server's name. */
  name: string;
  /** Registry names of its tools. */
  tools: string[];
  /** Tools not offered, with the reason. */
  skipped: string[];
}

/** Live MCP servers and their tools. Create with {@linkcode connectMcpServers}; always `close()`. */
export class McpServers {
  readonly #connections: McpConnection[];
  /** Every tool of every server, named `mcp__<server>__<tool>`. */
  readonly tools: readonly AnyTool[];
  /** Per server: its tools and what was skipped. */
  readonly servers: readonly McpServerSummary[];

  /** Wraps connected servers (see {@linkcode connectMcpServers}). */
  constructor(connections: McpConnection[], tools: AnyTool[], servers: McpServerSummary[]) {
    this.#connections = connections;
    this.tools = tools;
    this.servers = servers;
  }

  /** Adds every server tool to `registry` (a name already taken is an error). */
  registerIn(registry: ToolRegistry): ToolRegistry {
    for (const tool of this.tools) registry.register(tool);
    return registry;
  }

  /** Process ids of the stdio servers, for checks. */
  pids(): number[] {
    return this.#connections.map((c) => c.pid).filter((pid): pid is number => pid !== undefined);
  }

  /** Closes every server (stdio servers are stopped with their whole process group). */
  async close(): Promise<void> {
    await Promise.all(this.#connections.map((c) => c.close()));
  }

  /** `await using servers = await connectMcpServers(…)` closes them at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/**
 * Starts or reaches every server in parallel and lists their tools. When one fails, the others are
 * closed and the error names every server that failed.
 *
 * @example
 * ```ts ignore
 * import { connectMcpServers } from "./servers.ts";
 * import { ToolRegistry } from "../tools/registry.ts";
 * const servers = await connectMcpServers(
 *   new Map([["everything", { command: "mcp-server-everything" }]]),
 *   { connectTimeoutMs: 10_000 },
 * );
 * try {
 *   const registry = servers.registerIn(new ToolRegistry());
 *   console.log(await registry.invoke("mcp__everything__echo", { message: "hi" }, {
 *     workspaceRoot: ".",
 *   }));
 * } finally {
 *   await servers.close();
 * }
 * ```
 */
export async function connectMcpServers(
  configs: ReadonlyMap<string, McpServerConfig>,
  options: McpConnectOptions = {},
): Promise<McpServers> {
  const names = [...configs.keys()];
  const settled = await Promise.allSettled(names.map(async (name) => {
    const connection = await McpConnection.connect(name, configs.get(name)!, options);
    try {
      return { connection, infos: await connection.listTools() };
    } catch (error) {
      await connection.close();
      throw error;
    }
  }));
  const failures = settled.flatMap((s) => s.status === "rejected" ? [s.reason] : []);
  const connected = settled.flatMap((s) => s.status === "fulfilled" ? [s.value] : []);
  if (failures.length) {
    await Promise.all(connected.map((c) => c.connection.close()));
    if (failures.length === 1) throw failures[0];
    throw new StepflowError(
      "MCP_CONNECT_FAILED",
      failures.map((f) => f instanceof Error ? f.message : String(f)).join("\n"),
      { details: { failed: failures.length } },
    );
  }
  const compiler = createSchemaCompiler();
  const tools: AnyTool[] = [];
  const servers: McpServerSummary[] = [];
  for (const { connection, infos } of connected) {
    const summary: McpServerSummary = { name: connection.name, tools: [], skipped: [] };
    for (const info of infos) {
      const made = toRegistryTool(connection, info, compiler);
      if ("skipped" in made) summary.skipped.push(made.skipped);
      else {
        tools.push(made.tool);
        summary.tools.push(made.tool.name);
      }
    }
    servers.push(summary);
  }
  return new McpServers(connected.map((c) => c.connection), tools, servers);
}
