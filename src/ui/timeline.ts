/**
 * Folds a run log into the rows of the dashboard's timeline: one row per iteration (from its
 * `step_start` to its `step_end`/`step_error`, with the re-asks, retries and tool calls in
 * between) and one row per run event (start, resume, redrive, end). The fold is incremental — the live view feeds
 * it the new entries of a running run and re-renders only the rows they touched.
 *
 * @module
 */
import type { RunLogEntry } from "../store/types.ts";
import type { LoggedUsage } from "../store/format.ts";
import type { FallbackReason, ModelRef } from "../events/types.ts";
import { fallbackText, rateLimitWaitText } from "../events/model_notice_text.ts";
import {
  addGrant,
  addToolCall,
  isToolCallLine,
  type RowCalls,
  stopOpenCalls,
} from "./tool_calls.ts";

/** A model text as the log records it: the text (possibly truncated) and its full length. */
export interface LoggedText {
  /** The recorded text. */
  text: string;
  /** The full length before truncation. */
  length: number;
  /** Index of the log entry holding it (for the full-text link). */
  entry: number;
  /** The field of that entry (`prompt` or `answer`). */
  field: string;
}

/** One re-ask of a step (its answer failed validation). */
export interface Reask {
  /** Why it was re-asked. */
  reason: string;
  /** The validation errors. */
  errors: string[];
  /** The rejected answer. */
  answer?: LoggedText;
}

/** A row of the timeline. */
export type Row =
  | {
    kind: "iteration";
    /** Row index. */
    index: number;
    /** The step. */
    stepId: string;
    /** Run iteration. */
    iteration?: number;
    /** Attempt of the step in a row. */
    attempt?: number;
    /** When the step started (ISO). */
    ts: string;
    /** When the newest line of the iteration was logged (ISO): where a stopped one stopped. */
    lastTs: string;
    /** When its `step_end` was logged (ISO), once it ended. */
    endTs?: string;
    /** When its agent step's child run started (the `agent_start` line, ISO). */
    childTs?: string;
    /** The iteration stopped to wait (an `input_request` while it was open: a child's, a call's). */
    waited?: boolean;
    /** The prompt sent. */
    prompt?: LoggedText;
    /** The model's raw answer. */
    answer?: LoggedText;
    /** Re-asks before the accepted answer. */
    reasks: Reask[];
    /**
     * Backend retries (transport), rate-limit waits, model-chain fallbacks and step retries
     * (onError retry), in order.
     */
    retries: string[];
    /**
     * Which model answered each of the iteration's calls (`backend model`, from its `step_end`),
     * once it ended.
     */
    models?: string[];
    /** Errors recorded for the iteration. */
    errors: string[];
    /** The history entry of `step_end`, once the step ended. */
    end?: Record<string, unknown>;
    /** Tokens of this iteration (difference of the cumulative usage). */
    tokens?: { input: number; output: number; costUsd?: number };
    /** The handoff the step produced. */
    handoff?: unknown;
    /** An agent step's child run (from its `agent_start` line, before the step ends). */
    childRunId?: string;
    /** The tool calls of the iteration (its `tool_call` lines), once it made one. */
    calls?: RowCalls;
  }
  | {
    kind: "event";
    /** Row index. */
    index: number;
    /** `run_start`, `run_resume`, `run_redrive`, `run_end`, … */
    type: string;
    /** When. */
    ts: string;
    /** The entry. */
    entry: RunLogEntry;
  };

/** The state of the fold over a log. */
export interface Timeline {
  /** Rows so far. */
  rows: Row[];
  /** Log entries folded. */
  entries: number;
  /** Executions per step (from `step_end` and failed iterations). */
  counts: Map<string, number>;
  /**
   * Transitions taken: `from>to` (steps, or the end node {@linkcode endNode} names) → how (the intent, else
   * the transition: `next`, `retry`, `fallback`, …).
   */
  taken: Map<string, Set<string>>;
  /** The last cumulative usage seen. */
  usage?: Omit<LoggedUsage, "calls" | "callsWithoutUsage">;
  /**
   * The `run_end` entry, once the run ended; cleared by a later `run_resume`/`run_redrive` (the
   * current attempt of the run has not ended).
   */
  runEnd?: RunLogEntry;
  /** True after an `input_request` no answer or timeout has followed: the run waits. */
  waiting?: boolean;
  /** The step entered first (for the start edge). */
  firstStep?: string;
  /** The newest iteration row (tool calls go to it while it is open). */
  current?: IterationRow;
}

