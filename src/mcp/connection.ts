/**
 * One connection to one MCP server, on the official TypeScript SDK's `Client`: started (stdio) or
 * reached (streamable HTTP) with a connect timeout, its tools listed, each call bounded by a call
 * timeout, and the server's death mid-call turned into an error — never a hang.
 *
 * @module
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { ListToolsResult } from "@modelcontextprotocol/sdk/types.js";
import { StepflowError } from "../errors.ts";
import type { McpServerConfig } from "../definition/mcp_servers.ts";
import { timeoutSignal } from "../timeout_signal.ts";
import { ProcessTransport } from "./process_transport.ts";
import { MCP_TIMEOUT_ENV, MCP_TOOL_TIMEOUT_ENV, timeoutFromEnv } from "./timeouts.ts";

/** Timeouts and surroundings of a connection. */
export interface McpConnectOptions {
  /** Milliseconds to start the server and finish the MCP handshake (default `$MCP_TIMEOUT`, else 30,000). */
  connectTimeoutMs?: number;
  /** Milliseconds a tool call may take (default `$MCP_TOOL_TIMEOUT`, else 120,000). */
  callTimeoutMs?: number;
  /** Working folder of a stdio server (default: stepflow's). */
  cwd?: string;
  /** Milliseconds between TERM and KILL when a stdio server is closed (default 2,000). */
  killGraceMs?: number;
}

/** A tool as the server lists it. */
export interface McpToolInfo {
  /** The server's name for it. */
  name: string;
  /** Its description. */
  description: string;
  /** The JSON Schema of its arguments. */
  inputSchema: Record<string, unknown>;
  /** The server says it changes nothing (`annotations.readOnlyHint`). */
  readOnly: boolean;
  /** The server says repeating it has no further effect (`annotations.idempotentHint`). */
  idempotent: boolean;
  /**
   * It may destroy or overwrite something: `annotations.destructiveHint`, which MCP defaults to
   * true; meaningless for a read-only tool.
   */
  destructive: boolean;
}

/** A content block of a tool result, as MCP defines it (the fields stepflow reads). */
export interface McpContent {
  /** `text`, `image`, `audio`, `resource`, `resource_link`. */
  type: string;
  /** The text of a `text` block. */
  text?: string;
  /** Base64 data of an image or audio block. */
  data?: string;
  /** MIME type of an image, audio or resource. */
  mimeType?: string;
  /** An embedded resource. */
  resource?: { uri?: string; text?: string; blob?: string; mimeType?: string };
  /** The URI of a resource link. */
  uri?: string;
}

/** What a tool call returned. */
export interface McpCallResult {
  /** The content blocks. */
  content: McpContent[];
  /** The server reports the call failed. */
  isError: boolean;
  /** Structured content, when the tool gives some. */
  structuredContent?: unknown;
}

/** Options of one call. */
export interface McpCallOptions {
  /** Cancels the call (the server is told). */
  signal?: AbortSignal;
  /** The server's progress reports for this call (`total` when it knows it). */
  onProgress?: (progress: number, total: number | undefined, message: string | undefined) => void;
}

/** A call result as the SDK returns it, read defensively (servers are untrusted). */
type RawCallResult = { content?: unknown; isError?: unknown; structuredContent?: unknown };

/** Default connect timeout (ms). */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;
/** Default call timeout (ms). */
export const MCP_CALL_TIMEOUT_MS = 120_000;

/** One live MCP server. Create it with {@linkcode McpConnection.connect}. */
export class McpConnection {
  /** The server's name in `mcpServers`. */
  readonly name: string;
  readonly #client: Client;
  readonly #transport: Transport;
  readonly #callTimeoutMs: number;
  #closedBy: "us" | "server" | undefined;
  #oversizedDuring: string | undefined;

  private constructor(name: string, client: Client, transport: Transport, callTimeoutMs: number) {
    this.name = name;
    this.#client = client;
    this.#transport = transport;
    this.#callTimeoutMs = callTimeoutMs;
  }

