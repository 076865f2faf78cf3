/**
 * The MCP server of `deno task mcp`: the official TypeScript SDK's server answering `tools/list`
 * and `tools/call` with the agent tools ({@linkcode listAgentTools}, {@linkcode callAgentTool}).
 * A run reports one progress notification per step event when the client asks for progress (a
 * `progressToken`); a cancelled request, or the server stopping, cancels the run through the
 * runner's signal, and {@linkcode AgentMcpServer.stop} waits until every run has recorded how it
 * ended. Every error of a call is answered as an MCP tool error (`isError`), never thrown at the
 * transport.
 *
 * @module
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type ServerNotification,
  type ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { errorMessage, StepflowError } from "../errors.ts";
import { type AgentToolsOptions, callAgentTool, listAgentTools } from "./agent_tools.ts";

/**
 * `tools/call` as the SDK reads it, except for the arguments: kept as the client sent them. The
 * SDK's own schema reads them as a record, which drops a `__proto__` key (JSON.parse makes it an
 * own key); the argument checks must see it to refuse it like any other undeclared argument.
 */
const RawCallToolRequestSchema = CallToolRequestSchema.extend({
  params: CallToolRequestSchema.shape.params.extend({ arguments: z.unknown().optional() }),
});

/** The name the server gives itself in the MCP handshake. */
export const SERVER_NAME = "stepflow";

/** Options of {@linkcode createAgentMcpServer}. */
export interface AgentMcpServerOptions extends AgentToolsOptions {
  /** The version the server reports in the handshake. */
  version: string;
  /** An unexpected error (a bug) while answering a call: the CLI prints it on stderr. */
  onInternalError?: (error: unknown) => void;
}

/** The runs in flight and the way to stop them, shared by every connection of one process. */
export interface AgentMcpServer {
  /** Connects a new SDK server (one per stdio process or HTTP session) to `transport`. */
  connect(transport: Transport): Promise<McpServer>;
  /** Cancels every run in flight and resolves once each has ended (and recorded its end). */
  stop(): Promise<void>;
  /** Runs in flight. */
  readonly running: number;
}

/**
 * Creates the agent server; `connect` it to a stdio or streamable HTTP transport.
 *
 * @example
 * ```ts ignore
 * import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
 * import { createAgentMcpServer } from "./server.ts";
 * const server = createAgentMcpServer({ cwd: Deno.cwd(), env: {}, backend: {}, version: "0.1.0" });
 * await server.connect(new StdioServerTransport());
 * ```
 */
export function createAgentMcpServer(options: AgentMcpServerOptions): AgentMcpServer {
  const stopping = new AbortController();
  const inFlight = new Set<Promise<unknown>>();

  async function answer(
    name: string,
    args: unknown,
    signal: AbortSignal,
    progress: ((message: string) => void) | undefined,
  ): Promise<CallToolResult> {
    try {
      const result = await callAgentTool(name, args, options, {
        signal: AbortSignal.any([signal, stopping.signal]),
        ...(progress ? { onProgress: progress } : {}),
      });
      return {
        content: [{ type: "text", text: result.text }],
        structuredContent: result.structured,
        ...(result.isError ? { isError: true } : {}),
      };
    } catch (error) {
      if (!(error instanceof StepflowError)) options.onInternalError?.(error);
      const text = error instanceof StepflowError
        ? `${error.code}: ${error.message}`
        : `Internal error (a bug in stepflow, please report it): ${errorMessage(error)}`;
      return { content: [{ type: "text", text }], isError: true };
    }
  }

  function connect(transport: Transport): Promise<McpServer> {
    const mcp = new McpServer(
      { name: SERVER_NAME, version: options.version },
      {
        instructions:
          "Each run_<agent> tool runs a stepflow agent and answers its output and run id; a run that waits for a person's answer says so, and answer_run answers it; list_runs and show_run read recorded runs.",
      },
    );
    // Declared here, not in the options, where McpServer would add its own handlers and announce
    // `listChanged`: the tools are read from .agent/ at each tools/list, no change is announced.
    mcp.server.registerCapabilities({ tools: {} });
    mcp.server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: await listAgentTools(options),
    }));
    mcp.server.setRequestHandler(RawCallToolRequestSchema, (
      request: z.infer<typeof RawCallToolRequestSchema>,
      extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
    ) => {
      const token = request.params._meta?.progressToken;
      let count = 0;
      // Sent notifications, so the answer waits for them: the run's last progress line (its end)
      // must reach the client before the result does.
      const sent: Promise<void>[] = [];
      const progress = token === undefined ? undefined : (message: string) => {
        sent.push(
          extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: ++count, message },
          }).catch(() => {}), // a client gone mid-run: the run still ends and is recorded
        );
      };
      const call = answer(request.params.name, request.params.arguments, extra.signal, progress)
        .then(async (result) => {
          await Promise.all(sent);
          return result;
        });
      inFlight.add(call);
      return call.finally(() => inFlight.delete(call));
    });
    return mcp.connect(transport).then(() => mcp);
  }

  return {
    connect,
    async stop() {
      stopping.abort(new Error("The MCP server is stopping."));
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    get running() {
      return inFlight.size;
    },
  };
}
