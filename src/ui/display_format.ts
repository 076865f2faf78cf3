/**
 * How the dashboard's pages show numbers, times and values: token usage, cost, durations,
 * timestamps and JSON, and the links of a timeline row's parts. Plain text; the pages escape it.
 *
 * @module
 */
import type { RunSummary } from "../store/types.ts";

/** `1200 / 310`; `?` when no call reported usage, `1200 / 310 + ?` when some did not. */
export function usageText(usage: NonNullable<RunSummary["usage"]>): string {
  const known = `${usage.inputTokens} / ${usage.outputTokens}`;
  if (!usage.callsWithoutUsage) return known;
  return usage.inputTokens === 0 && usage.outputTokens === 0 ? "?" : `${known} + ?`;
}

/**
 * A cost in US dollars: `$0.0042`, `$1.25`; `unknown` when no call could be priced (`null`),
 * `$1.25 + unknown for 2` when some could not; empty when zero with nothing unknown.
 */
export function cost(usd: number | null | undefined, unknownCalls = 0): string {
  if (usd === null) return "unknown";
  const known = usd ? `$${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}` : "";
  if (unknownCalls <= 0) return known;
  return known ? `${known} + unknown for ${unknownCalls}` : "unknown";
}

/** `1.2 s`, `3 min 04 s`, `850 ms`. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, "0")} min`;
}

/** An ISO timestamp shown as `2026-01-02 03:04:05Z` (a space, no fractions). */
export function formatTime(iso: string): string {
  return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
}

/** A value as indented JSON, or its `String` when it cannot be JSON (cycles, BigInt). */
export function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** The link of a timeline row's part (`prompt`, `answer`, `call3`, …), loaded when opened. */
export function rowPartHref(runId: string, index: number, name: string): string {
  return `/runs/${encodeURIComponent(runId)}/rows/${index}/${name}`;
}

/** The run's recorded budget (`$5.00, 200,000 tokens`), when one was given. */
export function budgetOf(state: Record<string, unknown> | undefined): string | undefined {
  const b = state?.budget as Record<string, unknown> | undefined;
  if (!b || typeof b !== "object") return undefined;
  const parts: string[] = [];
  if (typeof b.usd === "number") parts.push(`$${b.usd.toFixed(2)}`);
  if (typeof b.tokens === "number") parts.push(`${b.tokens} tokens`);
  if (typeof b.modelCalls === "number") parts.push(`${b.modelCalls} model calls`);
  if (typeof b.toolCalls === "number") parts.push(`${b.toolCalls} tool calls`);
  return parts.length ? parts.join(", ") : undefined;
}

/** What each step spent (its child runs included), dearest first; undefined when nothing was. */
export function spentBySteps(state: Record<string, unknown> | undefined): string | undefined {
  const byStep = state?.spendByStep as Record<string, unknown> | undefined;
  if (!byStep || typeof byStep !== "object") return undefined;
  const rows: [string, number, number, number][] = [];
  for (const [id, v] of Object.entries(byStep)) {
    const s = v as Record<string, unknown>;
    if (typeof s?.costUsd !== "number" || typeof s.calls !== "number") continue;
    rows.push([
      id,
      s.costUsd,
      s.calls,
      typeof s.callsWithoutCost === "number" ? s.callsWithoutCost : 0,
    ]);
  }
  if (rows.length === 0) return undefined;
  rows.sort((a, b) => b[1] - a[1]);
  return rows.slice(0, 10).map(([id, usd, calls, unknown]) =>
    `${id} ${unknown >= calls ? "unknown" : cost(usd, unknown) || "$0"} (${calls} call${
      calls === 1 ? "" : "s"
    })`
  ).join(" · ");
}