  /**
   * Starts or reaches the server and completes the MCP handshake within the connect timeout.
   *
   * @throws StepflowError `MCP_CONNECT_FAILED` (it could not start, or hung up) or
   *   `MCP_CONNECT_TIMEOUT`; in both cases nothing is left running
   */
  static async connect(
    name: string,
    config: McpServerConfig,
    options: McpConnectOptions = {},
  ): Promise<McpConnection> {
    const connectTimeoutMs = options.connectTimeoutMs ??
      timeoutFromEnv(MCP_TIMEOUT_ENV, MCP_CONNECT_TIMEOUT_MS);
    const callTimeoutMs = options.callTimeoutMs ??
      timeoutFromEnv(MCP_TOOL_TIMEOUT_ENV, MCP_CALL_TIMEOUT_MS);
    const transport = createTransport(config, options);
    const client = new Client({ name: "stepflow", version: "1" });
    const connection = new McpConnection(name, client, transport, callTimeoutMs);
    using limit = timeoutSignal(connectTimeoutMs);
    try {
      await client.connect(transport, { timeout: connectTimeoutMs, signal: limit.signal });
    } catch (error) {
      const stderr = transport instanceof ProcessTransport ? transport.stderrTail() : "";
      await transport.close().catch(() => {});
      if (limit.timedOut || isTimeout(error)) {
        throw new StepflowError(
          "MCP_CONNECT_TIMEOUT",
          `MCP server "${name}" did not complete the handshake within ${connectTimeoutMs} ms and was stopped. Check that ${
            describeServer(config)
          } is an MCP server, or raise the connect timeout (${MCP_TIMEOUT_ENV}, in ms).${
            tail(stderr)
          }`,
          { details: { server: name, timeoutMs: connectTimeoutMs } },
        );
      }
      throw new StepflowError(
        "MCP_CONNECT_FAILED",
        `MCP server "${name}" could not be ${"url" in config ? "reached" : "started"} (${
          describeServer(config)
        }): ${reason(error)}.${tail(stderr)}`,
        { details: { server: name }, cause: error },
      );
    }
    transport.onclose = chain(transport.onclose, () => {
      connection.#closedBy ??= "server";
    });
    return connection;
  }

