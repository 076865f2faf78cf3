/**
 * The one IO type of every stepflow command line: what a CLI's `main(argv, io)` reads and writes.
 * Tests and embedders pass their own (`{ stdout: { write } }` …); {@linkcode processIo} is the real
 * process.
 *
 * @module
 */
import { resolve } from "node:path";

/** How long to wait for the first byte of piped stdin before running without it. */
export const STDIN_WAIT_MS = 1000;

/** Something text can be written to (stdout, stderr). */
export interface CliWriter {
  /** Writes `text` as is (no newline added). */
  write(text: string): void;
}

/** Everything a CLI's `main` touches outside itself, injectable for tests. */
export interface CliIo {
  /** Results go here. */
  stdout: CliWriter;
  /** Progress, questions, warnings and errors go here. */
  stderr: CliWriter;
  /** Piped input, or the answers to questions on a terminal; `null` for none. */
  stdin: ReadableStream<Uint8Array> | null;
  /** Environment (`INIT_CWD`, `NO_COLOR`, backend credentials). */
  env: Record<string, string | undefined>;
  /** The process's working directory (`INIT_CWD` wins when set). */
  cwd: string;
  /** Which streams are terminals (colours, questions, the live progress line). */
  isTerminal: { stdin: boolean; stdout: boolean; stderr: boolean };
  /** Width of the terminal, for the live progress line. */
  columns?: number;
  /** Cancels the work in progress (Ctrl-C). */
  signal?: AbortSignal;
  /** How long to wait for piped stdin to start (default {@linkcode STDIN_WAIT_MS}). */
  stdinWaitMs?: number;
  /**
   * Asks the user one question on the terminal and returns the answer line, `null` for none.
   * Default: the global `prompt`.
   */
  ask?: (question: string) => string | null;
}

/** The process's real stdio, environment and working directory. */
export function processIo(): CliIo {
  const io: CliIo = {
    stdout: writerFor(Deno.stdout),
    stderr: writerFor(Deno.stderr),
    stdin: Deno.stdin.readable,
    env: Deno.env.toObject(),
    cwd: Deno.cwd(),
    isTerminal: {
      stdin: Deno.stdin.isTerminal(),
      stdout: Deno.stdout.isTerminal(),
      stderr: Deno.stderr.isTerminal(),
    },
    ask: (question) => prompt(question),
  };
  try {
    const columns = Deno.consoleSize().columns;
    if (columns) io.columns = columns;
  } catch {
    // Not a terminal: no width.
  }
  return io;
}

/**
 * The IO of an in-process call that passed nothing: output is discarded, no environment, no stdin,
 * no terminal. `main(argv, io)` fills what its caller left out from here.
 */
export function silentIo(): CliIo {
  const discard: CliWriter = { write: () => {} };
  return {
    stdout: discard,
    stderr: discard,
    stdin: null,
    env: {},
    cwd: Deno.cwd(),
    isTerminal: { stdin: false, stdout: false, stderr: false },
  };
}

/** `io` completed from {@linkcode silentIo}. */
export function fullIo(io: Partial<CliIo>): CliIo {
  return { ...silentIo(), ...io };
}

/**
 * The user's directory: `deno task` runs commands in the folder of deno.json and says where the
 * user stands in `INIT_CWD`; relative paths resolve there.
 */
export function userDirOf(io: Pick<CliIo, "cwd" | "env">): string {
  return resolve(io.cwd, io.env.INIT_CWD || ".");
}

/** Whether `stream` may get ANSI colours: a terminal, `NO_COLOR` unset or empty, not `TERM=dumb`. */
export function colorOn(
  io: Pick<CliIo, "env" | "isTerminal">,
  stream: "stdout" | "stderr",
): boolean {
  const noColor = io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== "";
  return io.isTerminal[stream] && !noColor && io.env.TERM !== "dumb";
}

/** A writer over a file that writes everything, and ignores a reader that went away (`| head`). */
export function writerFor(file: { writeSync(p: Uint8Array): number }): CliWriter {
  const encoder = new TextEncoder();
  return {
    write(text) {
      const bytes = encoder.encode(text);
      try {
        let written = 0;
        while (written < bytes.length) written += file.writeSync(bytes.subarray(written));
      } catch (error) {
        if (!(error instanceof Deno.errors.BrokenPipe)) throw error;
      }
    },
  };
}
