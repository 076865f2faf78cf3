/**
 * The stdio transport of stepflow's MCP client: the server runs as a process in a process group of
 * its own, spoken to in JSON-RPC lines over its standard input and output. Closing ends its input,
 * then signals the whole group (TERM, then KILL after a grace period), so a server started through
 * a wrapper (`npx`, `sh -c`, `uvx`) leaves no process behind. The SDK's own stdio transport signals
 * only its direct child.
 *
 * @module
 */
import { deserializeMessage, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { LineSplitter, LineTooLongError } from "./line_splitter.ts";

/** How to start the server process. */
export interface ProcessTransportOptions {
  /** The executable. */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Extra environment variables, added to stepflow's environment. */
  env?: Record<string, string>;
  /** Working folder of the server. */
  cwd?: string;
  /** Milliseconds between TERM and KILL when closing (default 2,000). */
  killGraceMs?: number;
}

/** Lines of the server's standard error kept for error messages. */
const STDERR_TAIL_LINES = 20;

/** An MCP {@linkcode Transport} over a child process's standard input and output. */
export class ProcessTransport implements Transport {
  /** Called when the connection ends (the process exited or {@linkcode close} was called). */
  onclose?: () => void;
  /** Called on a transport error (a line that is not JSON-RPC, a failed write). */
  onerror?: (error: Error) => void;
  /** Called with each message from the server. */
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  readonly #options: ProcessTransportOptions;
  #child: Deno.ChildProcess | undefined;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  readonly #lines = new LineSplitter();
  #oversized: number | undefined;
  readonly #stderr: string[] = [];
  #exit: Deno.CommandStatus | undefined;
  #closed = false;
  #exited: Promise<Deno.CommandStatus> | undefined;

  /** Prepares the transport; {@linkcode start} starts the process. */
  constructor(options: ProcessTransportOptions) {
    this.#options = options;
  }

  /** The server's process id (its process group id too), once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** How the process ended, once it has. */
  get exitStatus(): Deno.CommandStatus | undefined {
    return this.#exit;
  }

  /**
   * The bound (bytes) a message of the server passed, when that is why the transport stopped it:
   * nothing after such a message can be read.
   */
  get oversized(): number | undefined {
    return this.#oversized;
  }

  /** The last lines the server wrote to its standard error. */
  stderrTail(): string {
    return this.#stderr.join("\n");
  }

  /** Starts the process. Throws when the executable cannot be started. */
  start(): Promise<void> {
    if (this.#child) throw new Error("ProcessTransport already started");
    const child = new Deno.Command(this.#options.command, {
      args: this.#options.args ?? [],
      env: this.#options.env,
      cwd: this.#options.cwd,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // A session of its own: closing signals the whole group, grandchildren included.
      detached: true,
    }).spawn();
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#exited = child.status.then((status) => {
      this.#exit = status;
      return status;
    });
    void this.#readStdout(child.stdout);
    void this.#readStderr(child.stderr);
    void this.#exited.then(() => this.#finish());
    return Promise.resolve();
  }

  /** Sends one message as a line on the server's standard input. */
  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.#writer || this.#closed || this.#exit) throw new Error("Not connected");
    await this.#writer.write(new TextEncoder().encode(serializeMessage(message)));
  }

  /**
   * Ends the server: closes its input, waits up to the grace period, then TERM and KILL to its whole
   * process group. Resolves once the process has exited.
   */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#closed = true;
    await this.#writer?.close().catch(() => {});
    const grace = this.#options.killGraceMs ?? 2_000;
    if (!this.#exit) await this.#waitExit(grace);
    if (!this.#exit) {
      signalGroup(child.pid, "SIGTERM");
      await this.#waitExit(grace);
    }
    // KILL also reaches whatever the server left running in its group.
    signalGroup(child.pid, "SIGKILL");
    await this.#exited;
    this.#finish();
  }

  async #waitExit(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#exited,
      new Promise((resolve) => timer = setTimeout(resolve, ms)),
    ]);
    clearTimeout(timer);
  }

  #finished = false;
  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#child) signalGroup(this.#child.pid, "SIGKILL");
    this.#lines.clear();
    this.onclose?.();
  }

  async #readStdout(stream: ReadableStream<Uint8Array>): Promise<void> {
    try {
      for await (const chunk of stream) {
        let lines: string[];
        try {
          lines = this.#lines.push(chunk);
        } catch (error) {
          if (!(error instanceof LineTooLongError)) throw error;
          // A message over 10 MiB: nothing after it can be read; stop the server rather than stall.
          this.#oversized = error.maxBytes;
          this.onerror?.(error);
          void this.close();
          return;
        }
        for (const line of lines) {
          let message: JSONRPCMessage;
          try {
            message = deserializeMessage(line);
          } catch (error) {
            this.onerror?.(error instanceof Error ? error : new Error(String(error)));
            continue;
          }
          this.onmessage?.(message);
        }
      }
    } catch (error) {
      if (!this.#closed) this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  async #readStderr(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let partial = "";
    try {
      for await (const chunk of stream) {
        const lines = (partial + decoder.decode(chunk, { stream: true })).split("\n");
        partial = lines.pop()!.slice(-2_000);
        for (const line of lines) this.#keepStderr(line);
      }
    } catch {
      // The stream ends with the process.
    }
    if (partial) this.#keepStderr(partial);
  }

  #keepStderr(line: string): void {
    if (!line.trim()) return;
    this.#stderr.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
    if (this.#stderr.length > STDERR_TAIL_LINES) this.#stderr.shift();
  }
}

function signalGroup(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pid, signal);
  } catch {
    // The group is gone already.
  }
}