/** A row of an iteration. */
export type IterationRow = Extract<Row, { kind: "iteration" }>;

/** An iteration row's child run (agent steps): from its `agent_start` line or its history entry. */
export function childRunOf(row: IterationRow): string | undefined {
  const child = row.end?.child as { runId?: unknown } | undefined;
  return typeof child?.runId === "string" ? child.runId : row.childRunId;
}

/** An empty timeline. */
export function newTimeline(): Timeline {
  return { rows: [], entries: 0, counts: new Map(), taken: new Map() };
}

/**
 * Adds log entries to `timeline` and returns the indexes of the rows they created or changed.
 *
 * @example
 * ```ts
 * import { foldLog, newTimeline } from "./timeline.ts";
 * const t = newTimeline();
 * const ts = "2026-01-01T00:00:00.000Z";
 * foldLog(t, [
 *   { ts, runId: "r", type: "step_start", stepId: "a", iteration: 1 },
 *   { ts, runId: "r", type: "step_end", stepId: "a", entry: { stepId: "a", nextStepId: "b" } },
 * ]);
 * console.log(t.rows.length, [...t.taken.keys()]); // 1 ["a>b"]
 * ```
 */
export function foldLog(timeline: Timeline, entries: readonly RunLogEntry[]): Set<number> {
  const touched = new Set<number>();
  // An entry of an iteration: its newest time, and its row re-rendered.
  const touch = (row: IterationRow, entry: RunLogEntry) => {
    row.lastTs = entry.ts;
    touched.add(row.index);
  };
  for (const entry of entries) {
    const at = timeline.entries++;
    const open = openRow(timeline);
    switch (entry.type) {
      case "step_start": {
        const row: Row = {
          kind: "iteration",
          index: timeline.rows.length,
          stepId: String(entry.stepId ?? ""),
          iteration: count(entry.iteration),
          attempt: count(entry.attempt),
          ts: entry.ts,
          lastTs: entry.ts,
          reasks: [],
          retries: [],
          errors: [],
        };
        const prompt = loggedText(entry.prompt, at, "prompt");
        if (prompt) row.prompt = prompt;
        timeline.firstStep ??= row.stepId;
        timeline.rows.push(row);
        timeline.current = row;
        touched.add(row.index);
        break;
      }
      case "agent_start": {
        const row = open ?? startedRow(timeline, entry);
        if (typeof entry.childRunId === "string") row.childRunId = entry.childRunId;
        row.childTs = entry.ts;
        touch(row, entry);
        break;
      }
      case "step_reask": {
        const row = open ?? startedRow(timeline, entry);
        const answer = loggedText(entry.answer, at, "answer");
        row.reasks.push({
          reason: String(entry.reason ?? ""),
          errors: Array.isArray(entry.errors) ? entry.errors.map(String) : [],
          ...(answer ? { answer } : {}),
        });
        touch(row, entry);
        break;
      }
      case "backend_retry":
      case "step_retry":
      case "model_fallback": {
        const row = open ?? startedRow(timeline, entry);
        row.retries.push(retryText(entry));
        touch(row, entry);
        break;
      }
      case "step_error": {
        const row = open ?? startedRow(timeline, entry);
        if (stopOpenCalls(row.calls)) touched.add(row.index);
        row.errors.push(`${entry.code ?? "ERROR"}: ${entry.message ?? ""}`);
        const answer = loggedText(entry.answer, at, "answer");
        if (answer) row.answer = answer;
        touch(row, entry);
        break;
      }
      case "step_end": {
        const row = open ?? startedRow(timeline, entry);
        stopOpenCalls(row.calls);
        const end = isRecord(entry.entry) ? entry.entry : {};
        row.end = end;
        row.endTs = row.lastTs = entry.ts;
        const answer = loggedText(entry.answer ?? end.answer, at, "answer");
        if (answer) row.answer = answer;
        addTokens(timeline, row, usageOf(entry.usage));
        if (entry.handoff !== undefined) row.handoff = entry.handoff;
        const models = answeringModels(entry.calls);
        if (models.length > 0) row.models = models;
        const stepId = typeof end.stepId === "string" ? end.stepId : row.stepId;
        timeline.counts.set(stepId, (timeline.counts.get(stepId) ?? 0) + 1);
        if (typeof end.nextStepId === "string") {
          const how = String(end.intent ?? end.transition ?? "");
          addMove(timeline, `${stepId}>${end.nextStepId}`, how);
        }
        touched.add(row.index);
        break;
      }
      default: {
        // A step's tool calls, model turns and permission grants belong to its row.
        if (
          isToolCallLine(entry) || entry.type === "tool_turn" || entry.type === "permission_grant"
        ) {
          const row = callRow(timeline, entry);
          const calls = row.calls ??= { list: [], open: new Map(), turns: 0, grants: [] };
          if (entry.type === "tool_turn") calls.turns++;
          else if (entry.type === "permission_grant") addGrant(calls, entry);
          else addToolCall(calls, entry);
          touch(row, entry);
          break;
        }
        // A call not finished when the run stops, resumes or is redriven will not finish.
        if (
          entry.type === "run_end" || entry.type === "run_resume" || entry.type === "run_redrive"
        ) {
          const row = timeline.current;
          if (row && stopOpenCalls(row.calls)) touched.add(row.index);
        }
        // A resume or redrive is a new attempt of the run: the end of an earlier one is history.
        if (entry.type === "run_resume" || entry.type === "run_redrive") delete timeline.runEnd;
        if (entry.type === "input_request") {
          timeline.waiting = true;
          // The iteration that stopped to wait (a tool call's permission) stops here.
          if (open) {
            open.waited = true;
            touch(open, entry);
          }
        }
        if (entry.type === "input_answer" || entry.type === "input_timeout") {
          timeline.waiting = false;
        }
        if (entry.type === "run_end") {
          timeline.runEnd = entry;
          const last = lastIteration(timeline);
          if (last) {
            const target = endNode(String(entry.reason ?? ""));
            addMove(timeline, `${last.stepId}>${target}`, String(last.end?.transition ?? ""));
          }
        }
        const row: Row = {
          kind: "event",
          index: timeline.rows.length,
          type: entry.type,
          ts: entry.ts,
          entry,
        };
        timeline.rows.push(row);
        touched.add(row.index);
      }
    }
  }
  return touched;
}

