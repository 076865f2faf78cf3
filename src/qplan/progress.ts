/**
 * Live progress of a run as a tree of step paths, one line per event (works on any stream,
 * terminal or not). The CLI writes it to stderr.
 *
 * @module
 */
import type { ExecutorEvents, StepInfo } from "../events/types.ts";
import type { QPlanPlanInfo, QPlanRunContext } from "./step/step_events.ts";

/** Options of {@linkcode createProgressPrinter}. */
export interface ProgressOptions {
  /** Include a short preview of each step's result (default true). */
  results?: boolean;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Event handlers that print progress lines such as:
 *
 * ```text
 * ▶ run r-1: 3 steps
 *   ● Read input [load]
 *   ✓ Read input [load] 2 ms → {"text":"1 2 3"}
 *   ● Compute [stats]
 *   ✗ Compute [stats]: Module 'math' failed: …
 *   ↻ Compute [stats] retry 1
 * ■ error after 15 ms: …
 * ```
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
  const now = options.now ?? (() => performance.now());
  const showResults = options.results ?? true;
  const starts = new Map<string, number>();
  let runStart = now();
  const indent = (info: StepInfo) => "  ".repeat(Number(info.depth ?? info.path.length - 1) + 1);
  const label = (info: StepInfo) =>
    info.desc && info.desc !== info.stepId ? `${info.desc} [${info.stepId}]` : info.stepId;
  const elapsed = (info: StepInfo) => {
    const t = starts.get(info.stepId);
    return t === undefined ? "" : ` ${Math.round(now() - t)} ms`;
  };
  return {
    onPlanStart(plan) {
      runStart = now();
      const p = plan as QPlanPlanInfo;
      const title = p.planMeta?.title ? ` "${p.planMeta.title}"` : "";
      write(`▶ run ${p.runId}${title}: ${p.totalSteps} step${p.totalSteps === 1 ? "" : "s"}`);
    },
    onStepStart(info) {
      starts.set(info.stepId, now());
      write(`${indent(info)}● ${label(info)}`);
    },
    onStepEnd(info, result) {
      const preview = showResults && result !== undefined ? ` → ${previewOf(result)}` : "";
      write(`${indent(info)}✓ ${label(info)}${elapsed(info)}${preview}`);
    },
    onStepError(info, error) {
      write(`${indent(info)}✗ ${label(info)}: ${(error as Error)?.message ?? String(error)}`);
    },
    onStepRetry(info, attempt) {
      write(`${indent(info)}↻ ${label(info)} retry ${attempt}`);
    },
    onStepJump(info, target) {
      write(`${indent(info)}↷ ${label(info)} jumps to ${target}`);
    },
    onPause() {
      write("⏸ paused");
    },
    onResume() {
      write("▶ resumed");
    },
    onAbort() {
      write("■ abort requested");
    },
    onTimeout() {
      write("⏱ time limit reached");
    },
    onPlanEnd(_plan, ctx) {
      const c = ctx as QPlanRunContext;
      const ms = Math.round(now() - runStart);
      const why = c.error ? `: ${c.error.message}` : "";
      write(`■ ${c.status ?? "ended"} after ${ms} ms${why}`);
    },
  };
}

function previewOf(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string"
      ? JSON.stringify(value)
      : JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  text = text.replace(/\s+/g, " ");
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
