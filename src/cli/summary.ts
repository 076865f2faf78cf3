/**
 * The human-readable reports `run-agent` prints on stdout: the result of a run (outcome, history
 * table, output) and the verdict of `--validate`.
 *
 * @module
 */
import type { StepFlowResult } from "../flow/types.ts";
import { formatUsage, palette } from "./progress.ts";
import { noteText } from "../events/progress_lines.ts";

/** Options of {@linkcode formatResult}. */
export interface FormatResultOptions {
  /** The agent's name, for the headline. */
  agentName?: string;
  /** ANSI colours. */
  color?: boolean;
  /** Wall-clock duration of the run in ms, when known. */
  elapsedMs?: number;
}

/**
 * The result of a run as text: headline (success, completion reason, final step, iterations),
 * the error when it failed, a history table (step, attempt, intent, transition, next, time, note) and
 * the output pretty-printed.
 *
 * @example
 * ```ts ignore
 * import { formatResult } from "./summary.ts";
 * console.log(formatResult(result, { agentName: "issue-solver" }));
 * ```
 */
export function formatResult(result: StepFlowResult, options: FormatResultOptions = {}): string {
  const c = palette(options.color ?? false);
  const lines: string[] = [];
  const it = `${result.iterations} iteration${result.iterations === 1 ? "" : "s"}`;
  const who = options.agentName ? `${options.agentName} ` : "";
  // A cancelled run did not fail: the user stopped it, and it can be continued. Nor did a declined
  // one: a person decided to stop it (shown plain, neither green nor red).
  const declined = result.completionReason === "declined" ? result.declined : undefined;
  const headline = result.success
    ? c.green(`✓ ${who}succeeded: ${result.completionReason} at ${result.finalStepId} after ${it}`)
    : result.completionReason === "cancelled"
    ? c.yellow(`■ ${who}cancelled at ${result.finalStepId} after ${it}`)
    : result.completionReason === "declined"
    ? `■ ${who}declined${declined ? ` by ${declined.by}` : ""} at ${result.finalStepId} after ${it}`
    : c.red(`✗ ${who}failed: ${result.completionReason} at ${result.finalStepId} after ${it}`);
  lines.push(headline);
  const note = noteText(declined?.note);
  if (note) lines.push(`  note: ${note}`);
  const facts = [`run ${result.runId}`];
  if (options.elapsedMs !== undefined) facts.push(`${(options.elapsedMs / 1000).toFixed(1)}s`);
  const usage = formatUsage(result.usage);
  if (usage) facts.push(usage);
  lines.push(c.dim(`  ${facts.join(" · ")}`));
  if (result.error && result.completionReason !== "cancelled") {
    lines.push(
      "",
      c.red(
        `Error ${result.error.code}${
          result.error.stepId ? ` at step ${result.error.stepId}` : ""
        }:`,
      ),
    );
    lines.push(indent(result.error.message, 2));
  }
  if (result.state.history.length > 0) {
    lines.push("", "History:", indent(historyTable(result), 2));
  }
  if (result.output !== undefined) {
    lines.push("", "Output:", indent(prettyValue(result.output), 2));
  }
  return lines.join("\n");
}

/** The history as an aligned table, one row per iteration. */
export function historyTable(result: StepFlowResult): string {
  const header = ["#", "step", "attempt", "intent", "transition", "next", "time", "note"];
  const rows = result.state.history.map((h) => [
    String(h.iteration),
    h.stepId,
    String(h.attempt),
    h.intent ?? "-",
    h.transition,
    h.nextStepId ?? "-",
    formatDuration(h.durationMs),
    noteOf(h.checkResult, h.error, featureNote(h)),
  ]);
  const widths = header.map((_, i) => Math.max(header[i].length, ...rows.map((r) => r[i].length)));
  const render = (cells: string[]) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]))).join("  ")
      .trimEnd();
  return [render(header), ...rows.map(render)].join("\n");
}

