/**
 * A run's fan-out steps as the dashboard shows them: each fan-out its run log records
 * (`store/fan_out_lines.ts`, the one record of which child runs which item — the same `--show`
 * reads), every child with how it ended or, while it has not, how its own run stands (read from
 * the store that lists it: `running`, `waiting`, `interrupted`…), and the counts the flow graph's
 * progress bar and the section's summary line show. Pure data; `fan_out_section.ts` draws it.
 *
 * @module
 */
import { fanOutRows, fanOutsOf, type FanOutUsage } from "../store/fan_out_lines.ts";
import type { RunLogEntry } from "../store/types.ts";

/** One child run of a fan-out item (an item retried under `retry=N` has several). */
export interface FanOutChildView {
  /** The item's index in the `forEach` array (from 0). */
  index: number;
  /** The item as one short line. */
  item: string;
  /** 1 for the item's first child. */
  attempt: number;
  /** The child run. */
  runId: string;
  /** How it ended (as `--runs` spells it) or stands (`running`, `waiting`, `interrupted`, `started`). */
  status: string;
  /** When it started (ISO). */
  startedAt: string;
  /** When it ended (ISO); for a child that stopped without an end line, its last update. */
  endedAt?: string;
  /** What it used. */
  usage?: FanOutUsage;
  /** Why it failed. */
  error?: { code: string; message: string };
}

/** One item: how its latest child stands, its time, its tokens. */
export interface FanOutItemView {
  /** The item's index (from 0). */
  index: number;
  /** The item as one short line (`?` for an item no child started for). */
  item: string;
  /** As {@linkcode FanOutChildView.status}, or `not started`. */
  status: string;
  /** Its latest child run. */
  runId?: string;
  /** Children it had. */
  children: number;
  /** From its first child's start to its latest child's end. */
  durationMs?: number;
  /** What its children used, summed. */
  usage?: FanOutUsage;
  /** Why it failed. */
  error?: { code: string; message: string };
}

/** How many items stand where (each item counted once, by its latest child). */
export interface FanOutCounts {
  /** Items. */
  total: number;
  /** Completed. */
  completed: number;
  /** Failed for good (`failed`, `aborted`, `cancelled`, `timeout`). */
  failed: number;
  /** Running (a process drives the child). */
  running: number;
  /** Waiting for an answer. */
  waiting: number;
  /** Stopped without an end (`interrupted`: nobody drives it; a resume continues it). */
  stopped: number;
  /** No child yet. */
  notStarted: number;
}

/** One fan-out of a run. */
export interface FanOutView {
  /** The fan-out step. */
  stepId: string;
  /** Its child agent. */
  agent: string;
  /** When it began (ISO). */
  startedAt: string;
  /** Its items, in item order. */
  items: FanOutItemView[];
  /** Every child, in item order (retries after the first). */
  children: FanOutChildView[];
  /** The items' counts. */
  counts: FanOutCounts;
  /** True for the step's latest fan-out in the run (the one its graph node and anchors show). */
  latest: boolean;
}

/** How a child without an end line stands, from its own run's listing. */
export interface ChildStanding {
  /** Its shown status (`running`, `waiting`, `interrupted`, …). */
  status: string;
  /** Its last update (ISO). */
  updatedAt?: string;
}

/** Statuses that count as failed. */
const FAILED: ReadonlySet<string> = new Set(["failed", "aborted", "cancelled", "timeout"]);

/** Statuses of a child some process is moving on. */
const RUNNING: ReadonlySet<string> = new Set(["running", "paused", "queued", "started"]);

/** The children without an end line whose own run is looked up, at most (the rest: `started`). */
export const MAX_CHILD_LOOKUPS = 256;

/**
 * The children of a run's fan-outs that have no end line yet (whose standing
 * {@linkcode fanOutViews} needs), at most {@linkcode MAX_CHILD_LOOKUPS}.
 */
export function openChildren(log: readonly RunLogEntry[]): string[] {
  const out: string[] = [];
  for (const record of fanOutsOf(log)) {
    for (const item of record.items.values()) {
      for (const child of item.children) {
        if (!child.end && out.length < MAX_CHILD_LOOKUPS) out.push(child.childRunId);
      }
    }
  }
  return out;
}

/**
 * The fan-outs a run log records, with each child's standing: its end line, else
 * `standing(runId)` (its own run as the store lists it), else `started`.
 *
 * @example
 * ```ts
 * import { fanOutViews } from "./fan_out_view.ts";
 * const ts = "2026-01-01T00:00:00.000Z";
 * const [f] = fanOutViews([
 *   { ts, runId: "p", type: "fanout_start", stepId: "s", agent: "a", total: 2 },
 *   { ts, runId: "p", type: "fanout_child", stepId: "s", index: 0, childRunId: "c", agent: "a", attempt: 1, item: "a.ts" },
 * ], (id) => id === "c" ? { status: "running" } : undefined);
 * console.log(f.counts); // { total: 2, completed: 0, failed: 0, running: 1, waiting: 0, stopped: 0, notStarted: 1 }
 * ```
 */
