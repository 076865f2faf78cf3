/**
 * `deno task mcp`: serves the agents under `.agent/` to MCP clients (Claude Code, editors) as
 * tools, over stdio, or over streamable HTTP with `--port` (docs/mcp-server.md).
 *
 *     deno task mcp [--port N [--host ADDR]] [--backend NAME | --script FILE] [--store URL]
 *
 * Over stdio, stdout carries the protocol and stderr the server's notes. The server stops when
 * stdin closes (the client went away), on SIGTERM and on Ctrl-C: runs in flight are cancelled and
 * record their end first; a second signal quits at once. Exit codes: 0 stopped, 1 the connection
 * was closed for a stdio message over 10 MiB (MCP_MESSAGE_TOO_LARGE), 2 usage or setup error (a
 * bad flag, a port that cannot be bound: MCP_BIND_FAILED), 130 quit (143 after SIGTERM).
 *
 * @module
 */
import process from "node:process";
import { resolve } from "node:path";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import config from "../../deno.json" with { type: "json" };
import { errorMessage } from "../errors.ts";
import type { BackendChoice } from "../llm/backend_choice.ts";
import { serveMcpHttp } from "../mcp_server/http.ts";
import { type AgentMcpServer, createAgentMcpServer } from "../mcp_server/server.ts";
import { BACKEND_FLAGS, backendName } from "./kit/backend.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { declaredHelpLines, defineFlags, parseCommandFlags, portFlag } from "./kit/flags.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { exitProcess, startTelemetryExport } from "./kit/telemetry_export.ts";
import { reportError } from "./kit/report_error.ts";

/** Every flag of `mcp`, in `--help` order. */
export const MCP_FLAGS = defineFlags({
  port: {
    type: "string",
    value: "N",
    description:
      "Serve streamable HTTP at http://127.0.0.1:N/mcp instead of stdio\n(0 picks a free port)",
    parse: (raw) => portFlag({ port: raw }, 0),
  },
  host: {
    type: "string",
    value: "ADDR",
    description: "Loopback address to bind with --port (default 127.0.0.1)",
  },
  backend: {
    ...BACKEND_FLAGS.backend,
    description: "Backend of every run (default: each agent's behavior.backend)",
  },
  script: {
    ...BACKEND_FLAGS.script,
    description: "Scripted answers (YAML/JSON); implies --backend scripted",
  },
  model: {
    ...BACKEND_FLAGS.model,
    description: "Model of every run (default: each agent's behavior.model)",
  },
  baseUrl: BACKEND_FLAGS.baseUrl,
  store: {
    type: "string",
    value: "URL",
    description: "Run store: file (default) or postgres://… (else STEPFLOW_STORE, logging.store)",
  },
  allowRun: {
    type: "boolean",
    description: "Let command steps and validators run the commands agent.json lists",
  },
  help: { type: "boolean", short: "h", description: "Show this help" },
});

const USAGE = `Usage: stepflow mcp [options]

Serves the agents under .agent/ to MCP clients as tools: run_<agent> (its parameters as the
input schema), answer_run (answers a run waiting at an input step), list_runs and show_run.
Over stdio unless --port is given.

Options:
${declaredHelpLines(MCP_FLAGS, { width: 20 }).join("\n")}

Stops when stdin closes, on SIGTERM or Ctrl-C, cancelling the runs in flight.

Examples:
  claude mcp add stepflow -- stepflow mcp
  stepflow mcp --port 8765 --allow-run`;

/** Where the CLI reads and writes (tests pass their own). */
export interface McpCliIo {
  /** Environment (`INIT_CWD`, credentials, `STEPFLOW_STORE`). */
  env: Record<string, string | undefined>;
  /** Aborted to stop the server (SIGTERM, Ctrl-C). */
  signal: AbortSignal;
  /** Notes and errors (never stdout: over stdio it carries the protocol). */
  log(line: string): void;
}

/**
 * Runs `deno task mcp` until it is stopped; returns the exit code.
 *
 * @param argv arguments without the program name
 * @param io environment, stop signal and the notes' writer
 */