/** The iteration's tokens: its `step_end`'s cumulative usage less the one before. */
function addTokens(timeline: Timeline, row: IterationRow, usage: Timeline["usage"]): void {
  if (!usage) return;
  const before = timeline.usage;
  row.tokens = {
    input: usage.inputTokens - (before?.inputTokens ?? 0),
    output: usage.outputTokens - (before?.outputTokens ?? 0),
  };
  if (usage.costUsd !== undefined) row.tokens.costUsd = usage.costUsd - (before?.costUsd ?? 0);
  timeline.usage = usage;
}

/** A row's line for a retry, a rate-limit wait or a model chain's fallback. */
function retryText(entry: RunLogEntry): string {
  if (entry.type === "step_retry") return `step retry ${entry.attempt ?? "?"} (onError retry)`;
  if (entry.type === "model_fallback") {
    const ref = (value: unknown): ModelRef =>
      isRecord(value) && typeof value.backend === "string"
        ? value as unknown as ModelRef
        : { backend: "?" };
    return fallbackText({
      from: ref(entry.from),
      to: ref(entry.to),
      reason: String(entry.reason ?? "") as FallbackReason,
      detail: String(entry.detail ?? ""),
    });
  }
  const reason = String(entry.reason ?? "");
  if (typeof entry.waitUntil === "string") {
    const status = Number(/^HTTP (\d{3})/.exec(reason)?.[1] ?? 429);
    return `${rateLimitWaitText({ until: entry.waitUntil, status })}${
      entry.yielded === true ? ", the run's slot given back" : ""
    } (backend retry ${entry.attempt ?? "?"}: ${reason})`;
  }
  return `backend retry ${entry.attempt ?? "?"}: ${reason} (waited ${entry.delayMs ?? "?"} ms)`;
}

