/**
 * Terminal renderings of recorded runs: the run list (`stepflow runs`) and one run's history
 * (`stepflow show`).
 * Pure functions of what a store returns; the CLI only prints them.
 *
 * Long because: the two views share one set of small text helpers (colours, the table, times and
 * widths, token columns) that nothing else uses; a file of helpers apart would be imported by this
 * file alone.
 *
 * @module
 */
import type { ModelFallbackEvent } from "../events/types.ts";
import { fallbackText } from "../events/model_notice_text.ts";
import type { RunCheckpoint, RunLogEntry, RunSummary } from "./types.ts";
import { isValidRunGroup } from "./run_group.ts";
import { iterationsOf } from "./summary.ts";
import { shownStatus } from "./run_status.ts";
import { isNotEnded, isOpenStatus } from "../run_statuses.ts";
import { cacheShare, formatCost } from "../token_counts.ts";
import {
  type CommandRenderer,
  type NextStep,
  plainCommandLine,
  recordedNextStep,
} from "../invocation.ts";
import { noteText } from "../events/progress_lines.ts";
import { fanOutRows, fanOutsOf } from "./fan_out_lines.ts";

/** Options of the formatters. */
export interface FormatOptions {
  /** Use ANSI colours (default false). */
  color?: boolean;
  /**
   * How a hint prints its next step (`{ action: "resume", runId }`) as a command: the CLI passes
   * one that works where the user stands. Default: `stepflow <action> …`.
   */
  commandFor?: CommandRenderer;
}

/** Options of {@linkcode formatRunHistory}. */
export interface HistoryFormatOptions extends FormatOptions {
  /** The run's id, shown when neither the checkpoint nor the log can say it. */
  runId?: string;
  /**
   * Whether a live process drives the run (its listing's `live`): a `running` run that nobody
   * drives is shown `interrupted`, as `--runs` shows it.
   */
  live?: boolean;
  /**
   * Why the workers hold the interrupted run and how to continue it (its listing's `error`): shown
   * instead of the plain resume hint, which would stop at the same point.
   */
  held?: string;
  /**
   * An answer that fits the waiting run's question, as JSON (the CLI fills one from the step's
   * schema): the printed answer command carries it. Default: `{"decision":"allow"}` for a tool
   * call waiting for permission, else `<json>` to be filled in.
   */
  answerValue?: string;
  /** The shown status of each child run (by run id), for the list of child runs. */
  childStatus?: ReadonlyMap<string, string>;
  /**
   * How a printed command names each child run's agent (by run id), when the run id alone does not
   * find the run (its agent is not under `.agent/` where the user stands).
   */
  childAgent?: ReadonlyMap<string, string>;
}

/** A child run an agent step of a run started (its `agent_start` log line). */
export interface ChildRunEntry {
  /** The child run. */
  runId: string;
  /** Its agent: the child is recorded as a run of that agent. */
  agent: string;
  /** The parent's agent step that started it. */
  stepId: string;
  /** When the parent recorded its start (ISO). */
  startedAt: string;
}

/**
 * The child runs a run's agent steps started, in order, once each: from its log's `agent_start`
 * lines (a resumed parent continues a child, never starts it twice).
 *
 * @example
 * ```ts
 * import { childRunsOf } from "./format.ts";
 * const ts = "2026-01-01T00:00:00.000Z";
 * const children = childRunsOf([
 *   { ts, runId: "p", type: "agent_start", stepId: "review", childRunId: "c1", agent: "reviewer" },
 * ]);
 * console.log(children[0].agent); // "reviewer"
 * ```
 */
export function childRunsOf(log: readonly RunLogEntry[]): ChildRunEntry[] {
  const seen = new Set<string>();
  const out: ChildRunEntry[] = [];
  for (const line of log) {
    if (line.type !== "agent_start" || typeof line.childRunId !== "string") continue;
    if (seen.has(line.childRunId)) continue;
    seen.add(line.childRunId);
    out.push({
      runId: line.childRunId,
      agent: String(line.agent ?? "?"),
      stepId: String(line.stepId ?? "?"),
      startedAt: line.ts,
    });
  }
  return out;
}

/** Token usage as the runner records it (cumulative in `step_end` lines). */
export interface LoggedUsage {
  /** Prompt tokens. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Of `inputTokens`, those read from the prompt cache. */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the prompt cache. */
  cacheWriteTokens?: number;
  /** Cost in US dollars. */
  costUsd?: number;
  /** Backend calls. */
  calls?: number;
  /** Backend calls whose response carried no usage (their tokens are unknown). */
  callsWithoutUsage?: number;
  /** Backend calls whose cost is unknown (no usage, or no price for the model). */
  callsWithoutCost?: number;
  /** Spend counted at its worst case (attempts cut off after they were sent). */
  estimatedUsd?: number;
}

/** One history entry as recorded in a `step_end` line (the runner's `HistoryEntry`). */
export interface LoggedHistoryEntry {
  /** The step. */
  stepId: string;
  /** Run iteration. */
  iteration: number;
  /** Attempt of the step in a row. */
  attempt: number;
  /** Gate intent, when any. */
  intent?: string;
  /** How the step was left. */
  transition: string;
  /** Where the run went next. */
  nextStepId?: string;
  /** Check verdict. */
  checkResult?: { result: string; message: string };
  /** Error message. */
  error?: string;
  /** An input step's answer: who answered and when, or that the wait timed out. */
  input?: { answeredBy?: string; answeredAt?: string; timedOut?: boolean };
  /** An agent step's child run. */
  child?: { runId: string; agent: string; completionReason: string };
  /** A fan-out step's children: its agent, items, how many completed and failed. */
  fanOut?: { agent: string; total: number; completed: number; failed: number };
  /** The iteration's tool calls (the first 50) and how many more it made. */
  toolCalls?: LoggedToolCall[];
  /** Tool calls after the listed ones. */
  toolCallsOmitted?: number;
  /** The model chain's fall-throughs of the iteration's calls. */
  fallbacks?: ModelFallbackEvent[];
  /** ISO start time. */
  startedAt: string;
  /** Duration in ms. */
  durationMs: number;
}

