/**
 * Live progress of a QPlan run, one line per event (works on any stream, terminal or not): the one
 * line renderer of the shared events ({@linkcode createProgressLines}), configured for QPlan's
 * line-at-a-time writers. The CLI writes it to stderr.
 *
 * @module
 */
import type { ExecutorEvents } from "../events/types.ts";
import { createProgressLines } from "../events/progress_lines.ts";

/** Options of {@linkcode createProgressPrinter}. */
export interface ProgressOptions {
  /** Include a short preview of each step's result (default true). */
  results?: boolean;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Event handlers that print progress lines (nested steps indented by their depth) such as:
 *
 * ```text
 * [00:00.000] run r-1 started: "Numbers", 2 steps
 * [00:00.001] step load #1 started ("Read input")
 * [00:00.003] step load #1 completed in 2 ms → {"text":"1 2 3"}
 * [00:00.003] step stats #2 started ("Compute")
 * [00:00.004] step stats #2 error [QPLAN_RUNTIME] Module 'math' failed: …
 * [00:00.004] step stats #2 retry 1: onError retry after [QPLAN_RUNTIME] Module 'math' failed: …
 * [00:00.015] run error: …
 * ```
 *
 * `write` receives each line without its line break.
 *
 * @example
 * ```ts
 * import { createProgressPrinter } from "./progress.ts";
 * import { runScript } from "./run_script.ts";
 * await runScript('step id="a" { var 1 -> x }', {
 *   events: createProgressPrinter((line) => console.error(line)),
 * });
 * ```
 */
export function createProgressPrinter(
  write: (line: string) => void,
  options: ProgressOptions = {},
): ExecutorEvents {
  return createProgressLines({
    write: (text) => write(text.endsWith("\n") ? text.slice(0, -1) : text),
    ...(options.now ? { now: options.now } : {}),
    ...(options.results !== undefined ? { results: options.results } : {}),
  }).events;
}
