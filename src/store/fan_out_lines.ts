/**
 * The run-log lines of a fan-out step (an agent step with `forEach`) and how to read them back —
 * the one record of which child runs which item, shared by the runner (which continues a fan-out
 * from them after a crash) and by every view (`--show`'s item table, `--json`). Pure data; the
 * format is documented in docs/durable-runs.md ("Fan-out steps").
 *
 * In the parent's log, in order:
 *
 * - `fanout_start` — `{ stepId, agent, total, concurrency, onItemError }`: the fan-out begins; its
 *   position among the log's entries is `state.fanOut.startLine` in the checkpoint;
 * - `fanout_child` — `{ stepId, index, childRunId, agent, attempt, item, store? }`: the child of an
 *   item, written and flushed (one checkpoint for all the children started together) **before**
 *   the child writes anything, so a resume continues that child and never starts a second one;
 *   `attempt` counts the children of the item (a `retry=N` starts a new one); `item` is the item as
 *   one short line;
 * - `fanout_child_end` — `{ stepId, index, childRunId, attempt, status, completionReason, output?,
 *   error?, usage, startedAt, endedAt }`: the child ended (`status` as `--runs` spells it), with
 *   what it handed back and its total usage; not flushed on its own: the child's own checkpoint is
 *   the record, this line a copy a resume reads instead of the child's files;
 * - `input_request` lines with `child.item` — children that wait, when the step stops to wait on
 *   them.
 *
 * @module
 */
import type { RunLogEntry } from "./types.ts";

/** A child's usage as its end line records it (the runner's `RunUsage`). */
export interface FanOutUsage {
  /** Prompt tokens. */
  inputTokens: number;
  /** Completion tokens. */
  outputTokens: number;
  /** Cost in US dollars. */
  costUsd?: number;
  /** Backend calls. */
  calls?: number;
  /** Backend calls whose tokens are unknown. */
  callsWithoutUsage?: number;
}

/** How a child of a fan-out item ended, as its `fanout_child_end` line says. */
export interface FanOutChildEnd {
  /** How it ended, as `--runs` spells it (`completed`, `failed`, `aborted`, `cancelled`, `timeout`). */
  status: string;
  /** Its completion reason. */
  completionReason: string;
  /** What it handed back (completed children). */
  output?: unknown;
  /** Why it failed. */
  error?: { code: string; message: string };
  /** Its total usage. */
  usage?: FanOutUsage;
  /** When it started (ISO): the parent's record of its start. */
  startedAt: string;
  /** When it ended (ISO). */
  endedAt: string;
}

/** One child of an item. */
export interface FanOutChildRecord {
  /** The child run (a run of the step's agent). */
  childRunId: string;
  /** Its agent. */
  agent: string;
  /** 1 for the item's first child; a `retry=N` child counts on. */
  attempt: number;
  /** `agent`: recorded in its agent's own store. */
  store?: "agent";
  /** When the parent recorded it (ISO). */
  startedAt: string;
  /** How it ended; absent while it has not (or its end line was never written). */
  end?: FanOutChildEnd;
}

/** One item of a fan-out, as the log records it. */
export interface FanOutItemRecord {
  /** The item's index in the `forEach` array. */
  index: number;
  /** The item as one short line. */
  item: string;
  /** Its children, in the order they started (usually one). */
  children: FanOutChildRecord[];
}

/** A fan-out as the log records it. */
export interface FanOutRecord {
  /** The step. */
  stepId: string;
  /** The child agent. */
  agent: string;
  /** Items. */
  total: number;
  /** When it began (ISO). */
  startedAt: string;
  /** The items that have a child, by index. */
  items: Map<number, FanOutItemRecord>;
}

/**
 * The fan-outs a run log records, each from its `fanout_start` line: the one a checkpoint marks is
 * the one at its `startLine`. Lines of other steps in between are skipped.
 *
 * @example
 * ```ts
 * import { fanOutsOf } from "./fan_out_lines.ts";
 * const ts = "2026-01-01T00:00:00.000Z";
 * const [f] = fanOutsOf([
 *   { ts, runId: "p", type: "fanout_start", stepId: "s", agent: "a", total: 2 },
 *   { ts, runId: "p", type: "fanout_child", stepId: "s", index: 1, childRunId: "c", agent: "a", attempt: 1, item: "b.ts" },
 * ]);
 * console.log(f.items.get(1)?.children[0].childRunId); // "c"
 * ```
 */
export function fanOutsOf(
  log: readonly RunLogEntry[],
  from = 0,
): (FanOutRecord & { line: number })[] {
  const out: (FanOutRecord & { line: number })[] = [];
  const open = new Map<string, FanOutRecord>();
  for (let line = from; line < log.length; line++) {
    const entry = log[line];
    const stepId = entry.stepId;
    if (typeof stepId !== "string") continue;
    if (entry.type === "fanout_start") {
      const record: FanOutRecord & { line: number } = {
        line,
        stepId,
        agent: String(entry.agent ?? "?"),
        total: count(entry.total),
        startedAt: entry.ts,
        items: new Map(),
      };
      open.set(stepId, record);
      out.push(record);
      continue;
    }
    const record = open.get(stepId);
    if (!record) continue;
    if (entry.type === "fanout_child") readChild(record, entry);
    else if (entry.type === "fanout_child_end") readEnd(record, entry);
  }
  return out;
}