/** One tool call as a history entry lists it (the runner's `ToolCallSummary`). */
export interface LoggedToolCall {
  /** The tool. */
  tool: string;
  /** What it acted on. */
  target?: string;
  /** `allow`, `deny` or `invalid`. */
  decision: string;
  /** Who decided. */
  decidedBy?: string;
  /** True when the model got an error. */
  isError?: boolean;
  /** Milliseconds it ran. */
  durationMs?: number;
}

/** One model call as the run log's `model_call` line records it. */
export interface LoggedModelCall {
  /** `step`, `check`, `reask`. */
  kind: string;
  /** The model it was priced by. */
  model?: string;
  /** Input plus output tokens, when reported. */
  tokens?: number;
  /** Its cost; `null` when unknown. */
  costUsd: number | null;
  /** An attempt cut off after it was sent, counted at its worst case (`estimatedUsd`). */
  estimatedUsd?: number;
}

/** One row of a run's timeline: a recorded iteration, or a resume/redrive marker. */
export type TimelineRow =
  | {
    kind: "step";
    /** The history entry. */
    entry: LoggedHistoryEntry;
    /**
     * Tokens of this iteration (from the cumulative usage in the log), when recorded; `unknownCalls`
     * counts its calls that reported no usage (their tokens are not in `input`/`output`).
     */
    tokens?: {
      input: number;
      output: number;
      unknownCalls?: number;
      /** Known cost of the iteration's calls (its child run's included), in US dollars. */
      costUsd?: number;
      /** Calls of the iteration whose cost is unknown. */
      unknownCostCalls?: number;
    };
    /** The iteration's model calls (its `model_call` lines), when it made more than one. */
    modelCalls?: LoggedModelCall[];
    /** Handoff values the step produced, when recorded. */
    handoff?: Record<string, unknown>;
  }
  | {
    kind: "marker";
    /** `run_resume` or `run_redrive`. */
    type: string;
    /** When it happened. */
    ts: string;
    /** History entries kept at that point. */
    historyLength: number;
    /** Recorded iterations dropped because their checkpoint was never written (they re-ran). */
    dropped: number;
  };

/**
 * Rebuilds a run's timeline from its log exactly as resume does: `step_end` lines are the history;
 * each `run_resume`/`run_redrive` marker cuts the history back to the length its checkpoint had
 * (an iteration whose checkpoint was never written ran again); `historyLength` (the checkpoint's)
 * cuts the tail the same way.
 *
 * @example
 * ```ts
 * import { runTimeline } from "./format.ts";
 * const ts = "2026-01-01T00:00:00.000Z";
 * const end = (iteration: number) => ({
 *   ts, runId: "r", type: "step_end", entry: {
 *     stepId: "a", iteration, attempt: 1, transition: "next", startedAt: ts, durationMs: 1,
 *   },
 * });
 * const rows = runTimeline([end(1), end(2), { ts, runId: "r", type: "run_resume", historyLength: 1 }, end(2)]);
 * console.log(rows.map((r) => r.kind)); // ["step", "marker", "step"]
 * ```
 */
export function runTimeline(log: readonly RunLogEntry[], historyLength?: number): TimelineRow[] {
  const rows: TimelineRow[] = [];
  const usages: (LoggedUsage | undefined)[] = [];
  let steps = 0;
  // The model calls of the iteration in progress (they precede its step_end).
  let pending: LoggedModelCall[] = [];
  const cutTo = (n: number): number => {
    let dropped = 0;
    for (let i = rows.length - 1; i >= 0 && steps > n; i--) {
      if (rows[i].kind !== "step") continue;
      rows.splice(i, 1);
      usages.pop();
      steps--;
      dropped++;
    }
    return dropped;
  };
  for (const line of log) {
    if (line.type === "step_end" && line.entry && typeof line.entry === "object") {
      const usage = isUsage(line.usage) ? line.usage : undefined;
      const previous = usages[usages.length - 1];
      const row: TimelineRow = { kind: "step", entry: line.entry as LoggedHistoryEntry };
      if (usage) {
        row.tokens = {
          input: usage.inputTokens - (previous?.inputTokens ?? 0),
          output: usage.outputTokens - (previous?.outputTokens ?? 0),
        };
        const unknown = (usage.callsWithoutUsage ?? 0) - (previous?.callsWithoutUsage ?? 0);
        if (unknown > 0) row.tokens.unknownCalls = unknown;
        // A cost is shown where one is known, or known to be unknown (never $0 for unpriced calls).
        const cost = Math.max(0, (usage.costUsd ?? 0) - (previous?.costUsd ?? 0));
        const unpriced = (usage.callsWithoutCost ?? 0) - (previous?.callsWithoutCost ?? 0);
        if (cost > 0 || unpriced > 0) {
          row.tokens.costUsd = cost;
          if (unpriced > 0) row.tokens.unknownCostCalls = unpriced;
        }
      }
      if (pending.length > 1) row.modelCalls = pending;
      pending = [];
      if (line.handoff && typeof line.handoff === "object") {
        row.handoff = line.handoff as Record<string, unknown>;
      }
      rows.push(row);
      usages.push(usage);
      steps++;
    } else if (line.type === "model_call") {
      pending.push(loggedModelCall(line));
    } else if (line.type === "run_resume" || line.type === "run_redrive") {
      const n = Number(line.historyLength ?? 0);
      const dropped = cutTo(n);
      rows.push({ kind: "marker", type: line.type, ts: line.ts, historyLength: n, dropped });
    }
  }
  if (historyLength !== undefined) cutTo(historyLength);
  return rows;
}

