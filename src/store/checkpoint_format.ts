/**
 * The on-disk checkpoint: one JSON document, replaced atomically after every iteration.
 *
 * @module
 */
import { z } from "zod";
import { StepflowError } from "../errors.ts";
import { RUN_STATUSES } from "../run_statuses.ts";
import type { RunCheckpoint } from "./types.ts";

/** The shape a checkpoint file must have; extra keys are kept (newer writers may add some). */
const CheckpointSchema = z.looseObject({
  version: z.union([z.literal(1), z.literal(2)]),
  runId: z.string().min(1),
  agent: z.string(),
  status: z.enum(RUN_STATUSES),
  startedAt: z.string().min(1),
  updatedAt: z.string().min(1),
  logEntries: z.int().min(0),
  state: z.record(z.string(), z.unknown()),
});

/**
 * Parses a checkpoint file's text. Throws `RUN_CHECKPOINT_CORRUPT` (not JSON) or
 * `RUN_CHECKPOINT_INVALID` (wrong shape, or another run's checkpoint), naming `file`; `context` is
 * appended to the message (the caller adds where the run log stands).
 *
 * @example
 * ```ts
 * import { parseCheckpoint } from "./checkpoint_format.ts";
 * const cp = parseCheckpoint(
 *   JSON.stringify({
 *     version: 1, runId: "r1", agent: "a", status: "running", startedAt: "t", updatedAt: "t",
 *     logEntries: 2, state: {},
 *   }),
 *   "r1.checkpoint.json",
 *   "r1",
 * );
 * console.log(cp.status); // "running"
 * ```
 */
export function parseCheckpoint(
  text: string,
  file: string,
  runId: string,
  context = "",
): RunCheckpoint {
  const tail = context ? ` ${context}` : "";
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StepflowError(
      "RUN_CHECKPOINT_CORRUPT",
      `Checkpoint ${file} is corrupt: ${
        text.length === 0 ? "the file is empty" : `not valid JSON (${(error as Error).message})`
      }. Checkpoints are replaced atomically, so this is damage from outside stepflow (disk, editing).${tail} Restore the file from a backup; stepflow will not restart the run silently.`,
      { cause: error, details: { file } },
    );
  }
  const parsed = CheckpointSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length ? `"${issue.path.join(".")}"` : "the document";
    throw new StepflowError(
      "RUN_CHECKPOINT_INVALID",
      `Checkpoint ${file} is not a stepflow checkpoint (version 1 or 2): ${where}: ${issue.message}.${tail} Restore the file from a backup.`,
      { details: { file, path: issue.path.map(String) } },
    );
  }
  if (parsed.data.runId !== runId) {
    throw new StepflowError(
      "RUN_CHECKPOINT_INVALID",
      `Checkpoint ${file} belongs to run "${parsed.data.runId}", not "${runId}"; the file was copied or renamed by hand.${tail}`,
      { details: { file } },
    );
  }
  return parsed.data as RunCheckpoint;
}
