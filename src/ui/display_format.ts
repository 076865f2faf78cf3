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

/** A cost in US dollars: `$0.0042`, `$1.25`; empty when unknown or zero. */
export function cost(usd: number | undefined): string {
  return usd ? `$${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}` : "";
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

/** Link of a run page. */
export function runHref(runId: string): string {
  return `/runs/${encodeURIComponent(runId)}`;
}