/**
 * The history entries of a run, rebuilt from its log (see {@linkcode runTimeline}).
 *
 * @param log the run's log
 * @param historyLength the checkpoint's `state.historyLength`, when known
 */
export function historyFromLog(
  log: readonly RunLogEntry[],
  historyLength?: number,
): LoggedHistoryEntry[] {
  const out: LoggedHistoryEntry[] = [];
  for (const row of runTimeline(log, historyLength)) if (row.kind === "step") out.push(row.entry);
  return out;
}

/**
 * Renders the run list of `--runs`: run id, start, status, steps, duration, tokens and the step
 * the run is at (or ended on). An interrupted run (status running, nobody holding its lock) shows
 * as `interrupted`; a run whose files cannot be read shows its problem below the table.
 *
 * @example
 * ```ts
 * import { formatRunList } from "./format.ts";
 * console.log(formatRunList([{
 *   runId: "20260101T000000Z-0a1b2c", agent: "demo", status: "completed",
 *   startedAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:04.200Z",
 *   steps: 3, durationMs: 4200, usage: { inputTokens: 1200, outputTokens: 340 }, stepId: "complete.issue",
 * }]));
 * ```
 */
export function formatRunList(
  summaries: readonly RunSummary[],
  options: FormatOptions = {},
): string {
  if (summaries.length === 0) return "No runs recorded.";
  const c = palette(options.color === true);
  // Stores with leases (PostgreSQL) name the worker driving each live run.
  const workers = summaries.some((s) => s.worker !== undefined);
  // Runs started in a group (an eval's) name it; listings without groups keep their columns.
  const groups = summaries.some((s) => s.group !== undefined);
  // Runs on a backend with a prompt cache show how much of their input it served.
  const cached = summaries.some((s) => s.usage?.cacheReadTokens || s.usage?.cacheWriteTokens);
  // A listing of several agents' runs names each run's agent.
  const agents = new Set(summaries.flatMap((s) => s.agent ? [s.agent] : [])).size > 1;
  // Child runs (an agent step of another run started them) name their parent.
  const parents = summaries.some((s) => s.parentRunId !== undefined);
  // A cost column once a run has a cost, known or known to be unknown.
  const costs = summaries.some((s) =>
    s.usage?.costUsd !== undefined || (s.usage?.callsWithoutCost ?? 0) > 0
  );
  const rows = summaries.map((s) => [
    s.runId,
    ...(agents ? [s.agent ?? ""] : []),
    time(s.startedAt),
    c.status(statusText(s), statusTone(s)),
    s.steps === undefined ? "" : String(s.steps),
    s.durationMs === undefined ? "" : duration(s.durationMs),
    s.usage ? tokens(s.usage.inputTokens, s.usage.outputTokens, s.usage.callsWithoutUsage) : "",
    ...(cached ? [cacheColumn(s.usage)] : []),
    ...(costs ? [costColumn(s.usage)] : []),
    s.stepId ?? "",
    ...(groups ? [s.group ?? ""] : []),
    ...(parents ? [s.parentRunId ?? ""] : []),
    ...(workers ? [s.worker ?? ""] : []),
  ]);
  const headers = [
    "RUN ID",
    ...(agents ? ["AGENT"] : []),
    ...["STARTED", "STATUS", "STEPS", "DURATION", "TOKENS IN/OUT"],
  ];
  if (cached) headers.push("CACHE READ/WRITE");
  if (costs) headers.push("COST");
  headers.push("STEP");
  if (groups) headers.push("GROUP");
  if (parents) headers.push("PARENT");
  if (workers) headers.push("WORKER");
  const lines = [
    table(headers, rows, {
      right: new Set(
        [3, 4, 5, ...(cached ? [6] : []), ...(costs ? [cached ? 7 : 6] : [])].map((i) =>
          agents ? i + 1 : i
        ),
      ),
      header: c.dim,
    }),
  ];
  for (const s of summaries) {
    if (s.problem) lines.push(c.status(`! ${s.runId}: ${s.problem}`, "bad"));
    if (s.error) lines.push(c.status(`! ${s.runId}: ${s.error}`, "bad"));
  }
  // One hint per kind of run that can be continued, naming the newest such run.
  // (A run the workers hold says how to continue it in its `!` line: a plain resume would stop.)
  const interrupted = summaries.find((s) => shownStatus(s) === "interrupted" && !s.error);
  if (interrupted) {
    lines.push(
      `Continue an interrupted run with: ${continueWith(options, "resume", interrupted.runId)}`,
    );
  }
  const stopped = summaries.find((s) => !s.problem && s.status === "budget_exceeded");
  if (stopped) {
    lines.push(
      `Carry on a run its budget stopped with a higher budget: ${
        (options.commandFor ?? plainCommandLine)(
          stopped.endNext ?? { action: "resume", runId: stopped.runId },
        )
      }`,
    );
  }
  const ended = summaries.find((s) => !s.problem && REDRIVABLE.has(s.status));
  if (ended) {
    lines.push(
      `Restart a failed or stopped run from the step it ended on with: ${
        continueWith(options, "redrive", ended.runId)
      }`,
    );
  }
  return lines.join("\n");
}

/**
 * Renders one run for `--show`: a header (status, times, iterations, tokens, error) and its
 * history as a table — iteration, step, attempt, intent, transition, next step, duration, tokens
 * and the check verdict or error — with a line where the run was resumed or redriven.
 *
 * @param checkpoint the run's checkpoint (undefined when it stopped before its first one)
 * @param log the run's log
 *
 * @example
 * ```ts ignore
 * import { FileRunStore, formatRunHistory } from "jsr:@stepflow/core/store";
 * const store = new FileRunStore("tmp/logs/agents/code-improver");
 * const id = "20260101T000000Z-0a1b2c";
 * console.log(formatRunHistory(await store.loadCheckpoint(id), await store.readLog(id)));
 * ```
 */
