/**
 * Run ids: the one format every engine gives its runs, and the one rule every store checks.
 *
 * New ids are `<UTC start, to the second>-<6 hex>` (`20261122T041500Z-1a2b3c`): they sort by start
 * time, are unique enough for one folder of runs, and read well in `--runs` and logs. Stores
 * accept any id that can safely name a file ({@linkcode isValidRunId}), so ids written by earlier
 * versions (UUIDs for tool plans and PlanSpec runs, `run-<base36>-<hex>` for QPlan scripts) and ids
 * chosen by callers still load, resume and redrive.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";

/** Allowed run ids: letters, digits, `_` and `-` (no dots or slashes: ids become file names). */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/**
 * A sortable, unique run id: `20261122T041500Z-1a2b3c` (start time in UTC + 3 random bytes).
 *
 * @param now the start time (default: the current time)
 *
 * @example
 * ```ts
 * import { newRunId } from "./run_id.ts";
 * newRunId(new Date("2026-11-22T04:15:00.123Z")); // "20261122T041500Z-" + 6 hex digits
 * ```
 */
export function newRunId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const random = crypto.getRandomValues(new Uint8Array(3));
  return `${stamp}-${[...random].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** True when `runId` can name a run's files: 1-128 letters, digits, `_` or `-`, not starting with `_`/`-`. */
export function isValidRunId(runId: unknown): runId is string {
  return typeof runId === "string" && RUN_ID.test(runId);
}

/** Throws `RUN_ID_INVALID` unless `runId` can safely name files. */
export function assertRunId(runId: string): void {
  if (!isValidRunId(runId)) {
    throw new StepflowError(
      "RUN_ID_INVALID",
      `Invalid run id ${
        JSON.stringify(runId)
      }: run ids are 1-128 letters, digits, "_" or "-", starting with a letter or digit (they name files). Copy the id from the list of runs.`,
      { details: { runId } },
    );
  }
}
