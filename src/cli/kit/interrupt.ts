/**
 * Ctrl-C for every stepflow command line: the first one cancels the work cleanly (the run stops at
 * its next safe point, saves what it has and prints its result); a second one quits at once.
 *
 * @module
 */
import { pgWaitInFlight } from "../../store/pg_connection.ts";
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
  /** Also stop on these signals (e.g. `SIGTERM` for a worker). */
  alsoOn?: readonly Deno.Signal[];
  /** The exit code of a second Ctrl-C (default 130). */
  quitCode?: number;
}

/** What {@linkcode listenForInterrupt} gives: the signal to pass as `io.signal`, and its removal. */
export interface InterruptListener {
  /** Aborted at the first Ctrl-C. */
  readonly signal: AbortSignal;
  /** Removes the signal listeners. */
  [Symbol.dispose](): void;
}

/**
 * Listens for Ctrl-C on the real process with {@linkcode createInterruptHandler}: the first prints
 * `message` and aborts `signal`; a second one (after the grace window) exits with `quitCode`.
 * A command that is (or starts) waiting on a PostgreSQL server that does not answer exits with
 * `quitCode` at once after the first: nothing can be saved to a silent server, and whatever it
 * committed before stays (a run resumes from its last committed iteration).
 * Where signals are unavailable, Ctrl-C ends the process directly.
 */
export function listenForInterrupt(options: InterruptOptions): InterruptListener {
  const controller = new AbortController();
  let unwatch: (() => void) | undefined;
  const handler = createInterruptHandler({
    cancel: () => {
      if (options.message) Deno.stderr.writeSync(new TextEncoder().encode(options.message));
      controller.abort(options.reason);
      unwatch = quitWhenDatabaseStalls((displayUrl, waitedMs) => {
        Deno.stderr.writeSync(
          new TextEncoder().encode(
            `stopped: the PostgreSQL server at ${displayUrl} has not answered for ${
              (waitedMs / 1000).toFixed(1)
            } s; quitting without waiting for it (what it committed stays).\n`,
          ),
        );
        void exitProcess(options.quitCode ?? 130, QUIT_FLUSH_MS);
      });
    },
    // Spans already ended still reach the collector (a bounded wait); the run's own are cut short.
    quit: () => void exitProcess(options.quitCode ?? 130, QUIT_FLUSH_MS),
  });
  const installed: Deno.Signal[] = [];
  for (const name of ["SIGINT", ...(options.alsoOn ?? [])] as Deno.Signal[]) {
    try {
      Deno.addSignalListener(name, handler);
      installed.push(name);
    } catch {
      // Not every platform delivers every signal.
    }
  }
  return {
    signal: controller.signal,
    [Symbol.dispose]() {
      unwatch?.();
      for (const name of installed) Deno.removeSignalListener(name, handler);
    },
  };
}
