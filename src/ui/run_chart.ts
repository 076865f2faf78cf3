/**
 * A run's timing as a {@linkcode timelineChart}: one bar per iteration (group `steps`), under it
 * its agent step's child run (group `child runs`, linking the child's page) and its tool calls
 * (group `tool calls`), each from its start to its end as the run log records them. Iteration bars
 * link their row of the page's timeline.
 *
 * @module
 */
import { childRunOf, endNode, type IterationRow, type Timeline } from "./timeline.ts";
import { type ChartRow, timelineChart } from "./timeline_chart.ts";
import { callState } from "./tool_calls_view.ts";
import type { ToolCallView } from "./tool_calls.ts";
import { runHref } from "./display_format.ts";
import { oneLine, toolCallTarget } from "../events/tool_call_line.ts";
import { type Html, html as h } from "./html.ts";

/** How {@linkcode runChartRows} reads a timeline. */
export interface RunChartOptions {
  /** A process drives the run and the page follows it: an unfinished iteration or call runs. */
  live: boolean;
  /** Where an iteration's bars link (default: its row of this page, `#row-N`). */
  rowHref?: (index: number) => string;
  /** The chart's id in the page (default `run-chart`). */
  id?: string;
}

/** Characters of a call's target (or arguments) in its bar's label. */
const CALL_LABEL_ARGS = 40;

/** The longest arguments text read as JSON for a label (the log keeps excerpts of 2,000). */
const MAX_PARSED_ARGS = 20_000;

/**
 * The chart rows of a run's timeline: each iteration, then its child run and its tool calls.
 *
 * An iteration ended with its `step_end` (failed when it recorded an error). One that did not end:
 * running while the page follows the run (the newest one), `waiting` when the run waits on it
 * (`waited` once answered: the run went on in an iteration of its own), otherwise stopped where
 * its last line was logged — `failed` with an error, how the run ended when it ended then
 * (`cancelled`, `timeout`…), else `interrupted` (killed; after a resume it runs again as a row of
 * its own).
 */
export function runChartRows(timeline: Timeline, options: RunChartOptions): ChartRow[] {
  const out: ChartRow[] = [];
  const current = timeline.current;
  for (const row of timeline.rows) {
    if (row.kind !== "iteration") continue;
    const link = options.rowHref?.(row.index) ?? `#row-${row.index}`;
    const status = iterationStatus(row, timeline, options.live && row === current);
    const end = row.endTs ?? (status === "running" ? undefined : row.lastTs);
    out.push({
      label: `#${row.iteration ?? "?"} ${row.stepId}`,
      start: row.ts,
      ...(end !== undefined ? { end } : {}),
      status,
      link,
      group: "steps",
      ...(row.attempt && row.attempt > 1 ? { detail: `attempt ${row.attempt}` } : {}),
    });
    const child = childRunOf(row);
    if (child !== undefined) {
      const reason = (row.end?.child as { completionReason?: unknown } | undefined)
        ?.completionReason;
      out.push({
        label: `child run ${child}`,
        start: row.childTs ?? row.ts,
        ...(end !== undefined ? { end } : {}),
        status: typeof reason === "string" ? childStatus(reason) : status,
        link: runHref(child),
        group: "child runs",
        depth: 1,
      });
    }
    for (const call of row.calls?.list ?? []) out.push(callRow(call, options.live, link));
  }
  return out;
}

/**
 * The run's timing chart (the run page's "Timing" section; nothing for a run without
 * iterations). Open bars are drawn up to now while the run is followed live, else up to the
 * newest line.
 */
export function runChart(runId: string, timeline: Timeline, options: RunChartOptions): Html {
  const rows = runChartRows(timeline, options);
  const id = options.id ?? "run-chart";
  const chart = timelineChart(rows, {
    id,
    title: `Timing of run ${runId}: its iterations, child runs and tool calls`,
    ...(options.live ? { now: Date.now() } : {}),
  });
  return chart === "" ? h`<p class="note" id="${id}">The run has no iterations yet.</p>` : chart;
}

function iterationStatus(row: IterationRow, timeline: Timeline, running: boolean): string {
  const failed = row.errors.length > 0 || typeof row.end?.error === "string";
  if (row.end) return failed ? "failed" : "completed";
  if (failed) return "failed";
  if (row === timeline.current && timeline.waiting) return "waiting";
  // It stopped to wait and was answered: the run went on in an iteration of its own.
  if (row.waited) return "waited";
  if (running && !timeline.runEnd) return "running";
  if (row === timeline.current && timeline.runEnd) {
    const node = endNode(String(timeline.runEnd.reason ?? ""));
    return node === "done" ? "completed" : node;
  }
  return "interrupted";
}

/** A child run's status from how its drive ended (`waiting` included). */
function childStatus(reason: string): string {
  if (reason === "waiting") return "waiting";
  const node = endNode(reason);
  return node === "done" ? "completed" : node;
}

function callRow(call: ToolCallView, live: boolean, link: string): ChartRow {
  const state = callState(call, live);
  const status = state === "ok"
    ? "completed"
    : state === "error" || state === "invalid"
    ? "failed"
    : state === "asking"
    ? "waiting"
    : state === "unfinished"
    ? "interrupted"
    : state;
  // A call logged only when it finished started its duration before.
  const onlyFinished = call.endTs !== undefined && call.endTs === call.ts;
  const endMs = call.endTs !== undefined ? Date.parse(call.endTs) : NaN;
  const start = onlyFinished && call.durationMs !== undefined && Number.isFinite(endMs)
    ? endMs - call.durationMs
    : call.ts;
  const end = call.endTs ??
    (state === "running" || state === "asking" ? undefined : call.ts);
  return {
    label: callLabel(call),
    start,
    ...(end !== undefined ? { end } : {}),
    status,
    link,
    group: "tool calls",
    depth: 1,
  };
}

/** `Bash npm test`, `Read src/app.ts`: the tool and what it acts on (else its arguments, cut). */
function callLabel(call: ToolCallView): string {
  const args = call.args ?? "";
  let target = "";
  // The log keeps arguments as JSON excerpts: a whole one names its path or command.
  if (args.length <= MAX_PARSED_ARGS) {
    try {
      const parsed = JSON.parse(args);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
        target = toolCallTarget({ args: parsed }, CALL_LABEL_ARGS);
      }
    } catch { /* an excerpt: shown as it is */ }
  }
  if (!target && args) target = oneLine(args, CALL_LABEL_ARGS);
  return target ? `${call.tool} ${target}` : call.tool;
}
