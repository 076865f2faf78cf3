/**
 * The eval's report: a table with one row per case (result, pass rate over its runs, steps,
 * tokens, cost, time, why it failed), a summary line, and the JSON document for CI.
 *
 * @module
 */
import type { EvalCase } from "./cases.ts";
import type { EvalRunOutcome } from "./run_eval.ts";
import { costOrNull } from "../../token_counts.ts";

/** One case's runs, summed up. */
export interface EvalCaseSummary {
  /** The case's name. */
  name: string;
  /** Runs measured (cancelled ones left out). */
  runs: number;
  /** Runs that passed. */
  passed: number;
  /** `passed / runs` (0 when no run was measured). */
  passRate: number;
  /** `pass` (every run), `fail` (none), `flaky` (some), `not run`. */
  result: "pass" | "fail" | "flaky" | "not run";
  /** Iterations, averaged over the runs. */
  steps: number;
  /** Tokens summed over the runs; `unknownCalls` counts calls without usage. */
  tokens: { input: number; output: number; unknownCalls: number };
  /**
   * Cost summed over the runs (US dollars) of the calls that could be priced; `null` when none
   * could (unknown, never 0).
   */
  costUsd: number | null;
  /** Model calls over the runs. */
  calls: number;
  /** Calls whose cost is unknown: `costUsd` is a lower bound when this is above 0. */
  callsWithoutCost: number;
  /** Wall time, averaged over the runs (ms). */
  durationMs: number;
  /** The failures of the first failed run. */
  failures: string[];
  /** The runs' ids in the run store. */
  runIds: string[];
}

/** The whole eval, summed up. */
export interface EvalSummary {
  /** The agent. */
  agent: string;
  /** The group its runs were recorded in (`--runs --group`, the dashboard's `/?group=`). */
  group: string;
  /** Runs measured. */
  runs: number;
  /** Runs that passed. */
  passed: number;
  /** `passed / runs`. */
  passRate: number;
  /** The `--min-pass` bound. */
  minPass: number;
  /** `passRate >= minPass` and the eval was not interrupted. */
  ok: boolean;
  /** Runs planned (cases × runs per case). */
  planned: number;
  /** `true` when Ctrl-C stopped the eval before every run was made. */
  interrupted: boolean;
  /** Tokens over every run. */
  tokens: { input: number; output: number; unknownCalls: number };
  /**
   * Cost over every run of the group (US dollars) of the calls that could be priced; `null` when
   * none could.
   */
  costUsd: number | null;
  /** Model calls over every run. */
  calls: number;
  /** Calls whose cost is unknown. */
  callsWithoutCost: number;
  /** Wall time of the whole eval (ms). */
  durationMs: number;
  /** Per case. */
  cases: EvalCaseSummary[];
}

/** Sums up the outcomes per case and overall. */
export function summarize(
  agent: string,
  cases: EvalCase[],
  outcomes: EvalRunOutcome[],
  options: {
    group: string;
    minPass: number;
    planned: number;
    interrupted: boolean;
    durationMs: number;
  },
): EvalSummary {
  const measured = outcomes.filter((o) => !o.cancelled);
  const perCase = cases.map((c) =>
    caseSummary(c.name, measured.filter((o) => o.caseName === c.name))
  );
  const passed = measured.filter((o) => o.passed).length;
  const passRate = measured.length === 0 ? 0 : passed / measured.length;
  const tokens = { input: 0, output: 0, unknownCalls: 0 };
  const cost = costOver(measured);
  for (const o of measured) {
    tokens.input += o.tokens.input;
    tokens.output += o.tokens.output;
    tokens.unknownCalls += o.tokens.unknownCalls;
  }
  return {
    agent,
    group: options.group,
    runs: measured.length,
    passed,
    passRate,
    minPass: options.minPass,
    ok: !options.interrupted && measured.length > 0 && passRate >= options.minPass,
    planned: options.planned,
    interrupted: options.interrupted,
    tokens,
    ...cost,
    durationMs: options.durationMs,
    cases: perCase,
  };
}