/** The fan-out whose `fanout_start` is at `line` (a checkpoint's `state.fanOut.startLine`). */
export function fanOutAt(log: readonly RunLogEntry[], line: number): FanOutRecord | undefined {
  const found = fanOutsOf(log, line)[0];
  return found?.line === line ? found : undefined;
}

function readChild(record: FanOutRecord, entry: RunLogEntry): void {
  const index = entry.index;
  const childRunId = entry.childRunId;
  if (typeof index !== "number" || !Number.isInteger(index) || typeof childRunId !== "string") {
    return;
  }
  let item = record.items.get(index);
  if (!item) {
    item = { index, item: String(entry.item ?? index), children: [] };
    record.items.set(index, item);
  }
  if (item.children.some((c) => c.childRunId === childRunId)) return;
  item.children.push({
    childRunId,
    agent: String(entry.agent ?? record.agent),
    attempt: count(entry.attempt) || item.children.length + 1,
    ...(entry.store === "agent" ? { store: "agent" as const } : {}),
    startedAt: entry.ts,
  });
}

function readEnd(record: FanOutRecord, entry: RunLogEntry): void {
  const index = entry.index;
  if (typeof index !== "number") return;
  const child = record.items.get(index)?.children.find((c) => c.childRunId === entry.childRunId);
  if (!child) return;
  // A child redriven later ends again: its latest end counts.
  child.end = {
    status: String(entry.status ?? "failed"),
    completionReason: String(entry.completionReason ?? entry.status ?? "?"),
    ...(entry.output !== undefined ? { output: entry.output } : {}),
    ...(isError(entry.error) ? { error: entry.error } : {}),
    ...(isUsage(entry.usage) ? { usage: entry.usage } : {}),
    startedAt: typeof entry.startedAt === "string" ? entry.startedAt : child.startedAt,
    endedAt: typeof entry.endedAt === "string" ? entry.endedAt : entry.ts,
  };
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : 0;
}

function isError(value: unknown): value is { code: string; message: string } {
  const e = value as { code?: unknown; message?: unknown } | undefined;
  return typeof e?.code === "string" && typeof e.message === "string";
}

function isUsage(value: unknown): value is FanOutUsage {
  const u = value as FanOutUsage | undefined;
  return typeof u?.inputTokens === "number" && typeof u.outputTokens === "number";
}

/** One item of a fan-out as `--show` and `--show --json` list it. */
export interface FanOutItemRow {
  /** The item's index in the `forEach` array (from 0). */
  index: number;
  /** The item as one short line (`?` for an item no child started for). */
  item: string;
  /**
   * How its latest child ended, as `--runs` spells it; for one that has not: `statusOf` its run
   * (`running`, `waiting`, `interrupted`, …), else `started`; `not started` for an item no child
   * started for yet.
   */
  status: string;
  /** Its latest child run. */
  runId?: string;
  /** Children it had (more than one under `onItemError: "retry=N"`). */
  children: number;
  /** When its first child started (ISO). */
  startedAt?: string;
  /** When its latest child ended (ISO). */
  endedAt?: string;
  /** From its first child's start to its latest child's end. */
  durationMs?: number;
  /** What its children used, summed. */
  usage?: FanOutUsage;
  /** Why it failed. */
  error?: { code: string; message: string };
}

/**
 * The items of a fan-out as rows, in item order: every item up to its `total`, each with how its
 * latest child ended (or `statusOf` its run while it has not), its time and its usage.
 */
export function fanOutRows(
  record: FanOutRecord,
  statusOf: (runId: string) => string | undefined = () => undefined,
): FanOutItemRow[] {
  const rows: FanOutItemRow[] = [];
  const total = Math.max(record.total, ...[...record.items.keys()].map((i) => i + 1));
  for (let index = 0; index < total; index++) {
    const item = record.items.get(index);
    const last = item?.children[item.children.length - 1];
    if (!item || !last) {
      rows.push({ index, item: "?", status: "not started", children: 0 });
      continue;
    }
    const row: FanOutItemRow = {
      index,
      item: item.item,
      status: last.end?.status ?? statusOf(last.childRunId) ?? "started",
      runId: last.childRunId,
      children: item.children.length,
      startedAt: item.children[0].end?.startedAt ?? item.children[0].startedAt,
    };
    if (last.end) {
      row.endedAt = last.end.endedAt;
      const ms = Date.parse(row.endedAt) - Date.parse(row.startedAt!);
      if (Number.isFinite(ms) && ms >= 0) row.durationMs = ms;
      if (last.end.error) row.error = last.end.error;
    }
    const usage = item.children.flatMap((c) => c.end?.usage ? [c.end.usage] : []);
    if (usage.length > 0) {
      row.usage = {
        inputTokens: usage.reduce((n, u) => n + u.inputTokens, 0),
        outputTokens: usage.reduce((n, u) => n + u.outputTokens, 0),
        costUsd: usage.reduce((n, u) => n + (u.costUsd ?? 0), 0),
        calls: usage.reduce((n, u) => n + (u.calls ?? 0), 0),
        callsWithoutUsage: usage.reduce((n, u) => n + (u.callsWithoutUsage ?? 0), 0),
      };
    }
    rows.push(row);
  }
  return rows;
}
