/**
 * Ctrl-C and SIGTERM for every stepflow command line: the first one cancels the work cleanly (the
 * run stops at its next safe point, kills the processes it started, saves what it has and prints
 * its result); a second one quits at once. SIGTERM — what `timeout`, `kill`, systemd, Docker and
 * CI send — is treated exactly as Ctrl-C, with its own exit code (143 instead of 130).
 *
 * @module
 */
import { pgWaitInFlight } from "../../store/pg_connection.ts";
import { EXIT_CODES } from "./exit_codes.ts";
import { exitProcess, QUIT_FLUSH_MS } from "./telemetry_export.ts";

/**
 * How long after the first Ctrl-C another SIGINT still counts as the same Ctrl-C. Under
 * `deno task` one Ctrl-C can reach the process twice within a millisecond or two (from the terminal
 * and forwarded by `deno task`); a person pressing Ctrl-C again takes far longer than this.
 */
export const INTERRUPT_GRACE_MS = 500;

/** What {@linkcode createInterruptHandler} does on each Ctrl-C. */
export interface InterruptActions {
  /** The first Ctrl-C: cancel the run (it still prints its result). */
  cancel(): void;
  /** A second Ctrl-C, at least `graceMs` later: quit at once. */
  quit(): void;
  /** Clock in ms (default `performance.now`). */
  now?: () => number;
  /** The window in which a repeated SIGINT is the same Ctrl-C (default {@linkcode INTERRUPT_GRACE_MS}). */
  graceMs?: number;
}

/**
 * The SIGINT handler of the CLIs: the first Ctrl-C cancels, a SIGINT within `graceMs` of it is the
 * same key press delivered twice and is ignored, a later one quits.
 *
 * @example
 * ```ts
 * import { createInterruptHandler } from "./interrupt.ts";
 * const onSigint = createInterruptHandler({ cancel: () => {}, quit: () => Deno.exit(130) });
 * ```
 */
export function createInterruptHandler(actions: InterruptActions): () => void {
  const now = actions.now ?? (() => performance.now());
  const grace = actions.graceMs ?? INTERRUPT_GRACE_MS;
  let firstAt: number | undefined;
  return () => {
    const at = now();
    if (firstAt === undefined) {
      firstAt = at;
      actions.cancel();
    } else if (at - firstAt >= grace) {
      actions.quit();
    }
  };
}

/**
 * After Ctrl-C, a wait on the database older than this means the server is not answering: the
 * command stops at once instead of waiting out the connect or statement timeout. A healthy server
 * answers stepflow's statements in milliseconds.
 */
export const DATABASE_STALL_MS = 500;

/**
 * Watches the process's waits on PostgreSQL after a cancel: once one has lasted
 * {@linkcode DATABASE_STALL_MS}, calls `quit` with the server that did not answer. Returns the
 * function that stops watching.
 */
export function quitWhenDatabaseStalls(
  quit: (displayUrl: string, waitedMs: number) => void,
  pollMs = 100,
): () => void {
  const check = () => {
    const wait = pgWaitInFlight();
    if (!wait) return;
    const waited = performance.now() - wait.since;
    if (waited >= DATABASE_STALL_MS) quit(wait.displayUrl, waited);
  };
  const timer = setInterval(check, pollMs);
  // Never keeps the process alive by itself.
  Deno.unrefTimer(timer);
  check();
  return () => clearInterval(timer);
}

/** Options of {@linkcode listenForInterrupt}. */
export interface InterruptOptions {
  /** Printed on stderr at the first Ctrl-C (say what stops, and that a second Ctrl-C quits). */
  message: string;
  /** The abort reason the work sees (default: the standard `AbortError`). */
  reason?: unknown;
  /** Also stop on these signals (SIGINT and SIGTERM always stop). */
  alsoOn?: readonly Deno.Signal[];
  /** The exit code of a second signal (default 128 + its number: 130 for SIGINT, 143 for SIGTERM). */
  quitCode?: number;
}

/** What {@linkcode listenForInterrupt} gives: the signal to pass as `io.signal`, and its removal. */
export interface InterruptListener {
  /** Aborted at the first Ctrl-C or SIGTERM. */
  readonly signal: AbortSignal;
  /** The signal that cancelled the work, once one did. */
  readonly by: Deno.Signal | undefined;
  /**
   * The exit code to end with, from the command's: 130 ("cancelled with Ctrl-C") becomes 143 when
   * SIGTERM cancelled the work; any other code is kept.
   */
  exitCode(code: number): number;
  /** Removes the signal listeners. */
  [Symbol.dispose](): void;
}

/**
 * Listens for Ctrl-C and SIGTERM on the real process with {@linkcode createInterruptHandler}: the
 * first prints `message` (after "SIGTERM: " for a SIGTERM) and aborts `signal`; a second one (after
 * the grace window) exits with `quitCode`.
 * A command that is (or starts) waiting on a PostgreSQL server that does not answer exits with
 * `quitCode` at once after the first: nothing can be saved to a silent server, and whatever it
 * committed before stays (a run resumes from its last committed iteration).
 * Where signals are unavailable, Ctrl-C ends the process directly.
 */
export function listenForInterrupt(options: InterruptOptions): InterruptListener {
  const controller = new AbortController();
  let unwatch: (() => void) | undefined;
  let by: Deno.Signal | undefined;
  let latest: Deno.Signal = "SIGINT";
  const quitCode = () => options.quitCode ?? signalExitCode(by ?? latest);
  const handler = createInterruptHandler({
    cancel: () => {
      by = latest;
      const message = by === "SIGINT" || !options.message
        ? options.message
        : `${options.message.startsWith("\n") ? "\n" : ""}${by}: ${options.message.trimStart()}`;
      if (message) Deno.stderr.writeSync(new TextEncoder().encode(message));
      controller.abort(options.reason);
      unwatch = quitWhenDatabaseStalls((displayUrl, waitedMs) => {
        Deno.stderr.writeSync(
          new TextEncoder().encode(
            `stopped: the PostgreSQL server at ${displayUrl} has not answered for ${
              (waitedMs / 1000).toFixed(1)
            } s; quitting without waiting for it (what it committed stays).\n`,
          ),
        );
        void exitProcess(quitCode(), QUIT_FLUSH_MS);
      });
    },
    // Spans already ended still reach the collector (a bounded wait); the run's own are cut short.
    quit: () => void exitProcess(options.quitCode ?? signalExitCode(latest), QUIT_FLUSH_MS),
  });
  const installed: [Deno.Signal, () => void][] = [];
  for (const name of new Set<Deno.Signal>(["SIGINT", "SIGTERM", ...(options.alsoOn ?? [])])) {
    const listener = () => {
      latest = name;
      handler();
    };
    try {
      Deno.addSignalListener(name, listener);
      installed.push([name, listener]);
    } catch {
      // Not every platform delivers every signal.
    }
  }
  return {
    signal: controller.signal,
    get by() {
      return by;
    },
    exitCode: (code) =>
      code === EXIT_CODES.interrupted && by === "SIGTERM" ? EXIT_CODES.terminated : code,
    [Symbol.dispose]() {
      unwatch?.();
      for (const [name, listener] of installed) Deno.removeSignalListener(name, listener);
    },
  };
}

/** The conventional exit code of a process ended by `signal` (128 + its number). */
function signalExitCode(signal: Deno.Signal): number {
  return signal === "SIGTERM" ? EXIT_CODES.terminated : EXIT_CODES.interrupted;
}
