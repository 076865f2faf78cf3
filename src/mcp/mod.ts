/**
 * stepflow's MCP client, on the official TypeScript SDK: the `mcpServers` configuration in Claude
 * Code's shape, servers started once per run (stdio, in a process group of their own) or reached
 * over streamable HTTP, their tools in the one tool registry as `mcp__<server>__<tool>`, connect and
 * call timeouts, and nothing left running after `close()`.
 *
 * Import it lazily (`await import(…)`), only when an agent has servers: the SDK is not loaded
 * otherwise.
 *
 * @module
 */
export {
  MCP_SERVER_NAME,
  type McpHttpServerConfig,
  type McpServerConfig,
  type McpStdioServerConfig,
  type ParsedMcpServers,
  parseMcpServers,
  parseMcpServersOrThrow,
} from "../definition/mcp_servers.ts";
export {
  MCP_CALL_TIMEOUT_MS,
  MCP_CONNECT_TIMEOUT_MS,
  type McpCallOptions,
  type McpCallResult,
  McpConnection,
  type McpConnectOptions,
  type McpContent,
  type McpToolInfo,
} from "./connection.ts";
export { connectMcpServers, McpServers, type McpServerSummary } from "./servers.ts";
export { mcpNeedsApproval, resultText } from "./tools.ts";
export { mcpToolName, parseMcpToolName } from "./tool_names.ts";