export function formatRunHistory(
  checkpoint: RunCheckpoint | undefined,
  log: readonly RunLogEntry[],
  options: HistoryFormatOptions = {},
): string {
  const c = palette(options.color === true);
  const state = (checkpoint?.state ?? {}) as Record<string, unknown>;
  const historyLength = typeof state.historyLength === "number" ? state.historyLength : undefined;
  const timeline = runTimeline(log, historyLength);
  const runId = checkpoint?.runId ?? log[0]?.runId ?? options.runId ?? "?";
  const end = state.end as
    | { reason?: string; stepId?: string; error?: { code?: string; message?: string } }
    | undefined;
  const lines: string[] = [];

  const status = checkpoint
    ? shownStatus({
      status: checkpoint.status,
      ...(options.live !== undefined ? { live: options.live } : {}),
    })
    : "no checkpoint";
  const reason = end?.reason && end.reason !== status ? ` (${end.reason})` : "";
  const tone = status === "completed"
    ? "good"
    : isNotEnded(status) || status === "interrupted"
    ? "warn"
    : status === "declined"
    ? "plain"
    : "bad";
  lines.push(
    `${c.bold(`Run ${runId}`)} · agent ${checkpoint?.agent ?? "?"} · ${
      c.status(status + reason, tone)
    }`,
  );
  const facts = runFacts(checkpoint, state, log);
  if (facts.length) lines.push(facts.join(" · "));
  const bySteps = spendBySteps(state.spendByStep);
  if (bySteps) lines.push(`Spent by step: ${bySteps}`);
  const parent = state.parent as { runId?: unknown; stepId?: unknown } | undefined;
  if (typeof parent?.runId === "string") {
    lines.push(`child run of ${parent.runId} (its agent step "${String(parent.stepId)}")`);
  }
  if (end?.error?.message) {
    lines.push(c.status(`Error ${end.error.code ?? ""}: ${oneLine(end.error.message)}`, "bad"));
  }
  lines.push(...declinedLines(state.end));
  lines.push(...whatNext(checkpoint, status, state, runId, options, c));
  lines.push("");

  // A cost column once an iteration has a cost, known or known to be unknown.
  const costs = timeline.some((r) => r.kind === "step" && r.tokens?.costUsd !== undefined);
  const rows: string[][] = [];
  const separators = new Map<number, string>();
  const details = new Map<number, string[]>();
  let n = 0;
  for (const row of timeline) {
    if (row.kind === "marker") {
      const verb = row.type === "run_redrive" ? "redriven" : "resumed";
      const dropped = row.dropped
        ? `; ${row.dropped} recorded iteration(s) after the last checkpoint ran again`
        : "";
      separators.set(rows.length, c.dim(`── ${verb} at ${time(row.ts)}${dropped} ──`));
      continue;
    }
    const e = row.entry;
    n++;
    const note = historyNote(e, c);
    rows.push([
      String(n),
      String(e.iteration),
      e.stepId,
      String(e.attempt),
      e.intent ?? "",
      // A person's "no" at an input step is their decision, not a failure.
      c.status(
        e.transition,
        e.input?.answeredBy && e.transition === "abort" ? "plain" : transitionTone(e.transition),
      ),
      e.nextStepId ?? "",
      duration(e.durationMs),
      row.tokens ? tokens(row.tokens.input, row.tokens.output, row.tokens.unknownCalls) : "",
      ...(costs ? [row.tokens ? rowCost(row.tokens) : ""] : []),
      note,
    ]);
    const detail = [
      ...detailLines(e, c),
      ...(row.modelCalls ? modelCallLines(row.modelCalls, c) : []),
    ];
    if (detail.length > 0) details.set(rows.length - 1, detail);
  }
  if (rows.length === 0 && separators.size === 0) {
    lines.push("No iteration was recorded.");
  } else {
    lines.push(
      table(
        costs ? HISTORY_HEADERS_WITH_COST : HISTORY_HEADERS,
        rows,
        {
          right: new Set([0, 1, 3, 7, 8, ...(costs ? [9] : [])]),
          header: c.dim,
          separators,
          details,
        },
      ),
    );
  }
  lines.push(...childRunLines(log, options, c));
  lines.push(...fanOutSections(log, options, c));
  const lastStart = [...log].reverse().find((l) => l.type === "step_start");
  const lastKept = rows.length ? Number(rows[rows.length - 1][1]) : 0;
  if (
    (isOpenStatus(status) || status === "interrupted") && lastStart &&
    typeof lastStart.iteration === "number" && lastStart.iteration > lastKept
  ) {
    // A step with tools whose calls were recorded (the checkpoint's `inStep`) continues inside.
    const inStep = state.inStep as { stepId?: unknown; iteration?: unknown } | undefined;
    const inside = inStep?.stepId === lastStart.stepId && inStep?.iteration === lastStart.iteration;
    const finished = inside
      ? log.filter((l) =>
        l.type === "tool_call" && l.stepId === lastStart.stepId &&
        l.iteration === lastStart.iteration
      ).length
      : 0;
    lines.push(
      c.status(
        `Iteration ${lastStart.iteration} (step "${lastStart.stepId}") was in flight when the run stopped; ${
          inside
            ? `resume continues inside it (${finished} recorded tool call(s) replayed, not run again).`
            : "resume runs it again from its start."
        }`,
        "warn",
      ),
    );
  }
  return lines.join("\n");
}

