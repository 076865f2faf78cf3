/**
 * An MCP configuration file in Claude Code's `.mcp.json` shape — `{ "mcpServers": { name: { command,
 * args?, env? } | { type: "http", url, headers? } } }` — as `run-plan --mcp-config` and
 * `qplan … --mcp-config` read it. The servers are checked by the same rules as agent.json
 * `behavior.mcpServers` (one parser, `src/definition/mcp_servers.ts`), `${VAR}` taken from the
 * environment. Free of the MCP SDK: reading the file starts nothing.
 *
 * @module
 */
import { closestMatch } from "../definition/suggest.ts";
import { type McpServerConfig, parseMcpServers } from "../definition/mcp_servers.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { readTextFileOr } from "../read_text_file.ts";

/** Files larger than this are refused before parsing (a configuration is a few kilobytes). */
export const MCP_CONFIG_MAX_BYTES = 1_048_576;

/**
 * The servers of an `.mcp.json`-shaped text, `${VAR}` expanded from `env`; every problem at once.
 * `source` names the file in messages.
 *
 * @throws StepflowError `MCP_CONFIG_INVALID`: not JSON, no `mcpServers` object, another top-level
 *   key, or a server entry with problems (each on its own line)
 * @example
 * ```ts
 * import { parseMcpConfigText } from "./config_file.ts";
 * const servers = parseMcpConfigText(
 *   '{ "mcpServers": { "files": { "command": "mcp-server-filesystem", "args": ["${HOME}"] } } }',
 *   { HOME: "/home/me" },
 *   ".mcp.json",
 * );
 * console.log(servers.get("files")); // { command: "mcp-server-filesystem", args: ["/home/me"] }
 * ```
 */
export function parseMcpConfigText(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  source: string,
): Map<string, McpServerConfig> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw invalid(source, [`it is not JSON (${errorMessage(error)})`]);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw invalid(source, [SHAPE]);
  }
  const problems: string[] = [];
  for (const key of Object.keys(data)) {
    if (key === "mcpServers") continue;
    const guess = closestMatch(key, ["mcpServers"]);
    problems.push(
      `unknown key ${JSON.stringify(key)}${
        guess ? ` (did you mean "${guess}"?)` : ""
      }: the file holds only "mcpServers"`,
    );
  }
  const servers = (data as Record<string, unknown>).mcpServers;
  if (!Object.hasOwn(data, "mcpServers")) problems.push(`"mcpServers" is missing; ${SHAPE}`);
  else {
    const parsed = parseMcpServers(servers, env);
    problems.push(...parsed.problems);
    if (problems.length === 0) return parsed.servers;
  }
  throw invalid(source, problems);
}

/**
 * Reads and parses an MCP configuration file (see {@linkcode parseMcpConfigText}).
 *
 * @throws StepflowError `MCP_CONFIG_INVALID`, also when the file cannot be read or is over 1 MiB
 */
export async function readMcpConfigFile(
  file: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Map<string, McpServerConfig>> {
  const size = await Deno.stat(file).then((s) => s.size, () => 0);
  if (size > MCP_CONFIG_MAX_BYTES) {
    throw invalid(file, [`it is ${size} bytes; an MCP configuration is at most 1 MiB`]);
  }
  const text = await readTextFileOr(
    file,
    "MCP_CONFIG_INVALID",
    "the MCP configuration",
    ` (a JSON file: { "mcpServers": { "name": { "command": "…" } } })`,
  );
  return parseMcpConfigText(text, env, file);
}

const SHAPE =
  'write { "mcpServers": { "name": { "command": "…", "args": […] } } } (Claude Code\'s .mcp.json)';

function invalid(source: string, problems: string[]): StepflowError {
  return new StepflowError(
    "MCP_CONFIG_INVALID",
    `Invalid MCP server configuration (${source}):\n- ${problems.join("\n- ")}`,
    { details: { source, problems } },
  );
}
