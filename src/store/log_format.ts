/**
 * The on-disk run log: one JSON object per line (JSONL), each line ended by `\n`.
 *
 * What a reader tolerates, and why: a crash (kill -9, power cut) in the middle of an append can leave
 * the file's **last** line without its terminating newline — a torn append. That line was never
 * counted by a checkpoint (the runner writes a checkpoint only after an append returned), so it is
 * dropped. Anything else — a line that is not JSON, not an entry, or belongs to another run,
 * anywhere in the file, including a complete last line — is damage from outside stepflow and is an
 * error naming the file, the line and the last good entry. A run is never silently restarted.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { RunLogEntry } from "./types.ts";

/** A torn last line: the bytes after the log's last newline. */
export interface TornTail {
  /** 1-based line number of the torn line. */
  line: number;
  /** Length of the torn text in UTF-16 code units. */
  length: number;
}

/** The entries of a run log, and the torn last line that was dropped, if any. */
export interface ParsedRunLog {
  /** Entries in file order. */
  entries: RunLogEntry[];
  /** Set when the last line had no newline (a crash mid-append) and was dropped. */
  tornTail?: TornTail;
}

/**
 * Serialises one entry as a log line (JSON plus `\n`). JSON never contains a raw newline, so one
 * entry is always one line.
 *
 * @example
 * ```ts
 * import { formatLogLine } from "./log_format.ts";
 * formatLogLine({ ts: "2026-01-01T00:00:00.000Z", runId: "r1", type: "run_start" });
 * // '{"ts":"2026-01-01T00:00:00.000Z","runId":"r1","type":"run_start"}\n'
 * ```
 */
export function formatLogLine(entry: RunLogEntry): string {
  let json: string;
  try {
    json = JSON.stringify(entry);
  } catch (error) {
    throw new StepflowError(
      "RUN_LOG_ENTRY_INVALID",
      `Cannot record the ${entry.type} entry of run ${entry.runId}: it is not plain JSON (${
        (error as Error).message
      }).`,
      { cause: error, details: { runId: entry.runId, type: entry.type } },
    );
  }
  return json + "\n";
}

/**
 * Parses the text of a run log. Tolerates exactly one thing: a torn last line (no trailing newline),
 * which is dropped and reported in `tornTail`. Any other bad line throws `RUN_LOG_CORRUPT`, naming
 * `file`, the line number and the last good entry.
 *
 * @param text the file's content
 * @param file the file's path (for messages)
 * @param runId the run the log must belong to
 *
 * @example
 * ```ts
 * import { parseRunLog } from "./log_format.ts";
 * const text = '{"ts":"t","runId":"r1","type":"run_start"}\n{"ts":"t","ru';
 * const log = parseRunLog(text, "r1.jsonl", "r1");
 * console.log(log.entries.length, log.tornTail?.line); // 1 2
 * ```
 */
export function parseRunLog(text: string, file: string, runId: string): ParsedRunLog {
  const entries: RunLogEntry[] = [];
  const result: ParsedRunLog = { entries };
  let start = 0;
  let line = 0;
  while (start < text.length) {
    line++;
    const end = text.indexOf("\n", start);
    if (end === -1) {
      result.tornTail = { line, length: text.length - start };
      break;
    }
    const raw = text.slice(start, end);
    start = end + 1;
    const problem = lineProblem(raw, runId);
    if (typeof problem === "string") {
      throw corruptLogError(file, line, problem, entries);
    }
    entries.push(problem);
  }
  return result;
}

/** The entry on a line, or why the line is not one. */
function lineProblem(raw: string, runId: string): RunLogEntry | string {
  if (raw.trim() === "") return "the line is empty";
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return `the line is not valid JSON (${(error as Error).message})`;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return "the line is not a JSON object";
  }
  const entry = value as Record<string, unknown>;
  for (const field of ["ts", "runId", "type"]) {
    if (typeof entry[field] !== "string") return `the entry has no string "${field}" field`;
  }
  if (entry.runId !== runId) return `the entry belongs to run "${entry.runId}", not "${runId}"`;
  return entry as RunLogEntry;
}

/** Describes an entry for messages: `line 7 (step_end of step "a", iteration 3, at <ts>)`. */
export function describeEntry(entry: RunLogEntry, line: number): string {
  const parts = [entry.type];
  if (entry.stepId) parts[0] += ` of step "${entry.stepId}"`;
  if (typeof entry.iteration === "number") parts.push(`iteration ${entry.iteration}`);
  parts.push(`at ${entry.ts}`);
  return `line ${line} (${parts.join(", ")})`;
}

/** The "last good entry" sentence of corruption messages. */
export function lastGoodSentence(entries: readonly RunLogEntry[]): string {
  return entries.length === 0
    ? "No entry before it is readable."
    : `The last good entry is ${describeEntry(entries[entries.length - 1], entries.length)}.`;
}

function corruptLogError(
  file: string,
  line: number,
  problem: string,
  entries: readonly RunLogEntry[],
): StepflowError {
  const last = entries[entries.length - 1];
  return new StepflowError(
    "RUN_LOG_CORRUPT",
    `Run log ${file} is corrupt at line ${line}: ${problem}. ${
      lastGoodSentence(entries)
    } Only a torn last line (a crash in the middle of an append) is tolerated; damage anywhere else means the file was changed outside stepflow. Restore the file from a backup — stepflow will not resume a run from a damaged log.`,
    {
      details: {
        file,
        line,
        lastGoodLine: entries.length || undefined,
        lastGoodEntry: last,
      },
    },
  );
}