/** The run's facts under its title: when, how long, iterations, group, spend and budget. */
function runFacts(
  checkpoint: RunCheckpoint | undefined,
  state: Record<string, unknown>,
  log: readonly RunLogEntry[],
): string[] {
  const facts: string[] = [];
  if (checkpoint) {
    facts.push(`started ${time(checkpoint.startedAt)}`);
    facts.push(`updated ${time(checkpoint.updatedAt)}`);
    const ms = Date.parse(checkpoint.updatedAt) - Date.parse(checkpoint.startedAt);
    if (Number.isFinite(ms) && ms >= 0) facts.push(duration(ms));
  } else if (log[0]) {
    facts.push(`started ${time(log[0].ts)}`);
  }
  // The checkpoint's count, as the list, the API and the dashboard say it.
  const iterations = iterationsOf(state);
  if (iterations !== undefined) facts.push(`${iterations} iteration${iterations === 1 ? "" : "s"}`);
  if (isValidRunGroup(state.group)) facts.push(`group ${state.group}`);
  facts.push(...spendFacts(state));
  return facts;
}

// -------------------------------------------------------------------------------------------------

/** Statuses of runs that ended without success: a redrive restarts them. */
const REDRIVABLE: ReadonlySet<string> = new Set(["failed", "aborted", "cancelled", "timeout"]);

/** `stepflow resume ID` (or `redrive`), as {@linkcode FormatOptions.commandFor} writes it. */
function continueWith(options: FormatOptions, verb: "resume" | "redrive", runId: string): string {
  return (options.commandFor ?? plainCommandLine)({ action: verb, runId });
}

/** What a redrive does for a run that ended with `status`. */
function restartSentence(status: string): string {
  return status === "failed"
    ? "Restart it from its failed step"
    : `Continue it from the step it was ${
      status === "timeout" ? "stopped at (timeout)" : `${status} at`
    }`;
}

/** The list of a run's child runs under its history (none when its agent steps started none). */
function childRunLines(
  log: readonly RunLogEntry[],
  options: HistoryFormatOptions,
  c: ReturnType<typeof palette>,
): string[] {
  const children = childRunsOf(log);
  if (children.length === 0) return [];
  const rows = children.map((child) => [
    child.runId,
    child.agent,
    child.stepId,
    options.childStatus?.get(child.runId) ?? "",
    (options.commandFor ?? plainCommandLine)(childShowStep(child.runId, options)),
  ]);
  return [
    "",
    `Child runs (${children.length}):`,
    table(["RUN ID", "AGENT", "STEP", "STATUS", "SHOW IT WITH"], rows, { header: c.dim }),
  ];
}

/** The step that shows a child run: by its id, with its agent when the id alone does not find it. */
function childShowStep(runId: string, options: HistoryFormatOptions): NextStep {
  const agent = options.childAgent?.get(runId);
  return { action: "show", runId, ...(agent !== undefined ? { agent } : {}) };
}

/**
 * The items of each fan-out step the run ran (`fan_out_lines.ts`): one row per item in item order
 * — the item, how its child ended (or stands), its time, its tokens and its child run.
 */
function fanOutSections(
  log: readonly RunLogEntry[],
  options: HistoryFormatOptions,
  c: ReturnType<typeof palette>,
): string[] {
  const out: string[] = [];
  for (const record of fanOutsOf(log)) {
    const rows = fanOutRows(record, (runId) => options.childStatus?.get(runId) || undefined);
    const count = (status: string) => rows.filter((r) => r.status === status).length;
    const failed = rows.filter((r) => FAILED_ITEM.has(r.status)).length;
    const open = rows.length - count("completed") - failed;
    out.push(
      "",
      `Fan-out ${record.stepId} (agent ${record.agent}): ${rows.length} item${
        rows.length === 1 ? "" : "s"
      } · ${count("completed")} completed · ${failed} failed${
        open > 0 ? ` · ${open} not done` : ""
      }`,
      table(
        ["#", "ITEM", "STATUS", "DURATION", "TOKENS", "CHILD RUN"],
        rows.map((row) => [
          String(row.index + 1),
          clip(oneLine(row.item), 48),
          c.status(
            `${row.status}${row.children > 1 ? ` (${row.children} children)` : ""}`,
            row.status === "completed" ? "good" : FAILED_ITEM.has(row.status) ? "bad" : "warn",
          ),
          row.durationMs !== undefined ? duration(row.durationMs) : "",
          row.usage
            ? tokens(row.usage.inputTokens, row.usage.outputTokens, row.usage.callsWithoutUsage)
            : "",
          row.runId ?? "",
        ]),
        { right: new Set([0, 3, 4]), header: c.dim },
      ),
      c.dim(
        `Show an item's child with: ${
          (options.commandFor ?? plainCommandLine)({ action: "show", runId: "CHILD_RUN" })
        }`,
      ),
    );
  }
  return out;
}

/** Item statuses that count as failed. */
const FAILED_ITEM: ReadonlySet<string> = new Set(["failed", "aborted", "cancelled", "timeout"]);

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The lines under a history row: its model chain's fallbacks, then its tool calls. */
function detailLines(e: LoggedHistoryEntry, c: ReturnType<typeof palette>): string[] {
  const fallbacks = Array.isArray(e.fallbacks) ? e.fallbacks.slice(0, SHOWN_TOOL_CALLS) : [];
  return [
    ...fallbacks.map((f) => c.status(`    ⤷ ${oneLine(fallbackText(f))}`, "warn")),
    ...(Array.isArray(e.toolCalls) && e.toolCalls.length > 0
      ? toolCallLines(e.toolCalls, e.toolCallsOmitted ?? 0, c)
      : []),
  ];
}

/** The columns of `--show`'s history table, with a cost column once an iteration has a cost. */
const HISTORY_HEADERS = [
  "#",
  "ITER",
  "STEP",
  "TRY",
  "INTENT",
  "TRANSITION",
  "NEXT",
  "DURATION",
  "TOKENS",
  "NOTE",
];
const HISTORY_HEADERS_WITH_COST = [...HISTORY_HEADERS.slice(0, -1), "COST", "NOTE"];