/** `backend model` of each recorded call of a `step_end` that names its model (in call order). */
function answeringModels(calls: unknown): string[] {
  if (!Array.isArray(calls)) return [];
  const out: string[] = [];
  for (const call of calls.slice(0, 100)) {
    if (!isRecord(call) || typeof call.model !== "string") continue;
    out.push(typeof call.backend === "string" ? `${call.backend} ${call.model}` : call.model);
  }
  return out;
}

/**
 * The end node a run that ended for `reason` goes to, named like its status: `done` (completed),
 * `aborted`, `cancelled`, `timeout`, else `failed` (max iterations, retries exhausted, a failed
 * step…).
 */
export function endNode(reason: string): string {
  if (reason === "completed") return "done";
  if (reason === "aborted" || reason === "cancelled" || reason === "timeout") return reason;
  return "failed";
}

function addMove(timeline: Timeline, move: string, how: string): void {
  let hows = timeline.taken.get(move);
  if (!hows) timeline.taken.set(move, hows = new Set());
  hows.add(how);
}

/**
 * The row a tool call belongs to: the newest iteration while it is open and of the call's step
 * (the runner logs a step's calls between its `step_start` and its `step_end`; a run resumed inside
 * the step goes on logging them after its `run_resume` line), else a row of its own.
 */
function callRow(timeline: Timeline, entry: RunLogEntry): IterationRow {
  const row = timeline.current;
  const stepId = typeof entry.stepId === "string" ? entry.stepId : undefined;
  if (row && !row.end && (stepId === undefined || stepId === row.stepId)) return row;
  return startedRow(timeline, entry);
}

/**
 * The iteration still open (started, not ended): the newest one, even after a line of another kind
 * (a permission grant, a run resumed inside the step) — its end and errors are still its own.
 */
function openRow(timeline: Timeline): Extract<Row, { kind: "iteration" }> | undefined {
  const row = timeline.current;
  return row && !row.end ? row : undefined;
}

function lastIteration(timeline: Timeline): Extract<Row, { kind: "iteration" }> | undefined {
  for (let i = timeline.rows.length - 1; i >= 0; i--) {
    const row = timeline.rows[i];
    if (row.kind === "iteration") return row;
  }
  return undefined;
}

/** A row for an entry that arrived without its `step_start` (older logs). */
function startedRow(timeline: Timeline, entry: RunLogEntry): Extract<Row, { kind: "iteration" }> {
  const row: Extract<Row, { kind: "iteration" }> = {
    kind: "iteration",
    index: timeline.rows.length,
    stepId: String(entry.stepId ?? ""),
    iteration: count(entry.iteration),
    ts: entry.ts,
    lastTs: entry.ts,
    reasks: [],
    retries: [],
    errors: [],
  };
  timeline.firstStep ??= row.stepId;
  timeline.rows.push(row);
  timeline.current = row;
  return row;
}

/** `{text, length}` (the runner's form) or a plain string, else undefined. */
function loggedText(value: unknown, entry: number, field: string): LoggedText | undefined {
  if (typeof value === "string") return { text: value, length: value.length, entry, field };
  if (isRecord(value) && typeof value.text === "string") {
    const length = typeof value.length === "number" ? value.length : value.text.length;
    return { text: value.text, length, entry, field };
  }
  return undefined;
}

function usageOf(value: unknown): Timeline["usage"] {
  if (!isRecord(value)) return undefined;
  const input = value.inputTokens;
  const output = value.outputTokens;
  if (typeof input !== "number" || typeof output !== "number") return undefined;
  return {
    inputTokens: input,
    outputTokens: output,
    ...(typeof value.cacheReadTokens === "number"
      ? { cacheReadTokens: value.cacheReadTokens }
      : {}),
    ...(typeof value.cacheWriteTokens === "number"
      ? { cacheWriteTokens: value.cacheWriteTokens }
      : {}),
    ...(typeof value.costUsd === "number" ? { costUsd: value.costUsd } : {}),
  };
}

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