  /** The server's tools (every page of its listing). */
  async listTools(): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#request<ListToolsResult>(
        "listing tools",
        (options) => this.#client.listTools(cursor ? { cursor } : undefined, options),
      );
      for (const tool of page.tools) {
        tools.push({
          name: tool.name,
          description: tool.description ?? "",
          inputSchema: tool.inputSchema as Record<string, unknown>,
          readOnly: tool.annotations?.readOnlyHint === true,
          idempotent: tool.annotations?.idempotentHint === true,
          destructive: tool.annotations?.destructiveHint !== false,
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /**
   * Calls a tool. A call past the call timeout, a cancelled call and a server that exits meanwhile
   * are errors (`MCP_CALL_TIMEOUT`, the abort reason, `MCP_SERVER_EXITED`). `onProgress` receives
   * the server's progress notifications for this call.
   */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    options: McpCallOptions = {},
  ): Promise<McpCallResult> {
    const onprogress = options.onProgress
      ? (p: { progress: number; total?: number; message?: string }) =>
        options.onProgress!(p.progress, p.total, p.message)
      : undefined;
    const result = await this.#request<RawCallResult>(
      `calling ${tool}`,
      (request) =>
        this.#client.callTool({ name: tool, arguments: args }, undefined, {
          ...request,
          ...(onprogress ? { onprogress } : {}),
        }),
      options.signal,
    );
    const content = Array.isArray(result.content) ? result.content as McpContent[] : [];
    const out: McpCallResult = { content, isError: result.isError === true };
    if (result.structuredContent !== undefined) out.structuredContent = result.structuredContent;
    return out;
  }

  /** True until the connection is closed, by us or by the server. */
  get alive(): boolean {
    return this.#closedBy === undefined;
  }

  /** The server process's id (stdio servers), for checks and logs. */
  get pid(): number | undefined {
    return this.#transport instanceof ProcessTransport ? this.#transport.pid : undefined;
  }

  /** Closes the connection; a stdio server is stopped with its whole process group. */
  async close(): Promise<void> {
    this.#closedBy ??= "us";
    await this.#client.close().catch(() => {});
    await this.#transport.close().catch(() => {});
  }

  async #request<T>(
    what: string,
    run: (options: { timeout: number; signal: AbortSignal }) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    if (this.#closedBy) throw this.#gone(what);
    // Cleared when the call ends: the SDK leaves its listener on the signal, and a timer with a
    // listener keeps the process alive (the call timeout's two minutes after the run ended).
    using limit = timeoutSignal(this.#callTimeoutMs, signal);
    try {
      return await run({ timeout: this.#callTimeoutMs, signal: limit.signal });
    } catch (error) {
      signal?.throwIfAborted();
      if (this.#closedBy === "server" || isConnectionClosed(error)) {
        this.#closedBy ??= "server";
        throw this.#gone(what);
      }
      if (limit.timedOut || isTimeout(error)) {
        throw new StepflowError(
          "MCP_CALL_TIMEOUT",
          `MCP server "${this.name}" did not answer within ${this.#callTimeoutMs} ms while ${what}. Try again, or raise the call timeout (${MCP_TOOL_TIMEOUT_ENV}, in ms).`,
          { details: { server: this.name, timeoutMs: this.#callTimeoutMs } },
        );
      }
      throw error;
    }
  }

  #gone(what: string): StepflowError {
    const t = this.#transport instanceof ProcessTransport ? this.#transport : undefined;
    if (t?.oversized !== undefined) {
      // Later calls say what happened then: their own call never reached the server.
      const during = this.#oversizedDuring ??= what;
      return new StepflowError(
        "MCP_MESSAGE_TOO_LARGE",
        `MCP server "${this.name}" sent a message over ${
          t.oversized / 1024 / 1024
        } MiB while ${during}, more than one stdio message may hold; nothing after it can be read, so the server was stopped and its tools are unavailable for the rest of this run. Ask the tool for less (a part of the file, a page of the results, a narrower query).`,
        { details: { server: this.name, maxBytes: t.oversized } },
      );
    }
    const status = t?.exitStatus;
    const how = status
      ? status.signal ? ` (killed by ${status.signal})` : ` (exit code ${status.code})`
      : "";
    const by = this.#closedBy === "us" ? "was closed" : `exited${how}`;
    return new StepflowError(
      "MCP_SERVER_EXITED",
      `MCP server "${this.name}" ${by} while ${what}; its tools are unavailable for the rest of this run.${
        tail(t?.stderrTail() ?? "")
      }`,
      { details: { server: this.name, ...(status ? { exitCode: status.code } : {}) } },
    );
  }
}

function createTransport(config: McpServerConfig, options: McpConnectOptions): Transport {
  if (config.type === "http") {
    return new StreamableHTTPClientTransport(new URL(config.url), {
      requestInit: config.headers ? { headers: config.headers } : undefined,
    });
  }
  return new ProcessTransport({
    command: config.command,
    args: config.args,
    env: config.env,
    cwd: options.cwd,
    killGraceMs: options.killGraceMs,
  });
}

function describeServer(config: McpServerConfig): string {
  if (config.type === "http") return config.url;
  return [config.command, ...(config.args ?? [])].join(" ");
}

function reason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "the command was not found";
  if (isConnectionClosed(error)) return "it exited before completing the MCP handshake";
  return error instanceof Error ? error.message : String(error);
}

function tail(stderr: string): string {
  return stderr ? `\nIts last output:\n${stderr}` : "";
}

/** The SDK's McpError codes: -32000 connection closed, -32001 request timeout. */
function isConnectionClosed(error: unknown): boolean {
  return (error as { code?: unknown })?.code === -32000;
}

function isTimeout(error: unknown): boolean {
  return (error as { code?: unknown })?.code === -32001;
}

function chain(first: (() => void) | undefined, second: () => void): () => void {
  return () => {
    first?.();
    second();
  };
}