/** What a run spent, for `--show`'s header: tokens, the prompt cache, cost, the budget. */
function spendFacts(state: Record<string, unknown>): string[] {
  const facts: string[] = [];
  const usage = state.usage;
  if (isUsage(usage)) {
    const unknown = usage.callsWithoutUsage ?? 0;
    // No "0 in / 0 out" for a run none of whose calls reported tokens: they are unknown, not 0.
    if (unknown === 0 || usage.inputTokens > 0 || usage.outputTokens > 0) {
      facts.push(
        `tokens ${usage.inputTokens.toLocaleString("en-US")} in / ${
          usage.outputTokens.toLocaleString("en-US")
        } out`,
      );
    }
    const cache = cacheShare(usage, (n) => n.toLocaleString("en-US"));
    if (cache) facts.push(`of the input: ${cache}`);
    if (unknown > 0) facts.push(`tokens unknown for ${unknown} call${unknown === 1 ? "" : "s"}`);
    const cost = formatCost(usage);
    if (cost) facts.push(cost);
    if (typeof usage.estimatedUsd === "number" && usage.estimatedUsd > 0) {
      facts.push(`up to $${usage.estimatedUsd.toFixed(4)} more in calls cut off`);
    }
  }
  const budget = budgetText(state.budget);
  if (budget) facts.push(`budget ${budget}`);
  return facts;
}

/** A `model_call` log line as the call it records. */
function loggedModelCall(line: RunLogEntry): LoggedModelCall {
  const usage = isUsage(line.usage) ? line.usage : undefined;
  const call: LoggedModelCall = {
    kind: typeof line.kind === "string" ? line.kind : "step",
    costUsd: typeof line.costUsd === "number" ? line.costUsd : null,
  };
  if (typeof line.model === "string") call.model = line.model;
  if (usage) call.tokens = usage.inputTokens + usage.outputTokens;
  if (typeof line.estimatedUsd === "number") call.estimatedUsd = line.estimatedUsd;
  return call;
}

/** The lines under a history row for its model calls: `· reask gpt-4o 110,000 tokens $0.3500`. */
function modelCallLines(
  calls: readonly LoggedModelCall[],
  c: ReturnType<typeof palette>,
): string[] {
  return calls.map((call) => {
    const parts = [call.kind, ...(call.model ? [oneLine(call.model)] : [])];
    if (call.tokens !== undefined) parts.push(`${call.tokens.toLocaleString("en-US")} tokens`);
    else parts.push("tokens unknown");
    parts.push(
      call.estimatedUsd !== undefined
        ? `cut off, up to $${call.estimatedUsd.toFixed(4)}`
        : call.costUsd === null
        ? "cost unknown"
        : `$${call.costUsd.toFixed(4)}`,
    );
    return c.dim(`    · ${parts.join(" ")}`);
  });
}

/** An iteration's cost: `$0.3500`, `?` when none of its calls could be priced, `$0.35+?` for some. */
function rowCost(row: NonNullable<Extract<TimelineRow, { kind: "step" }>["tokens"]>): string {
  if (row.costUsd === undefined) return "";
  const unknown = row.unknownCostCalls ?? 0;
  if (unknown > 0 && row.costUsd === 0) return "?";
  const known = `$${row.costUsd.toFixed(4)}`;
  return unknown > 0 ? `${known}+?` : known;
}

/** `$0.1234`, `?` (no call priced), `$0.12+?` (some not), or empty for a run without calls. */
function costColumn(usage: RunSummary["usage"]): string {
  if (!usage) return "";
  if (usage.costUsd === null) return "?";
  const unknown = usage.callsWithoutCost ?? 0;
  if (usage.costUsd === undefined) return unknown > 0 ? "?" : usage.calls ? "$0.0000" : "";
  return `$${usage.costUsd.toFixed(4)}${unknown > 0 ? "+?" : ""}`;
}

/** A recorded budget as `$5.00, 200,000 tokens`; empty when none was given. */
function budgetText(budget: unknown): string {
  if (typeof budget !== "object" || budget === null) return "";
  const b = budget as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof b.usd === "number") parts.push(`$${b.usd.toFixed(2)}`);
  if (typeof b.tokens === "number") parts.push(`${b.tokens.toLocaleString("en-US")} tokens`);
  if (typeof b.modelCalls === "number") parts.push(`${b.modelCalls} model calls`);
  if (typeof b.toolCalls === "number") parts.push(`${b.toolCalls} tool calls`);
  return parts.join(", ");
}

/** What each step spent, dearest first: `work.loop $1.0500 (3 calls), plan $0.35 (1 call)`. */
function spendBySteps(byStep: unknown): string {
  if (typeof byStep !== "object" || byStep === null) return "";
  const rows = Object.entries(byStep as Record<string, Record<string, unknown>>).filter(([, s]) =>
    typeof s?.costUsd === "number" && typeof s.calls === "number"
  ) as [string, { costUsd: number; calls: number; callsWithoutCost?: number }][];
  if (rows.length === 0) return "";
  rows.sort(([, a], [, b]) => b.costUsd - a.costUsd);
  return rows.slice(0, 10).map(([id, s]) =>
    `${oneLine(id)} ${formatCost(s)} (${s.calls} call${s.calls === 1 ? "" : "s"})`
  ).join(", ");
}

/** Tool calls listed under one history row, at most. */
const SHOWN_TOOL_CALLS = 10;

/**
 * The lines under a history row for its tool calls: `↳ Bash npm test ✓ · terminal (erin)`, the
 * first {@linkcode SHOWN_TOOL_CALLS}, then how many more (the run log has every call).
 */
