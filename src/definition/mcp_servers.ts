/**
 * The `mcpServers` configuration, in Claude Code's shape:
 * `{ name: { command, args?, env? } | { type: "http", url, headers? } }`, with `${VAR}` and
 * `${VAR:-default}` taken from the environment. Parsed once, every problem collected: at load time
 * without the environment (shape only), when servers start with it. Here, at the bottom layer,
 * because the loader checks it; the MCP client (`src/mcp`) uses it.
 *
 * @module
 */
import { z } from "zod";
import { StepflowError } from "../errors.ts";

/** A server started as a process and spoken to over its standard input and output. */
export interface McpStdioServerConfig {
  /** `"stdio"` (the default when `command` is given). */
  type?: "stdio";
  /** The executable. */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Extra environment variables (added to stepflow's own environment). */
  env?: Record<string, string>;
}

/** A server reached over streamable HTTP. */
export interface McpHttpServerConfig {
  /** `"http"`. */
  type: "http";
  /** The server's MCP endpoint. */
  url: string;
  /** Extra request headers (an `Authorization` token, …). */
  headers?: Record<string, string>;
}

/** One server's configuration. */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** Server names: letters, digits, `-` and `_`, without `__` (tools are `mcp__<server>__<tool>`). */
export const MCP_SERVER_NAME: RegExp = /^(?!.*__)[A-Za-z0-9_-]{1,64}$/;

const StringMap = z.record(z.string(), z.string());
const StdioSchema = z.object({
  type: z.literal("stdio").optional(),
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: StringMap.optional(),
}).strict();
const HttpSchema = z.object({
  type: z.literal("http"),
  url: z.string().min(1),
  headers: StringMap.optional(),
}).strict();

/** What {@linkcode parseMcpServers} found: the servers, ready to start, and every problem. */
export interface ParsedMcpServers {
  /** Name → configuration with `${VAR}` expanded. */
  servers: Map<string, McpServerConfig>;
  /** Problems, one line each, naming the server and field. */
  problems: string[];
}

/**
 * Checks an `mcpServers` object and expands `${VAR}` / `${VAR:-default}` from `env`. A variable
 * that is unset and has no default is a problem (a server started without its token fails later,
 * less clearly). Without `env` (the loader: the environment of the run is not known yet) only the
 * shape is checked and variables are left as written.
 *
 * @example
 * ```ts
 * import { parseMcpServers } from "./mcp_servers.ts";
 * const { servers, problems } = parseMcpServers({
 *   files: { command: "mcp-server-filesystem", args: ["${HOME}"] },
 *   remote: { type: "http", url: "http://127.0.0.1:3001/mcp" },
 * }, { HOME: "/home/me" });
 * console.log(servers.get("files"), problems); // { command: "mcp-server-filesystem", args: ["/home/me"] } []
 * ```
 */
export function parseMcpServers(
  value: unknown,
  env: Readonly<Record<string, string | undefined>> | undefined,
): ParsedMcpServers {
  const servers = new Map<string, McpServerConfig>();
  const problems: string[] = [];
  if (value === undefined) return { servers, problems };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { servers, problems: ["mcpServers must be an object: { name: { command, … } }"] };
  }
  for (const name of Object.keys(value)) {
    const raw = (value as Record<string, unknown>)[name];
    if (!MCP_SERVER_NAME.test(name)) {
      problems.push(
        `mcpServers: the name ${
          JSON.stringify(name)
        } must be 1–64 letters, digits, "-" or "_", without "__" (its tools are mcp__<name>__<tool>)`,
      );
      continue;
    }
    const where = `mcpServers.${name}`;
    const isHttp = typeof raw === "object" && raw !== null && "type" in raw;
    const type = isHttp ? (raw as { type: unknown }).type : undefined;
    if (type === "sse") {
      problems.push(`${where}: type "sse" is not supported; use type "http" (streamable HTTP)`);
      continue;
    }
    const schema = type === "http" ? HttpSchema : StdioSchema;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const at = issue.path.length ? `.${issue.path.join(".")}` : "";
        problems.push(`${where}${at}: ${issue.message}${hint(type)}`);
      }
      continue;
    }
    const expand = (text: string, field: string) =>
      expandVars(text, env, `${where}.${field}`, problems);
    if (parsed.data.type === "http") {
      const config = parsed.data as McpHttpServerConfig;
      const url = expand(config.url, "url");
      if (!/^https?:\/\//i.test(url) && !(env === undefined && url.includes("${"))) {
        problems.push(`${where}.url: ${JSON.stringify(url)} is not an http(s) URL`);
        continue;
      }
      const out: McpHttpServerConfig = { type: "http", url };
      if (config.headers) out.headers = expandMap(config.headers, expand, "headers");
      servers.set(name, out);
    } else {
      const config = parsed.data as McpStdioServerConfig;
      const out: McpStdioServerConfig = { command: expand(config.command, "command") };
      if (config.args) out.args = config.args.map((a, i) => expand(a, `args[${i}]`));
      if (config.env) out.env = expandMap(config.env, expand, "env");
      servers.set(name, out);
    }
  }
  return { servers, problems };
}

/**
 * {@linkcode parseMcpServers}, throwing `MCP_CONFIG_INVALID` with every problem — for options given
 * in code and flags, where no loader collects problems.
 */
export function parseMcpServersOrThrow(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  source = "mcpServers",
): Map<string, McpServerConfig> {
  const { servers, problems } = parseMcpServers(value, env);
  if (problems.length) {
    throw new StepflowError(
      "MCP_CONFIG_INVALID",
      `Invalid MCP server configuration (${source}):\n- ${problems.join("\n- ")}`,
      { details: { source, problems } },
    );
  }
  return servers;
}

function hint(type: unknown): string {
  if (type === "http") return ' (an HTTP server is { type: "http", url, headers? })';
  return ' (a stdio server is { command, args?, env? }; an HTTP server { type: "http", url })';
}

function expandMap(
  map: Record<string, string>,
  expand: (text: string, field: string) => string,
  field: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(map)) out[key] = expand(map[key], `${field}.${key}`);
  return out;
}

/** `${VAR}` and `${VAR:-default}` replaced from `env`; an unset variable without default is a problem. */
function expandVars(
  text: string,
  env: Readonly<Record<string, string | undefined>> | undefined,
  where: string,
  problems: string[],
): string {
  if (env === undefined) return text;
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_match, name: string, fallback: string | undefined) => {
      const value = Object.hasOwn(env, name) ? env[name] : undefined;
      // As in a shell: ":-" also replaces an empty value.
      if (value !== undefined && (value !== "" || fallback === undefined)) return value;
      if (fallback !== undefined) return fallback;
      problems.push(
        `${where}: the environment variable ${name} is not set; set it, or write \${${name}:-default}`,
      );
      return "";
    },
  );
}