/** What `--validate` reports. */
export interface ValidationReport {
  /** The agent's name (or the name it was asked by). */
  agent: string;
  /** The agent folder, for display. */
  dir: string;
  /** Problems (empty when valid). */
  problems: readonly string[];
  /** Warnings. */
  warnings: readonly string[];
  /** Number of steps, when the definition loaded. */
  steps?: number;
  /** The entry step, when the definition loaded. */
  entryStepId?: string;
  /** Agent steps and the child agent each runs (loaded and checked with the agent). */
  agentSteps?: { stepId: string; agent: string; dir: string }[];
}

/** The `--validate` report: `OK …` or every problem numbered, then every warning. */
export function formatValidation(report: ValidationReport, color = false): string {
  const c = palette(color);
  const lines: string[] = [];
  const n = report.problems.length;
  if (n === 0) {
    const facts = [
      report.steps !== undefined
        ? `${report.steps} step${report.steps === 1 ? "" : "s"}`
        : undefined,
      report.entryStepId ? `entry ${report.entryStepId}` : undefined,
    ].filter(Boolean).join(", ");
    lines.push(
      c.green(`OK: agent "${report.agent}" is valid${facts ? ` (${facts})` : ""} — ${report.dir}`),
    );
  } else {
    lines.push(
      c.red(
        `Agent "${report.agent}" is invalid: ${n} problem${n === 1 ? "" : "s"} in ${report.dir}`,
      ),
    );
    report.problems.forEach((p, i) => lines.push(numbered(i + 1, p)));
  }
  for (const step of report.agentSteps ?? []) {
    lines.push(`  agent step ${step.stepId} runs agent "${step.agent}" (${step.dir}): valid`);
  }
  const w = report.warnings.length;
  if (w > 0) {
    lines.push(c.yellow(`${w} warning${w === 1 ? "" : "s"}:`));
    report.warnings.forEach((p, i) => lines.push(numbered(i + 1, p)));
  } else if (n === 0) {
    lines.push("No warnings.");
  }
  return lines.join("\n");
}

/** A value for humans: strings as they are, everything else as indented JSON. */
export function prettyValue(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

function numbered(n: number, text: string): string {
  const prefix = `  ${n}. `;
  return prefix + text.split("\n").join(`\n${" ".repeat(prefix.length)}`);
}

/** Command steps and validator runs say what ran and how it exited. */
function featureNote(h: StepFlowResult["state"]["history"][number]): string | undefined {
  if (h.validation) {
    const v = h.validation;
    return `validator ${v.command}: ${v.ok ? "ok" : `exit ${v.exitCode}`}${
      v.pattern ? ` (${v.pattern})` : ""
    }`;
  }
  if (h.child) return `child run ${h.child.runId} (${h.child.agent}): ${h.child.completionReason}`;
  if (h.fanOut) return fanOutNote(h.fanOut);
  return h.command ? `command ${h.command.name}: exit ${h.command.exitCode}` : undefined;
}

/** `fan-out file-reviewer: 4 items, 3 completed, 1 failed`. */
function fanOutNote(f: NonNullable<StepFlowResult["state"]["history"][number]["fanOut"]>): string {
  return `fan-out ${f.agent}: ${f.total} item${f.total === 1 ? "" : "s"}, ${f.completed} completed${
    f.failed > 0 ? `, ${f.failed} failed` : ""
  }`;
}

function noteOf(
  check: { result: "ok" | "ng"; message: string } | undefined,
  error: string | undefined,
  feature?: string,
): string {
  const parts: string[] = [];
  if (feature) parts.push(feature);
  if (check) parts.push(`check ${check.result}${check.message ? `: ${check.message}` : ""}`);
  if (error) parts.push(`error: ${error}`);
  const text = parts.join("; ").replace(/\s+/g, " ");
  return text.length > 72 ? `${text.slice(0, 71)}…` : text;
}

function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, "0")}s`;
}

function indent(text: string, n: number): string {
  const pad = " ".repeat(n);
  return text.split("\n").map((line) => (line ? pad + line : line)).join("\n");
}