function toolCallLines(
  calls: readonly LoggedToolCall[],
  omitted: number,
  c: ReturnType<typeof palette>,
): string[] {
  const lines = calls.slice(0, SHOWN_TOOL_CALLS).map((call) => {
    const head = `${oneLine(String(call.tool))}${call.target ? ` ${oneLine(call.target)}` : ""}`;
    const how = call.decision === "deny"
      ? c.status("✗ refused", "bad")
      : call.decision === "invalid"
      ? c.status("✗ invalid call", "bad")
      : call.isError
      ? c.status("✗ failed", "bad")
      : c.status("✓", "good");
    const by = call.decidedBy ? ` · ${oneLine(call.decidedBy)}` : "";
    return c.dim(`    ↳ ${head} `) + how + c.dim(by);
  });
  const more = calls.length - SHOWN_TOOL_CALLS + omitted;
  if (more > 0) lines.push(c.dim(`    … ${more} more tool calls (the run log has every call)`));
  return lines;
}

/** The NOTE column of a history row: its error, check verdict, answer, child run or fan-out. */
function historyNote(e: LoggedHistoryEntry, c: ReturnType<typeof palette>): string {
  if (e.error) return c.status(`error: ${oneLine(e.error)}`, "bad");
  if (e.checkResult) return `check ${e.checkResult.result}: ${oneLine(e.checkResult.message)}`;
  if (e.input) return inputNote(e.input);
  if (e.child) return `child run ${e.child.runId} (${e.child.agent}): ${e.child.completionReason}`;
  if (!e.fanOut) return "";
  const failed = e.fanOut.failed > 0 ? `, ${e.fanOut.failed} failed` : "";
  return `fan-out ${e.fanOut.agent}: ${e.fanOut.total} items, ${e.fanOut.completed} completed${failed}`;
}

/** The note of an input step's history row: who answered and when, or the timeout. */
function inputNote(input: NonNullable<LoggedHistoryEntry["input"]>): string {
  if (input.timedOut) return "no answer: the wait timed out";
  const when = typeof input.answeredAt === "string" ? ` at ${time(input.answeredAt)}` : "";
  return `answered by ${oneLine(String(input.answeredBy ?? "?"))}${when}`;
}

/**
 * Who stopped a declined run, when, at which step, and their note — from the checkpoint's
 * `end.declined` (read from disk: used only when it has the shape the runner writes).
 */
function declinedLines(end: unknown): string[] {
  const d = (end as { declined?: Record<string, unknown> } | undefined)?.declined;
  if (!d || typeof d.by !== "string" || typeof d.stepId !== "string") return [];
  const when = typeof d.at === "string" ? ` at ${time(d.at)}` : "";
  const child = typeof d.childRunId === "string" ? ` (in its child run ${d.childRunId})` : "";
  const lines = [`Declined by ${oneLine(d.by)}${when}, at step ${d.stepId}${child}.`];
  const note = noteText(d.note);
  if (note) lines.push(`Note: ${note}`);
  return lines;
}

/** What a run's history page says comes next: why it cannot go on, or the command that continues it. */
function whatNext(
  checkpoint: RunCheckpoint | undefined,
  status: string,
  state: Record<string, unknown>,
  runId: string,
  options: HistoryFormatOptions,
  c: ReturnType<typeof palette>,
): string[] {
  const out: string[] = [];
  if (!checkpoint) {
    out.push(
      c.status(
        "No checkpoint: the process stopped before the run's first checkpoint; it cannot be resumed.",
        "bad",
      ),
    );
  } else if (status === "waiting") {
    const waits = Array.isArray(state.waits) && state.waits.length > 1 ? state.waits : undefined;
    if (waits) {
      // A fan-out's waiting children: each answered on its own, named by its request id.
      out.push(
        c.status(`Waiting for ${waits.length} answers (each child run on its own):`, "warn"),
      );
      for (const wait of waits) out.push(...waitingLines(wait, options, runId, c, true));
    } else out.push(...waitingLines(state.waiting, options, runId, c));
  } else if (status === "budget_exceeded") {
    // The next step the run's end recorded: the resume with a raised budget.
    const next = recordedNextStep(state) ?? { action: "resume", runId };
    out.push(
      c.status(
        `Stopped by its budget: raise it and carry on inside the step with ${
          (options.commandFor ?? plainCommandLine)(next)
        }`,
        "warn",
      ),
    );
  } else if (status === "interrupted" && options.held) {
    out.push(c.status(`Held by the workers: ${options.held}`, "bad"));
  } else if (status === "interrupted") {
    out.push(
      c.status(`Interrupted: continue it with ${continueWith(options, "resume", runId)}`, "warn"),
    );
  } else if (isOpenStatus(status) && options.live === true) {
    // A live process drives it: resuming it would be refused (RUN_LOCKED).
    out.push(c.status(`Not finished: a live process drives it (${status}).`, "warn"));
  } else if (isOpenStatus(status)) {
    out.push(
      c.status(`Not finished: continue it with ${continueWith(options, "resume", runId)}`, "warn"),
    );
  } else if (status !== "completed" && status !== "declined") {
    // (A declined run ended as a person decided: nothing is left to do.)
    out.push(`${restartSentence(status)} with ${continueWith(options, "redrive", runId)}`);
  }
  return out;
}

