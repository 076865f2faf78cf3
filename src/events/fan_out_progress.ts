/**
 * The progress lines of a fan-out step: where it stands (`12/40 done · 4 running · 1 failed`) and
 * the line of a child that ended.
 *
 * @module
 */
import type { FanOutReport } from "./types.ts";
import { firstLine, formatCount } from "./line_text.ts";

/**
 * Where a fan-out step stands: `12/40 done · 4 running · 1 failed` (waiting children, when any:
 * `· 2 waiting`).
 *
 * @example
 * ```ts
 * import { fanOutCounts } from "./fan_out_progress.ts";
 * fanOutCounts({ agent: "a", total: 40, completed: 11, failed: 1, running: 4, waiting: 0, active: [] });
 * // "12/40 done · 4 running · 1 failed"
 * ```
 */
export function fanOutCounts(report: FanOutReport): string {
  const done = report.completed + report.failed;
  const parts = [`${done}/${report.total} done`, `${report.running} running`];
  if (report.failed > 0) parts.push(`${report.failed} failed`);
  if (report.waiting > 0) parts.push(`${report.waiting} waiting`);
  return parts.join(" · ");
}

/**
 * Whether a fan-out report gets a line: a child that ended — every one with `verbose`, else only one
 * that failed (a child cancelled with its step or run is not news).
 */
export function childEndShown(
  report: FanOutReport,
  verbose: boolean,
): { text: string; ok: boolean } | undefined {
  const status = report.change?.kind === "ended" ? report.change.status : undefined;
  if (status === undefined) return undefined;
  const ok = status === "completed";
  if (!verbose && (ok || status === "cancelled")) return undefined;
  return { text: fanOutEndLine(report), ok };
}

/**
 * The line of a fan-out child that ended: `item N (src/a.ts) completed in 1.2s · 300 tokens ·
 * child RUN_ID (12/40 done · 4 running)`.
 */
export function fanOutEndLine(report: FanOutReport): string {
  const change = report.change!;
  const took = change.durationMs !== undefined
    ? ` in ${(change.durationMs / 1000).toFixed(1)}s`
    : "";
  const usage = change.usage;
  const tokens = usage && usage.inputTokens + usage.outputTokens > 0
    ? ` · ${formatCount(usage.inputTokens + usage.outputTokens)} tokens`
    : "";
  const child = change.runId ? ` · child ${change.runId}` : "";
  const why = change.error ? `: ${firstLine(change.error)}` : "";
  return `item ${change.index + 1} (${change.item}) ${
    change.status ?? "ended"
  }${took}${why}${tokens}${child} (${fanOutCounts(report)})`;
}