export async function mcpMain(argv: readonly string[], io: McpCliIo): Promise<number> {
  let values;
  try {
    values = parseCommandFlags(argv, MCP_FLAGS, {
      positionals: false,
      hint: "\nRun with --help for usage.",
    }).flags;
  } catch (error) {
    io.log(`error: ${errorMessage(error)}`);
    return EXIT_CODES.usage;
  }
  if (values.help) {
    console.log(USAGE);
    return EXIT_CODES.success;
  }
  try {
    const userDir = resolve(Deno.cwd(), io.env.INIT_CWD || ".");
    const flags = values;
    backendName(flags); // --script with another --backend is a usage error, at once
    const backend: Partial<BackendChoice> = {};
    if (flags.backend !== undefined) backend.backend = flags.backend.toLowerCase();
    if (flags.script !== undefined) backend.script = resolve(userDir, flags.script);
    if (flags.model !== undefined) backend.model = flags.model;
    if (flags.baseUrl !== undefined) backend.baseUrl = flags.baseUrl;
    const { store, host } = values;
    if (host !== undefined && values.port === undefined) {
      io.log("error: --host sets where --port listens; add --port N (stdio needs neither).");
      return EXIT_CODES.usage;
    }
    const server = createAgentMcpServer({
      cwd: userDir,
      env: io.env,
      backend,
      ...(store !== undefined ? { store } : {}),
      ...(values.allowRun ? { allowRun: true } : {}),
      version: config.version,
      onWarning: (message) => io.log(`warning: ${message}`),
      onInternalError: (error) =>
        io.log(`internal error: ${error instanceof Error ? error.stack : String(error)}`),
    });
    if (values.port !== undefined) {
      return await serveHttp(server, values.port, host, io);
    }
    return await serveStdio(server, io);
  } catch (error) {
    return reportError(error, { write: (text) => io.log(text.replace(/\n$/, "")) }, {
      prefix: "error:",
    });
  }
}

async function serveStdio(server: AgentMcpServer, io: McpCliIo): Promise<number> {
  const stdinClosed = new Promise<void>((done) => {
    process.stdin.once("end", done);
    process.stdin.once("close", done);
  });
  const mcp = await server.connect(new StdioServerTransport());
  // The transport gives up on its own on a message over its buffer (it stops reading stdin): the
  // connection is over, and the client must see stdout close, not wait for an answer forever.
  let lastError: Error | undefined;
  const transportClosed = Promise.withResolvers<"closed">();
  mcp.server.onerror = (error: Error) => void (lastError = error);
  mcp.server.onclose = () => transportClosed.resolve("closed");
  const ended = await Promise.race([stdinClosed, aborted(io.signal), transportClosed.promise]);
  await server.stop();
  await mcp.close();
  if (ended !== "closed" || io.signal.aborted) return EXIT_CODES.success;
  io.log(`error: ${closedWhy(lastError)}`);
  return EXIT_CODES.failed;
}

/** Why the stdio transport closed the connection by itself. */
function closedWhy(error: Error | undefined): string {
  if (error && /exceeded maximum size/i.test(error.message)) {
    return `MCP_MESSAGE_TOO_LARGE: the client sent a message over ${
      STDIO_DEFAULT_MAX_BUFFER_SIZE / 1024 / 1024
    } MiB, the most one stdio message may hold; the connection is closed. Send less in one call (a large value belongs in a file the agent reads).`;
  }
  return `the connection closed${error ? `: ${errorMessage(error)}` : ""}.`;
}

async function serveHttp(
  server: AgentMcpServer,
  port: number,
  host: string | undefined,
  io: McpCliIo,
): Promise<number> {
  const http = serveMcpHttp(server, {
    port,
    ...(host !== undefined ? { hostname: host } : {}),
    onListen: (url) => io.log(`stepflow MCP server listening on ${url}`),
  });
  await aborted(io.signal);
  await server.stop();
  await http.shutdown();
  return EXIT_CODES.success;
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    if (signal.aborted) done();
    else signal.addEventListener("abort", () => done(), { once: true });
  });
}

/**
 * Runs `mcp` on the real process: stdin closing, SIGTERM or Ctrl-C stop it (the exit codes are in
 * the module's header). OTLP export when the environment asks for it; stopping the server flushes
 * it.
 */
export async function mcpCli(argv: readonly string[] = Deno.args): Promise<never> {
  await startTelemetryExport();
  using interrupt = listenForInterrupt({
    message: "stopping: cancelling the runs in flight (signal again to quit at once)\n",
  });
  const code = await mcpMain(argv, {
    env: Deno.env.toObject(),
    signal: interrupt.signal,
    log: (line) => console.error(line),
  });
  return await exitProcess(code);
}

if (import.meta.main) await mcpCli();
