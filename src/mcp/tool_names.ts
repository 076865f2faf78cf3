/**
 * The names of MCP tools in the one tool registry, `mcp__<server>__<tool>`: making them, reading
 * the server back out of one, and explaining a name that names nothing — an unconfigured server or
 * a tool the server does not have — with the closest valid name. Free of the MCP SDK, so that plan
 * and script validation can use it without loading the client.
 *
 * @module
 */
import { closestMatch } from "../definition/suggest.ts";

/** The prefix of every MCP tool name. */
export const MCP_TOOL_PREFIX = "mcp__";

/** The registry name of a server's tool. */
export function mcpToolName(server: string, tool: string): string {
  return `${MCP_TOOL_PREFIX}${server}__${tool}`;
}

/**
 * The server and tool of an MCP tool name, or `undefined` when `name` does not start with `mcp__`.
 * Server names hold no `__`, so the first `__` after the prefix ends the server's name; `tool` is
 * `""` when there is none (`mcp__files` names a server, not a tool).
 *
 * @example
 * ```ts
 * import { parseMcpToolName } from "./tool_names.ts";
 * parseMcpToolName("mcp__files__read_text_file"); // { server: "files", tool: "read_text_file" }
 * parseMcpToolName("read_file"); // undefined
 * ```
 */
export function parseMcpToolName(name: string): { server: string; tool: string } | undefined {
  if (!name.startsWith(MCP_TOOL_PREFIX)) return undefined;
  const rest = name.slice(MCP_TOOL_PREFIX.length);
  const cut = rest.indexOf("__");
  return cut < 0
    ? { server: rest, tool: "" }
    : { server: rest.slice(0, cut), tool: rest.slice(cut + 2) };
}

/**
 * The servers `names` use (those of the `mcp__<server>__<tool>` names that are among
 * `configured`), in first-use order, each once.
 */
export function mcpServersUsed(
  names: Iterable<string>,
  configured: Iterable<string>,
): string[] {
  const known = new Set(configured);
  const used = new Set<string>();
  for (const name of names) {
    const parsed = parseMcpToolName(name);
    if (parsed && known.has(parsed.server)) used.add(parsed.server);
  }
  return [...used];
}

/**
 * Why the MCP tool `name` is not in a registry holding `registered`, as one sentence with the
 * closest valid name when there is one; `undefined` when `name` is not an MCP tool name.
 * `configured` lists the MCP servers the user configured (`undefined`: none are).
 *
 * @example
 * ```ts
 * import { unknownMcpToolMessage } from "./tool_names.ts";
 * unknownMcpToolMessage("mcp__evrything__echo", ["mcp__everything__echo"], ["everything"]);
 * // 'no MCP server "evrything" is configured (configured: everything). Did you mean "mcp__everything__echo"?'
 * ```
 */
export function unknownMcpToolMessage(
  name: string,
  registered: readonly string[],
  configured: readonly string[] | undefined,
): string | undefined {
  const parsed = parseMcpToolName(name);
  if (!parsed) return undefined;
  const { server, tool } = parsed;
  const servers = configured ?? [];
  if (!servers.includes(server)) {
    if (servers.length === 0) {
      return `no MCP server is configured; configure "${server}" (run-plan, qplan: --mcp-config FILE, a .mcp.json whose "mcpServers" has "${server}").`;
    }
    const guess = closestMatch(server, servers);
    const meant = guess === undefined ? "" : ` Did you mean "${mcpToolName(guess, tool)}"?`;
    return `no MCP server "${server}" is configured (configured: ${servers.join(", ")}).${meant}`;
  }
  const prefix = mcpToolName(server, "");
  const own = registered.filter((r) => r.startsWith(prefix));
  if (tool === "") {
    return `"${name}" names the MCP server "${server}", not one of its tools: write ${prefix}<tool> (its tools: ${
      listOf(own)
    }).`;
  }
  const guess = closestMatch(name, own);
  const meant = guess === undefined ? "" : ` Did you mean "${guess}"?`;
  return `the MCP server "${server}" has no tool "${tool}".${meant} Its tools: ${listOf(own)}.`;
}

/** At most 12 names, then how many more. */
function listOf(names: readonly string[]): string {
  if (names.length === 0) return "(none)";
  const shown = names.slice(0, 12).join(", ");
  return names.length > 12 ? `${shown}, … (${names.length - 12} more)` : shown;
}

/**
 * The MCP servers a registry knows: those `declared` for it and those with a registered tool
 * among `registered`, sorted.
 */
export function configuredMcpServers(
  registered: Iterable<string>,
  declared: Iterable<string> = [],
): string[] {
  const servers = new Set(declared);
  for (const name of registered) {
    const parsed = parseMcpToolName(name);
    if (parsed && parsed.tool !== "") servers.add(parsed.server);
  }
  return [...servers].sort();
}
