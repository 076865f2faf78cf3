/**
 * `deno task mcp --port N`: the agent server over MCP's streamable HTTP at `/mcp`, one session per
 * client (a session keeps its SDK server, so a client's `notifications/cancelled` reaches the run it
 * cancels). Loopback only: the bind address must be a loopback address, and the Host header must
 * name one in any spelling (DNS rebinding), as the dashboard's guard checks. The server runs agents
 * (and with `--allow-run` their commands) for whoever reaches it and has no authentication, so it
 * refuses to listen on another interface (`MCP_BIND_FAILED`).
 *
 * @module
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { StepflowError } from "../errors.ts";
import { bindError, hostAllowed, isLoopback, LOOPBACK_HOSTS } from "../ui/http_guard.ts";
import type { AgentMcpServer } from "./server.ts";

/** The path the server answers MCP requests on. */
export const MCP_HTTP_PATH = "/mcp";

/**
 * Sessions kept at once. Clients seldom end their session (the SDK client's `close()` does not), so
 * a new session beyond these closes the one least recently used.
 */
export const MAX_MCP_SESSIONS = 64;

/** Options of {@linkcode serveMcpHttp}. */
export interface McpHttpOptions {
  /** Bind address (default `127.0.0.1`). */
  hostname?: string;
  /** Port; 0 picks a free one. */
  port: number;
  /** Sessions kept at once (default {@linkcode MAX_MCP_SESSIONS}). */
  maxSessions?: number;
  /** Called once listening, with the URL clients connect to. */
  onListen?: (url: string) => void;
}

/** A listening HTTP server. */
export interface McpHttpServer {
  /** The URL clients connect to (`http://127.0.0.1:PORT/mcp`). */
  readonly url: string;
  /** Closes every session and stops listening. */
  shutdown(): Promise<void>;
}

/**
 * Serves `server` over streamable HTTP. Throws `MCP_BIND_FAILED` when the address cannot be
 * bound.
 */
export function serveMcpHttp(server: AgentMcpServer, options: McpHttpOptions): McpHttpServer {
  const hostname = options.hostname ?? "127.0.0.1";
  if (!isLoopback(hostname)) {
    throw new StepflowError(
      "MCP_BIND_FAILED",
      `The MCP server listens on loopback only, not on ${hostname}: it runs agents for whoever reaches it and has no authentication. Leave --host out (127.0.0.1), or give another loopback address such as ::1; reach it from another machine through an SSH tunnel.`,
      { details: { hostname, port: options.port } },
    );
  }
  const maxSessions = options.maxSessions ?? MAX_MCP_SESSIONS;
  /** The sessions, least recently used first (a request moves its session to the end). */
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (!hostAllowed(request.headers.get("host") ?? url.host, LOOPBACK_HOSTS)) {
      return jsonRpcError(403, "This server answers loopback host names only.");
    }
    if (url.pathname !== MCP_HTTP_PATH) {
      return jsonRpcError(404, `Not found: MCP is served at ${MCP_HTTP_PATH}.`);
    }
    const sessionId = request.headers.get("mcp-session-id");
    if (sessionId !== null) {
      const transport = sessions.get(sessionId);
      if (!transport) {
        return jsonRpcError(404, "Unknown or ended session: initialize a new one.");
      }
      sessions.delete(sessionId);
      sessions.set(sessionId, transport);
      return await transport.handleRequest(request);
    }
    // A request without a session must be `initialize`; the transport refuses anything else.
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (id: string) => {
          sessions.set(id, transport);
          for (const [oldId, old] of sessions) {
            if (sessions.size <= maxSessions) break;
            sessions.delete(oldId);
            old.close().catch(() => {});
          }
        },
        onsessionclosed: (id: string) => void sessions.delete(id),
      });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return await transport.handleRequest(request);
  }

  let http: Deno.HttpServer<Deno.NetAddr>;
  try {
    http = Deno.serve({ hostname, port: options.port, onListen: () => {} }, handle);
  } catch (error) {
    throw bindError(hostname, options.port, error, {
      code: "MCP_BIND_FAILED",
      name: "The MCP server",
    });
  }
  const shown = hostname.includes(":") ? `[${hostname}]` : hostname;
  const url = `http://${shown}:${http.addr.port}${MCP_HTTP_PATH}`;
  options.onListen?.(url);
  return {
    url,
    async shutdown() {
      await Promise.allSettled([...sessions.values()].map((t) => t.close()));
      sessions.clear();
      await http.shutdown();
    },
  };
}

function jsonRpcError(status: number, message: string): Response {
  return Response.json(
    { jsonrpc: "2.0", error: { code: -32000, message }, id: null },
    { status },
  );
}
