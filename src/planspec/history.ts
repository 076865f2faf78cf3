/**
 * The run history of a plan: one JSON object per line in `<plan>.history.jsonl`, appended as the
 * run goes. It holds what the plan file cannot: output values (the inputs of later steps),
 * reflections, answers to questions and re-planning commands, so that a killed run continues with
 * the same context.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { appendJsonLine } from "../store/append_log.ts";

/** What an entry records. */
export type PlanHistoryKind =
  | "start"
  | "round"
  | "step"
  | "reflection"
  | "interact"
  | "replan"
  | "end";

/** One history entry. */
export interface PlanHistoryEntry {
  /** What happened. */
  kind: PlanHistoryKind;
  /** The round it happened in. */
  round: number;
  /** ISO time. */
  at: string;
  /** The step concerned (`step`, `reflection`, `interact`). */
  stepId?: string;
  /** The step's type. */
  stepType?: string;
  /** The step's description. */
  description?: string;
  /** `step`: OK / FAIL / UNCERTAIN / LACK_OF_INFO; `end`: the run status. */
  status?: string;
  /** `step`: the result line. */
  result?: string;
  /** `step`: output values by name. */
  outputs?: Record<string, unknown>;
  /** `step`: the chosen branch of a decide step. */
  branch?: string;
  /** `step`: 1-based attempt. */
  attempt?: number;
  /** `reflection`: RETRY / ACCEPT / INTERACT / PLAN_CMD. */
  decision?: string;
  /** `reflection` / `replan`: the model's reason. */
  reason?: string;
  /** `reflection` / `replan`: the commands applied, as `PLAN_CMD:` text. */
  commands?: string[];
  /** Errors of commands that could not be applied, or of a failed regeneration. */
  errors?: string[];
  /** `interact`: the question. */
  question?: string;
  /** `interact`: the user's answer. */
  answer?: string;
}

/**
 * Reads a history file; a missing file is an empty history. A last line cut short by a kill is
 * dropped (it was never acknowledged); any other broken line is an error naming it.
 *
 * @throws {StepflowError} `PLAN_HISTORY_INVALID`
 */
export async function readHistory(file: string): Promise<PlanHistoryEntry[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  const lines = text.split("\n");
  const entries: PlanHistoryEntry[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "") continue;
    try {
      entries.push(JSON.parse(line) as PlanHistoryEntry);
    } catch {
      const isLast = lines.slice(i + 1).every((l) => l.trim() === "");
      if (isLast) break;
      throw new StepflowError(
        "PLAN_HISTORY_INVALID",
        `${file}:${
          i + 1
        }: not a JSON history entry. Repair or delete the line (the plan file itself is intact).`,
        { details: { file, line: i + 1 } },
      );
    }
  }
  return entries;
}

/**
 * Appends one entry as a JSON line through the one JSONL writer (`store/append_log.ts`): a last
 * line torn by a kill is cut off first (`onWarning` is told), so the damage never moves into the
 * middle of the file.
 */
export function appendHistory(
  file: string,
  entry: PlanHistoryEntry,
  onWarning?: (message: string) => void,
): Promise<void> {
  try {
    appendJsonLine(file, entry, {
      onTornTail: (bytes) =>
        onWarning?.(
          `run history ${file} ended with a torn line (${bytes} bytes written by a crash in the middle of an append); it was cut off before appending.`,
        ),
    });
    return Promise.resolve();
  } catch (error) {
    return Promise.reject(error);
  }
}