function caseSummary(name: string, runs: EvalRunOutcome[]): EvalCaseSummary {
  const passed = runs.filter((r) => r.passed).length;
  const n = runs.length;
  const tokens = { input: 0, output: 0, unknownCalls: 0 };
  for (const r of runs) {
    tokens.input += r.tokens.input;
    tokens.output += r.tokens.output;
    tokens.unknownCalls += r.tokens.unknownCalls;
  }
  return {
    name,
    runs: n,
    passed,
    passRate: n === 0 ? 0 : passed / n,
    result: n === 0 ? "not run" : passed === n ? "pass" : passed === 0 ? "fail" : "flaky",
    steps: n === 0 ? 0 : runs.reduce((s, r) => s + r.steps, 0) / n,
    tokens,
    ...costOver(runs),
    durationMs: n === 0 ? 0 : runs.reduce((s, r) => s + r.durationMs, 0) / n,
    failures: runs.find((r) => !r.passed)?.failures ?? [],
    runIds: runs.flatMap((r) => (r.runId ? [r.runId] : [])),
  };
}

/** The cost of `runs`: `null` when none of their calls could be priced. */
function costOver(
  runs: readonly EvalRunOutcome[],
): { costUsd: number | null; calls: number; callsWithoutCost: number } {
  const known = runs.reduce((s, r) => s + r.costUsd, 0);
  const calls = runs.reduce((s, r) => s + r.calls, 0);
  const callsWithoutCost = runs.reduce((s, r) => s + r.unknownCostCalls, 0);
  return {
    costUsd: costOrNull({ costUsd: known, calls, callsWithoutCost }),
    calls,
    callsWithoutCost,
  };
}

/** A cost as the report writes it: `$0.0123`, `unknown`, `$0.0123+?`, `-` with no call. */
function costText(c: { costUsd: number | null; calls: number; callsWithoutCost: number }): string {
  if (c.calls === 0) return "-";
  if (c.costUsd === null) return "unknown";
  return `$${c.costUsd.toFixed(4)}${c.callsWithoutCost > 0 ? "+?" : ""}`;
}

/** The table and the summary lines, as printed on stdout. */
export function formatEvalReport(summary: EvalSummary): string {
  const rows = summary.cases.map((c) => [
    c.name,
    c.result,
    `${c.passed}/${c.runs}`,
    c.runs === 0 ? "-" : trimNumber(c.steps),
    tokenText(c.tokens),
    costText(c),
    c.runs === 0 ? "-" : seconds(c.durationMs),
    c.failures.join("; "),
  ]);
  const header = ["case", "result", "pass", "steps", "tokens", "cost", "time", "why"];
  const widths = header.map((h, i) =>
    i === header.length - 1 ? 0 : Math.max(h.length, ...rows.map((r) => [...r[i]].length))
  );
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]))).join("  ")
      .trimEnd();
  const percent = (r: number) => `${(r * 100).toFixed(r === 1 || r === 0 ? 0 : 1)}%`;
  const verdict = summary.ok ? "PASS" : "FAIL";
  const lines = [
    line(header),
    ...rows.map(line),
    "",
    `${verdict}: ${summary.passed} of ${summary.runs} runs passed (${
      percent(summary.passRate)
    }; --min-pass ${percent(summary.minPass)}) · ${summary.cases.length} cases · tokens ${
      tokenText(summary.tokens)
    } · cost of group ${summary.group}: ${costText(summary)} · ${seconds(summary.durationMs)}`,
  ];
  if (summary.interrupted) {
    lines.push(
      `Interrupted: ${summary.runs} of ${summary.planned} runs measured; the rest were not run.`,
    );
  }
  return lines.join("\n");
}

function tokenText(t: { input: number; output: number; unknownCalls: number }): string {
  const total = t.input + t.output;
  if (total === 0 && t.unknownCalls > 0) return "unknown";
  return `${total}${t.unknownCalls > 0 ? "+?" : ""}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

function trimNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}
