/**
 * The MCP servers of one run on the chat backends: each server is started the first time a step's
 * tool call needs it (an `allowedTools` rule names it) and kept for the later steps, then all are
 * closed together when the run ends — completed, failed, cancelled or stopped by Ctrl-C. A server
 * that fails to start is not kept: the next step that needs it tries again.
 *
 * The MCP client (`src/mcp`, and the MCP SDK behind it) is imported on the first server started,
 * so an agent without servers never loads it.
 *
 * @module
 */
import type { McpServerConfig } from "../definition/mcp_servers.ts";
import type { LlmRequest } from "../llm/types.ts";
import type { PermissionPolicy } from "../tools/permissions.ts";
import type { ToolRegistry } from "../tools/registry.ts";
import type { AnyTool } from "../tools/types.ts";

// A specifier the module graph does not follow: the MCP SDK stays out of stepflow's static graph.
const MCP_MODULE = new URL("../mcp/mod.ts", import.meta.url).href;

/**
 * The part of stepflow's MCP client (`src/mcp/mod.ts`) its lazy users call, declared here so that
 * its types do not pull it, and the MCP SDK, into the module graph.
 */
export interface McpClientModule {
  /** See `parseMcpServersOrThrow` in src/definition/mcp_servers.ts. */
  parseMcpServersOrThrow(
    value: unknown,
    env: Readonly<Record<string, string | undefined>>,
    source: string,
  ): Map<string, McpServerConfig>;
  /** See `connectMcpServers` in src/mcp/servers.ts. */
  connectMcpServers(
    configs: ReadonlyMap<string, McpServerConfig>,
    options: { cwd?: string; runId?: string },
  ): Promise<ConnectedMcpServers>;
}

/** Connected servers, as `connectMcpServers` returns them. */
export interface ConnectedMcpServers {
  /** Every tool of every server. */
  readonly tools: readonly AnyTool[];
  /** Per server: its tools and what was skipped. */
  readonly servers: readonly { name: string; tools: string[]; skipped: string[] }[];
  /** Process ids of the stdio servers. */
  pids(): number[];
  /** Closes every server. */
  close(): Promise<void>;
}

/** Imports the MCP client (and its SDK): only call it when an agent has servers. */
export async function loadMcpClient(): Promise<McpClientModule> {
  return await import(MCP_MODULE) as McpClientModule;
}

/**
 * The servers a run has started, by name. Create one per run; `close()` it when the run ends.
 *
 * @example
 * ```ts ignore
 * import { RunMcpServers } from "./run_mcp_servers.ts";
 * const servers = new RunMcpServers();
 * try {
 *   // per step call: await servers.registerFor(request, policy, registry);
 * } finally {
 *   await servers.close();
 * }
 * ```
 */
export class RunMcpServers {
  /** Started servers by name (one connection set may hold several, started together). */
  readonly #byName = new Map<string, ConnectedMcpServers>();
  /** Starting is one at a time, so two calls never start the same server twice. */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  /**
   * Adds to `registry` the tools of the servers `request` may use — those of its `mcpServers` an
   * `allowedTools` rule names — starting the ones not started yet (in parallel).
   *
   * @throws StepflowError `MCP_CONFIG_INVALID`, or the start failure of a server (naming it)
   */
  registerFor(
    request: LlmRequest,
    policy: PermissionPolicy,
    registry: ToolRegistry,
    runId?: string,
  ): Promise<void> {
    const configured = request.mcpServers;
    if (!configured) return Promise.resolve();
    const wanted = Object.keys(configured).filter((name) =>
      policy.allow.some((rule) => rule.kind === "mcp" && rule.server === name)
    );
    if (wanted.length === 0) return Promise.resolve();
    const started = this.#queue.then(() => this.#start(configured, wanted, request.cwd, runId));
    this.#queue = started.catch(() => {});
    return started.then(() => {
      for (const name of wanted) {
        const prefix = `mcp__${name}__`;
        for (const tool of this.#byName.get(name)!.tools) {
          if (tool.name.startsWith(prefix)) registry.register(tool);
        }
      }
    });
  }

  async #start(
    configured: Record<string, unknown>,
    wanted: string[],
    cwd: string,
    runId: string | undefined,
  ): Promise<void> {
    if (this.#closed) throw new Error("RunMcpServers: the run's servers were closed");
    const missing = wanted.filter((name) => !this.#byName.has(name));
    if (missing.length === 0) return;
    const mcp = await loadMcpClient();
    const all = mcp.parseMcpServersOrThrow(configured, Deno.env.toObject(), "behavior.mcpServers");
    const servers = await mcp.connectMcpServers(
      new Map(missing.map((name) => [name, all.get(name)!])),
      { cwd, ...(runId !== undefined ? { runId } : {}) },
    );
    if (this.#closed) {
      await servers.close();
      throw new Error("RunMcpServers: the run's servers were closed");
    }
    for (const name of missing) this.#byName.set(name, servers);
  }

  /** Process ids of the running stdio servers (for checks). */
  pids(): number[] {
    return [...new Set(this.#byName.values())].flatMap((s) => s.pids());
  }

  /** Closes every server started (stdio servers with their whole process group). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#queue;
    const all = [...new Set(this.#byName.values())];
    this.#byName.clear();
    await Promise.all(all.map((s) => s.close()));
  }

  /** `await using servers = new RunMcpServers()` closes them at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
