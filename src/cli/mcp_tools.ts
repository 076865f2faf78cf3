/**
 * `--mcp-config FILE` for `run-plan` and `qplan`: the MCP servers of an `.mcp.json`-shaped file
 * serve tool plans and QPlan scripts through the one tool registry, as `mcp__<server>__<tool>`.
 * Only the servers a plan or script names are started, once for the whole command, and all are
 * closed when it ends — completed, failed, cancelled or stopped by Ctrl-C. The MCP client (and its
 * SDK) is imported only when a server is started.
 *
 * @module
 */
import { resolve } from "node:path";
import type { McpServerConfig } from "../definition/mcp_servers.ts";
import { type ConnectedMcpServers, loadMcpClient } from "../flow/run_mcp_servers.ts";
import { errorMessage } from "../errors.ts";
import { readMcpConfigFile } from "../mcp/config_file.ts";
import { mcpServersUsed } from "../mcp/tool_names.ts";
import type { ToolRegistry } from "../tools/registry.ts";

/** The declaration of the `--mcp-config` flag, shared by the commands that take it. */
export const MCP_CONFIG_FLAG = {
  type: "string",
  value: "FILE",
  description: [
    "MCP servers for steps to call as mcp__<server>__<tool>: a JSON file like",
    'Claude Code\'s .mcp.json, { "mcpServers": { name: { command, args? } | { type:',
    '"http", url } } }; only the servers used start, all closed at the end',
  ].join("\n"),
} as const;

/** Where the servers come from and where their tools go. */
export interface McpToolsOptions {
  /** The `--mcp-config` value (none: no servers). */
  configFile: string | undefined;
  /** The folder `configFile` is relative to. */
  userDir: string;
  /** The environment `${VAR}` is taken from. */
  env: Readonly<Record<string, string | undefined>>;
  /** Working folder of stdio servers. */
  cwd: string;
  /** The registry the servers' tools join. */
  registry: ToolRegistry;
  /** Reports a line of progress (servers started, closed). */
  note: (line: string) => void;
}

/**
 * The MCP servers of one command. {@linkcode McpTools.start} reads the configuration and starts
 * the servers asked for; `await using` (or {@linkcode McpTools.close}) closes them.
 *
 * @example
 * ```ts ignore
 * await using mcp = new McpTools({ configFile: ".mcp.json", userDir, env, cwd, registry, note });
 * await mcp.start(["mcp__files__read_text_file"]); // starts "files" only
 * ```
 */
export class McpTools {
  readonly #options: McpToolsOptions;
  #configs: Map<string, McpServerConfig> | undefined;
  #started: ConnectedMcpServers[] = [];
  #closed = false;

  /** Prepares the servers of `options.configFile`; nothing is read or started yet. */
  constructor(options: McpToolsOptions) {
    this.#options = options;
  }

  /**
   * Reads the configuration (once) and declares its servers in the registry, then starts those
   * that `toolNames` name and are not started yet, registering their tools. Names of servers the
   * file does not have start nothing: validation reports them. `"all"` starts every server, and
   * one that cannot start is left out with a note instead of failing.
   *
   * @throws StepflowError `MCP_CONFIG_INVALID`, `MCP_CONNECT_FAILED`, `MCP_CONNECT_TIMEOUT`
   */
  async start(toolNames: Iterable<string> | "all"): Promise<void> {
    const configs = await this.#read();
    if (!configs || this.#closed) return;
    const started = new Set(this.#started.flatMap((s) => s.servers.map((x) => x.name)));
    const everyServer = toolNames === "all";
    const wanted = (everyServer ? [...configs.keys()] : mcpServersUsed(toolNames, configs.keys()))
      .filter((name) => !started.has(name));
    if (wanted.length === 0) return;
    const mcp = await loadMcpClient();
    const connect = (names: string[]) =>
      mcp.connectMcpServers(new Map(names.map((name) => [name, configs.get(name)!])), {
        cwd: this.#options.cwd,
      });
    if (!everyServer) {
      // The plan or script needs each of them: one that cannot start stops the command.
      this.#add(await connect(wanted));
      return;
    }
    // Offering every server's tools (to a model writing a plan): one that cannot start is left out.
    const settled = await Promise.allSettled(wanted.map((name) => connect([name])));
    settled.forEach((result, i) => {
      if (result.status === "fulfilled") this.#add(result.value);
      else {
        this.#options.note(
          `MCP server "${wanted[i]}" is left out, its tools are not offered: ${
            errorMessage(result.reason)
          }`,
        );
      }
    });
  }

  #add(servers: ConnectedMcpServers): void {
    this.#started.push(servers);
    for (const tool of servers.tools) this.#options.registry.register(tool);
    const summary = servers.servers.map((s) =>
      `${s.name} (${s.tools.length} tool${s.tools.length === 1 ? "" : "s"})`
    );
    this.#options.note(`MCP servers started: ${summary.join(", ")}`);
    for (const s of servers.servers) {
      for (const skipped of s.skipped) this.#options.note(`MCP tool skipped: ${skipped}`);
    }
  }

  /** Process ids of the running stdio servers. */
  pids(): number[] {
    return this.#started.flatMap((s) => s.pids());
  }

  /** Closes every server started (stdio servers with their whole process group). */
  async close(): Promise<void> {
    this.#closed = true;
    const started = this.#started;
    this.#started = [];
    await Promise.all(started.map((s) => s.close()));
  }

  /** `await using mcp = new McpTools(…)` closes the servers at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #read(): Promise<Map<string, McpServerConfig> | undefined> {
    const { configFile, userDir, env, registry } = this.#options;
    if (configFile === undefined) return undefined;
    if (!this.#configs) {
      this.#configs = await readMcpConfigFile(resolve(userDir, configFile), env);
      registry.declareMcpServers(this.#configs.keys());
    }
    return this.#configs;
  }
}
