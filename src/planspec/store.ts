/**
 * Plan files on disk, with PlanSpec's storage convention (docs/planspec.md): plans in
 * `planspec/<snake_name>.md`, finished plans in `planspec/archive/`, task-level plans in
 * `Tasks/<name>/plan.md`. Every write is atomic (a temp file in the same folder, then a rename), so
 * a killed process never leaves half a plan.
 *
 * @module
 */
import { fileAccessError } from "../fs_error.ts";
import { basename, dirname, extname, isAbsolute, join, resolve } from "node:path";
import { writeFileAtomic } from "../atomic_write.ts";
import { StepflowError } from "../errors.ts";
import { readTextFileOr } from "../read_text_file.ts";
import { lockPlanFile } from "../store/file_lock.ts";
import { isSpanOf, spanEnd } from "../unicode_span.ts";
import { PlanParseError } from "./errors.ts";
import { parsePlan } from "./parse.ts";
import { serializePlan } from "./serialize.ts";
import { isComplete, planProgress } from "./tree.ts";
import type { PlanProgress, PlanSpec } from "./types.ts";
import { pathExists } from "../path_exists.ts";

/** The folder of the plans (`<base>/planspec`). */
export function planspecDir(base: string): string {
  return join(base, "planspec");
}

/** Where a plan reference was found. */
export interface ResolvedPlan {
  /** Absolute path of the plan file. */
  file: string;
  /** The plan's name (file name without `.md`, or the task name). */
  name: string;
  /** Which rule matched. */
  source: "planspec" | "tasks" | "path";
}

/** A bare plan name: letters, digits, `_`, `-`, `.`, no path separators and not `.`/`..`. */
export function isPlanName(ref: string): boolean {
  return isSpanOf(ref, "[\\p{L}\\p{N}_.-]") && ref !== "." && ref !== ".." &&
    !ref.includes("..");
}

/**
 * Finds a plan by name or path, in this order: `planspec/<name>.md`, then
 * `Tasks/<name>/plan.md`, then `ref` as a file path (relative to `base`).
 *
 * @throws {StepflowError} `PLAN_NOT_FOUND` listing every place that was tried
 */
export async function resolvePlanRef(ref: string, base: string): Promise<ResolvedPlan> {
  const tried: string[] = [];
  if (isPlanName(ref)) {
    const stem = ref.toLowerCase().endsWith(".md") ? ref.slice(0, -3) : ref;
    const inPlanspec = join(planspecDir(base), `${stem}.md`);
    tried.push(inPlanspec);
    if (await isFile(inPlanspec)) return { file: inPlanspec, name: stem, source: "planspec" };
    const inTasks = join(base, "Tasks", ref, "plan.md");
    tried.push(inTasks);
    if (await isFile(inTasks)) return { file: inTasks, name: ref, source: "tasks" };
  }
  const asPath = isAbsolute(ref) ? ref : resolve(base, ref);
  tried.push(asPath);
  if (await isFile(asPath)) {
    const file = basename(asPath);
    const name = file === "plan.md" ? basename(dirname(asPath)) : basename(file, extname(file));
    return { file: asPath, name, source: "path" };
  }
  throw new StepflowError(
    "PLAN_NOT_FOUND",
    `No plan ${JSON.stringify(ref)}: looked for ${
      tried.join(", ")
    }. List the plans with 'plan list' or pass a file path.`,
    { details: { ref, tried } },
  );
}

/**
 * Whether `path` is a file; a path that exists but cannot be looked at (an unreadable folder on
 * the way, a link loop, a name too long) is `FILE_ACCESS`, not "no plan".
 */
async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) {
      return false;
    }
    throw fileAccessError(error, { action: "look for the plan", path }) ?? error;
  }
}

/**
 * Reads and parses a plan file. Parse errors are rethrown with the file name in front of the line
 * number (`planspec/x.md: line 7: …`).
 *
 * @throws {StepflowError} `PLAN_NOT_FOUND` when the file cannot be read, `PLANSPEC_PARSE` when it
 * does not parse
 */
export async function readPlanFile(file: string): Promise<PlanSpec> {
  const text = await readTextFileOr(file, "PLAN_NOT_FOUND", "plan file");
  try {
    return parsePlan(text);
  } catch (error) {
    if (error instanceof PlanParseError) {
      throw new StepflowError("PLANSPEC_PARSE", `${file}: ${error.message}`, {
        cause: error,
        details: { file, line: error.line },
      });
    }
    if (error instanceof StepflowError && error.code === "PLANSPEC_TOO_DEEP") {
      throw new StepflowError(error.code, `${file}: ${error.message}`, {
        cause: error,
        details: { file, ...error.details },
      });
    }
    throw error;
  }
}

/**
 * Serializes a plan and writes it atomically with the one atomic writer (`writeFileAtomic` of
 * `src/atomic_write.ts`: a temp file beside it, then a rename over the target; the folder is
 * created when missing).
 *
 * @throws {StepflowError} `PLAN_WRITE_FAILED` naming the file
 */
export async function writePlanFile(file: string, plan: PlanSpec): Promise<void> {
  await writeTextFile(file, serializePlan(plan));
}

/**
 * Writes text atomically (the one atomic writer); a failure is `PLAN_WRITE_FAILED` naming the file.
 */
export async function writeTextFile(file: string, text: string): Promise<void> {
  try {
    await writeFileAtomic(file, text);
  } catch (error) {
    throw new StepflowError(
      "PLAN_WRITE_FAILED",
      `Cannot write ${file}: ${(error as Error).message}`,
      { cause: error, details: { file } },
    );
  }
}