export function fanOutViews(
  log: readonly RunLogEntry[],
  standing: (runId: string) => ChildStanding | undefined = () => undefined,
): FanOutView[] {
  const records = fanOutsOf(log);
  const latestOf = new Map(records.map((r, i) => [r.stepId, i]));
  return records.map((record, n) => {
    const items = fanOutRows(record, (runId) => standing(runId)?.status).map((row) => ({
      index: row.index,
      item: row.item,
      status: row.status,
      ...(row.runId !== undefined ? { runId: row.runId } : {}),
      children: row.children,
      ...(row.durationMs !== undefined ? { durationMs: row.durationMs } : {}),
      ...(row.usage ? { usage: row.usage } : {}),
      ...(row.error ? { error: row.error } : {}),
    }));
    const children: FanOutChildView[] = [];
    for (const item of [...record.items.values()].sort((a, b) => a.index - b.index)) {
      for (const child of item.children) {
        const stands = child.end ? undefined : standing(child.childRunId);
        const status = child.end?.status ?? stands?.status ?? "started";
        // A child that stopped without an end line is drawn up to its last update.
        const endedAt = child.end?.endedAt ??
          (isOpen(status) ? undefined : stands?.updatedAt);
        children.push({
          index: item.index,
          item: item.item,
          attempt: child.attempt,
          runId: child.childRunId,
          status,
          startedAt: child.end?.startedAt ?? child.startedAt,
          ...(endedAt !== undefined ? { endedAt } : {}),
          ...(child.end?.usage ? { usage: child.end.usage } : {}),
          ...(child.end?.error ? { error: child.end.error } : {}),
        });
      }
    }
    return {
      stepId: record.stepId,
      agent: record.agent,
      startedAt: record.startedAt,
      items,
      children,
      counts: countItems(items),
      latest: latestOf.get(record.stepId) === n,
    };
  });
}

/** The items' counts, each item by its latest child. */
export function countItems(items: readonly Pick<FanOutItemView, "status">[]): FanOutCounts {
  const counts: FanOutCounts = {
    total: items.length,
    completed: 0,
    failed: 0,
    running: 0,
    waiting: 0,
    stopped: 0,
    notStarted: 0,
  };
  for (const { status } of items) counts[categoryOf(status)]++;
  return counts;
}

/** Which count a status falls in. */
export function categoryOf(status: string): Exclude<keyof FanOutCounts, "total"> {
  if (status === "completed") return "completed";
  if (FAILED.has(status)) return "failed";
  if (status === "waiting") return "waiting";
  if (RUNNING.has(status)) return "running";
  if (status === "not started") return "notStarted";
  return "stopped";
}

/** True while a child may still move on by itself or by an answer (drawn up to now). */
export function isOpen(status: string): boolean {
  const category = categoryOf(status);
  return category === "running" || category === "waiting";
}

/**
 * `12/40 done · 4 running · 1 failed`, as the live line of `run-agent` says it, with the waiting,
 * stopped and not started items when there are any.
 */
export function countsText(counts: FanOutCounts): string {
  const parts = [`${counts.completed}/${counts.total} done`, `${counts.running} running`];
  parts.push(`${counts.failed} failed`);
  if (counts.waiting > 0) parts.push(`${counts.waiting} waiting`);
  if (counts.stopped > 0) parts.push(`${counts.stopped} stopped`);
  if (counts.notStarted > 0 && counts.notStarted < counts.total) {
    parts.push(`${counts.notStarted} not started`);
  }
  return parts.join(" · ");
}

/** The order of the children list: failures first, then waiting, stopped, running, not started, completed. */
const LIST_ORDER: Readonly<Record<Exclude<keyof FanOutCounts, "total">, number>> = Object.freeze({
  failed: 0,
  waiting: 1,
  stopped: 2,
  running: 3,
  notStarted: 4,
  completed: 5,
});

/** The items as the run page lists them: failures first (then in item order within each kind). */
export function listOrder(items: readonly FanOutItemView[]): FanOutItemView[] {
  return [...items].sort((a, b) =>
    LIST_ORDER[categoryOf(a.status)] - LIST_ORDER[categoryOf(b.status)] || a.index - b.index
  );
}

/** The id of an item's row on its parent's page (the child's page links to it). */
export function itemAnchor(stepId: string, index: number): string {
  return `fanout-${stepId}-item-${index}`;
}
