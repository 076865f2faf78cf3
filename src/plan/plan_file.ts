/**
 * Plan files: reading with precise errors, atomic writing, and resetting for a fresh run.
 *
 * @module
 */
import { writeFileAtomic } from "../atomic_write.ts";
import { StepflowError } from "../errors.ts";
import { readTextFileOr } from "../read_text_file.ts";
import { parsePlan } from "./schema.ts";
import type { Plan } from "./types.ts";

/**
 * Reads and parses a plan file (JSON). Errors name the file and, for JSON syntax errors, the line
 * and column; schema problems list every path.
 *
 * @throws StepflowError `PLAN_FILE_NOT_FOUND`, `PLAN_FILE_INVALID_JSON`; `PlanParseError` (`PLAN_INVALID`)
 */
export async function readPlanFile(file: string): Promise<Plan> {
  return parsePlan(await readPlanJson(file), file);
}

/**
 * Reads a plan file's JSON without checking its shape (for a caller that validates it with
 * `validatePlan` to report every problem at once). Errors name the file and, for JSON syntax
 * errors, the line and column.
 *
 * @throws StepflowError `PLAN_FILE_NOT_FOUND`, `PLAN_FILE_INVALID_JSON`
 */
export async function readPlanJson(file: string): Promise<unknown> {
  const text = await readTextFileOr(file, "PLAN_FILE_NOT_FOUND", "plan file", ".");
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const where = positionOf(text, message);
    throw new StepflowError(
      "PLAN_FILE_INVALID_JSON",
      `${file}${where ? `:${where.line}:${where.column}` : ""}: not valid JSON: ${message}`,
      { details: { file, ...where } },
    );
  }
  return data;
}

/**
 * Writes a plan file atomically: a temporary file next to it, then a rename, so a crash never
 * leaves half a plan behind.
 */
export async function writePlanFile(file: string, plan: Plan): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(plan, null, 2)}\n`);
}

/**
 * A copy of the plan with every step back to `pending` and no results (`run-plan --restart`).
 * User skips are kept unless `keepSkips` is false.
 */
export function resetPlan(plan: Plan, keepSkips = true): Plan {
  const next = structuredClone(plan);
  for (const step of next.steps) {
    if (
      keepSkips && step.status === "skipped" && step.result?.error?.startsWith("Skipped by user")
    ) {
      continue;
    }
    step.status = "pending";
    delete step.result;
  }
  return next;
}

function positionOf(text: string, message: string): { line: number; column: number } | undefined {
  const lc = /line (\d+) column (\d+)/.exec(message);
  if (lc) return { line: Number(lc[1]), column: Number(lc[2]) };
  const pos = /position (\d+)/.exec(message);
  if (!pos) return undefined;
  const offset = Number(pos[1]);
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - before.lastIndexOf("\n") };
}

/** The `tool` of every step of a plan read from a file, as far as its shape can be read. */
export function planToolNames(plan: unknown): string[] {
  const steps = (plan as { steps?: unknown } | null)?.steps;
  if (!Array.isArray(steps)) return [];
  return steps.flatMap((s) => {
    const tool = (s as { tool?: unknown } | null)?.tool;
    return typeof tool === "string" ? [tool] : [];
  });
}