/**
 * A snake_case file name from a title or description: lower case, letters and digits (any script)
 * joined by `_`, at most `maxLength` characters cut at a word boundary; `"plan"` when nothing is
 * left.
 *
 * @example
 * ```ts
 * import { snakeName } from "./store.ts";
 * console.log(snakeName("Implement Auth (OAuth2) for the API!")); // "implement_auth_oauth2_for_the_api"
 * ```
 */
export function snakeName(text: string, maxLength = 48): string {
  const words = wordsOf(text.toLowerCase().normalize("NFKC"), maxLength);
  let name = "";
  for (const word of words) {
    const next = name === "" ? word : `${name}_${word}`;
    if (next.length > maxLength) {
      if (name === "") name = word.slice(0, maxLength);
      break;
    }
    name = next;
  }
  return name === "" ? "plan" : name;
}

/**
 * `<dir>/<name>.md`, or `<name>_2.md`, `<name>_3.md`, … when taken: an existing plan is never
 * overwritten. `ext` names other files kept beside plans the same way (a rejected answer's `.txt`).
 */
export async function freePlanFile(dir: string, name: string, ext = ".md"): Promise<string> {
  for (let n = 1;; n++) {
    const file = join(dir, n === 1 ? `${name}${ext}` : `${name}_${n}${ext}`);
    if (!(await pathExists(file))) return file;
  }
}

/** The run-history file kept beside a plan: `x.md` → `x.history.jsonl`. */
export function historyFileFor(planFile: string): string {
  const ext = extname(planFile);
  return (ext === "" ? planFile : planFile.slice(0, -ext.length)) + ".history.jsonl";
}

/** One row of {@linkcode listPlans}. */
export interface PlanListing {
  /** File name without `.md`. */
  name: string;
  /** Absolute path. */
  file: string;
  /** The parsed plan, when it parses. */
  plan?: PlanSpec;
  /** Step counts, when it parses. */
  progress?: PlanProgress;
  /** True when every step is done or skipped. */
  complete?: boolean;
  /** Why it does not parse. */
  error?: string;
}

/** Lists the `*.md` plans of a folder (sorted by name); an absent folder lists nothing. */
export async function listPlans(dir: string): Promise<PlanListing[]> {
  const rows: PlanListing[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.endsWith(".md") || entry.name.startsWith(".")) continue;
      const file = join(dir, entry.name);
      const row: PlanListing = { name: entry.name.slice(0, -3), file };
      try {
        const plan = await readPlanFile(file);
        row.plan = plan;
        row.progress = planProgress(plan);
        row.complete = isComplete(plan);
      } catch (error) {
        row.error = (error as Error).message;
      }
      rows.push(row);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  rows.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return rows;
}

/**
 * Moves `planspec/<name>.md` (and its run history) to `planspec/archive/`. An unfinished plan is
 * refused unless `force` is set; an existing archived plan of that name is never overwritten.
 *
 * @returns the new path of the plan
 * @throws {StepflowError} `PLAN_NOT_FOUND`, `PLAN_NOT_COMPLETE`, `PLAN_EXISTS`, or `PLAN_LOCKED`
 * while a run holds the plan
 */
export async function archivePlan(
  base: string,
  name: string,
  options: { force?: boolean } = {},
): Promise<string> {
  const stem = name.toLowerCase().endsWith(".md") ? name.slice(0, -3) : name;
  if (!isPlanName(stem)) {
    throw new StepflowError(
      "USAGE",
      `Invalid plan name ${
        JSON.stringify(name)
      }: use the file name of a plan in planspec/ (see 'plan list').`,
    );
  }
  const dir = planspecDir(base);
  const file = join(dir, `${stem}.md`);
  await readPlanFile(file); // PLAN_NOT_FOUND before anything is created beside it
  // Never move a plan (and its history) away from under a run that is writing them.
  using _lock = lockPlanFile(file, { runId: "archive", onWarning: () => {} });
  const plan = await readPlanFile(file);
  if (!options.force && !isComplete(plan)) {
    const p = planProgress(plan);
    throw new StepflowError(
      "PLAN_NOT_COMPLETE",
      `Plan ${stem} is not complete (${p.done}/${p.total} done, ${p.pending} pending, ${p.active} active, ${p.blocked} blocked). Finish it with 'plan run ${stem}' or archive anyway with --force.`,
      { details: { file } },
    );
  }
  const archiveDir = join(dir, "archive");
  await Deno.mkdir(archiveDir, { recursive: true });
  const target = join(archiveDir, `${stem}.md`);
  if (await pathExists(target)) {
    throw new StepflowError(
      "PLAN_EXISTS",
      `${target} already exists; rename or remove it first (an archived plan is never overwritten).`,
      { details: { file: target } },
    );
  }
  await Deno.rename(file, target);
  const history = historyFileFor(file);
  if (await pathExists(history)) await Deno.rename(history, historyFileFor(target));
  return target;
}

/** The words (runs of letters and digits) of `text`, until they fill more than `maxLength`. */
function wordsOf(text: string, maxLength: number): string[] {
  const words: string[] = [];
  let length = 0;
  for (let i = 0; i < text.length && length <= maxLength;) {
    const end = spanEnd(text, i, "[\\p{L}\\p{N}]");
    if (end === i) {
      i++;
      continue;
    }
    const word = text.slice(i, end);
    words.push(word);
    length += word.length + 1;
    i = end;
  }
  return words;
}
