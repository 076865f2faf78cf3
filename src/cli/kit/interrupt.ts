/**
 * Ctrl-C for every stepflow command line: the first one cancels the work cleanly (the run stops at
 * its next safe point, saves what it has and prints its result); a second one quits at once.
 *
 * @module
 */

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
 * Where signals are unavailable, Ctrl-C ends the process directly.
 */
export function listenForInterrupt(options: InterruptOptions): InterruptListener {
  const controller = new AbortController();
  const handler = createInterruptHandler({
    cancel: () => {
      if (options.message) Deno.stderr.writeSync(new TextEncoder().encode(options.message));
      controller.abort(options.reason);
    },
    quit: () => Deno.exit(options.quitCode ?? 130),
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
      for (const name of installed) Deno.removeSignalListener(name, handler);
    },
  };
}
