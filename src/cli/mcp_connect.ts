/**
 * `run-agent --validate --connect`: starts (or reaches) each MCP server of agent.json
 * `behavior.mcpServers`, lists its tools, and closes it again — so a server that cannot start is
 * found before a run needs it. The MCP client is imported only here, only when there are servers.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import { loadMcpClient } from "../flow/run_mcp_servers.ts";
import { type Palette, palette } from "../palette.ts";

/** What connecting to one server found. */
export type McpConnectReport =
  | { name: string; ok: true; tools: string[]; skipped: string[] }
  | { name: string; ok: false; error: { code: string; message: string } };

/**
 * Connects to every server of `configured` in parallel (each on its own, so one that fails does
 * not hide what the others offer), lists its tools and closes it.
 *
 * @throws StepflowError `MCP_CONFIG_INVALID` when the configuration does not parse (an unset
 *   `${VAR}`, …): no server is started then
 */
export async function connectEachMcpServer(
  configured: Record<string, unknown>,
  env: Record<string, string | undefined>,
  cwd: string,
): Promise<McpConnectReport[]> {
  const mcp = await loadMcpClient();
  const configs = mcp.parseMcpServersOrThrow(configured, env, "behavior.mcpServers");
  return await Promise.all([...configs].map(async ([name, config]) => {
    try {
      const servers = await mcp.connectMcpServers(new Map([[name, config]]), { cwd });
      try {
        const [summary] = servers.servers;
        return { name, ok: true as const, tools: summary.tools, skipped: summary.skipped };
      } finally {
        await servers.close();
      }
    } catch (error) {
      const code = error instanceof StepflowError ? error.code : "MCP_CONNECT_FAILED";
      return { name, ok: false as const, error: { code, message: errorMessage(error) } };
    }
  }));
}

/**
 * The report's lines: per server `✓ name: N tools` and the tool names, or `✗ name: CODE message`.
 *
 * @example
 * ```ts
 * import { formatMcpConnectReport } from "./mcp_connect.ts";
 * console.log(formatMcpConnectReport([
 *   { name: "files", ok: true, tools: ["mcp__files__read_file"], skipped: [] },
 * ]));
 * ```
 */
export function formatMcpConnectReport(
  reports: readonly McpConnectReport[],
  color = false,
): string {
  const c: Palette = palette(color);
  const lines = [`MCP servers (${reports.length}):`];
  for (const r of reports) {
    if (!r.ok) {
      lines.push(
        c.red(`  ✗ ${r.name}: ${r.error.code}: ${r.error.message.replace(/\n/g, "\n    ")}`),
      );
      continue;
    }
    lines.push(c.green(`  ✓ ${r.name}: ${r.tools.length} tool${r.tools.length === 1 ? "" : "s"}`));
    for (const tool of r.tools) lines.push(`      ${tool}`);
    for (const skipped of r.skipped) lines.push(c.yellow(`      skipped: ${skipped}`));
  }
  return lines.join("\n");
}