/** What a waiting run waits for and the command that answers it (`--show`). */
function waitingLines(
  waiting: unknown,
  options: HistoryFormatOptions,
  runId: string,
  c: ReturnType<typeof palette>,
  byRequest = false,
): string[] {
  const w = (typeof waiting === "object" && waiting !== null ? waiting : {}) as Record<
    string,
    unknown
  >;
  const child = w.child as { runId?: unknown; stepId?: unknown; item?: unknown } | undefined;
  const step = byRequest && typeof child?.runId === "string"
    ? ` (item ${Number(child.item) + 1}, child run ${child.runId}, at "${String(child.stepId)}")`
    : typeof w.stepId === "string"
    ? ` at input step "${w.stepId}"`
    : "";
  const since = typeof w.requestedAt === "string" ? ` since ${time(w.requestedAt)}` : "";
  const lines = [c.status(`Waiting for an answer${step}${since}.`, "warn")];
  if (typeof w.prompt === "string") {
    for (const line of w.prompt.trimEnd().split("\n").slice(0, 20)) lines.push(`  ${line}`);
  }
  if (typeof w.expiresAt === "string") {
    lines.push(
      `The wait passes at ${time(w.expiresAt)}; then resuming the run takes the intent "${
        String(w.timeoutIntent)
      }".`,
    );
  }
  const value = options.answerValue ??
    (typeof w.permission === "object" && w.permission !== null
      ? JSON.stringify({ decision: "allow" })
      : "<json>");
  const request = byRequest && typeof w.requestId === "string" ? ["--request-id", w.requestId] : [];
  lines.push(
    `Answer it with: ${
      (options.commandFor ?? plainCommandLine)({
        action: "answer",
        runId,
        args: [...request, "--value", value],
      })
    }`,
  );
  return lines;
}

function isUsage(value: unknown): value is LoggedUsage {
  const u = value as LoggedUsage | undefined;
  return !!u && typeof u.inputTokens === "number" && typeof u.outputTokens === "number";
}

function statusText(s: RunSummary): string {
  if (s.problem) return s.problem.startsWith("no checkpoint") ? "no checkpoint" : "unreadable";
  const status = shownStatus(s);
  if (status === "interrupted") return status;
  if (status === "waiting" && s.waitingFor) return `waiting · ${waitingForText(s.waitingFor)}`;
  if (s.completionReason && s.completionReason !== s.status) {
    return `${s.status} (${s.completionReason})`;
  }
  return s.status;
}

/**
 * What a waiting run waits for, as the dashboard says it: `approve TOOL` for a tool call waiting
 * for permission, `answer STEP` for an input step, `N answers` for a fan-out's waiting children. Names come from the checkpoint: one line.
 */
function waitingForText(waitingFor: NonNullable<RunSummary["waitingFor"]>): string {
  if ((waitingFor.answers ?? 1) > 1) return `${waitingFor.answers} answers`;
  return waitingFor.tool !== undefined
    ? `approve ${oneLine(waitingFor.tool)}`
    : `answer ${oneLine(waitingFor.stepId)}`;
}

type Tone = "good" | "warn" | "bad" | "plain";

function statusTone(s: RunSummary): Tone {
  if (s.problem) return "bad";
  if (s.status === "completed") return "good";
  if (isNotEnded(s.status) || s.status === "queued") return "warn";
  // A person's decision to stop: neither a success nor a failure.
  if (s.status === "declined") return "plain";
  return "bad";
}

function transitionTone(transition: string): Tone {
  if (transition === "complete") return "good";
  if (transition === "fail" || transition === "abort") return "bad";
  if (transition === "retry" || transition === "fallback") return "warn";
  return "plain";
}

interface Palette {
  status(text: string, tone: Tone): string;
  dim(text: string): string;
  bold(text: string): string;
}

function palette(color: boolean): Palette {
  const wrap = (code: string) => (text: string) => color ? `\x1b[${code}m${text}\x1b[0m` : text;
  const tones: Record<Tone, (t: string) => string> = {
    good: wrap("32"),
    warn: wrap("33"),
    bad: wrap("31"),
    plain: (t) => t,
  };
  return { status: (text, tone) => tones[tone](text), dim: wrap("2"), bold: wrap("1") };
}

/** `2026-01-01T00:00:04.200Z` → `2026-01-01 00:00:04Z`. */
function time(iso: string): string {
  if (!iso) return "";
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** Milliseconds for people: `850ms`, `12.3s`, `4m05s`, `1h02m`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** `9,000/1,200`: the input tokens read from and written to the prompt cache (empty: none). */
function cacheColumn(usage: RunSummary["usage"]): string {
  if (!usage?.cacheReadTokens && !usage?.cacheWriteTokens) return "";
  return `${(usage.cacheReadTokens ?? 0).toLocaleString("en-US")}/${
    (usage.cacheWriteTokens ?? 0).toLocaleString("en-US")
  }`;
}

/** `1,200/34`; `?` when no call of the iteration reported usage, `1,200/34+?` when some did not. */
/**
 * A run's tokens for `--show`: `tokens 1,200 in / 34 out`, what the cache served, the calls
 * whose usage is unknown, the cost. Calls without usage are never shown as 0 tokens: when no call
 * reported any, only `tokens unknown for N calls` is said.
 */
function tokens(input: number, output: number, unknownCalls = 0): string {
  const known = `${input.toLocaleString("en-US")}/${output.toLocaleString("en-US")}`;
  if (unknownCalls === 0) return known;
  return input === 0 && output === 0 ? "?" : `${known}+?`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ");
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

function width(text: string): number {
  return text.replace(ANSI, "").length;
}

function table(
  headers: string[],
  rows: string[][],
  opts: {
    right?: Set<number>;
    header?: (t: string) => string;
    separators?: Map<number, string>;
    /** Lines printed under a row, outside the columns. */
    details?: Map<number, string[]>;
  } = {},
): string {
  const widths = headers.map((h, i) => Math.max(width(h), ...rows.map((r) => width(r[i] ?? ""))));
  const last = headers.length - 1;
  const render = (cells: string[]) =>
    cells.map((cell, i) => {
      const pad = " ".repeat(widths[i] - width(cell));
      if (opts.right?.has(i)) return pad + cell;
      return i === last ? cell : cell + pad;
    }).join("  ").trimEnd();
  const out = [(opts.header ?? ((t: string) => t))(render(headers))];
  rows.forEach((row, i) => {
    const sep = opts.separators?.get(i);
    if (sep) out.push(sep);
    out.push(render(row));
    out.push(...opts.details?.get(i) ?? []);
  });
  const trailing = opts.separators?.get(rows.length);
  if (trailing) out.push(trailing);
  return out.join("\n");
}
