/**
 * Eval case files: JSON Lines, one case per line — its parameters, stdin, optional script or
 * recording, optional workspace, and what it expects. Validated at load time; every problem names
 * the file and the line.
 *
 * @module
 */
import { tmpdir } from "node:os";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { parseCommandLine } from "../args.ts";
import type { AgentDefinition } from "../../definition/types.ts";
import { parameterFlag } from "../../definition/parameters.ts";
import { errorMessage, StepflowError } from "../../errors.ts";
import { isInside } from "../../tools/workspace.ts";
import { parseScriptAnswers, type ScriptAnswer } from "../../llm/script_answers.ts";

/** What a case expects; every field is optional, `completed` defaults to `true`. */
export const EvalExpectationSchema = z.object({
  /** The run ends `completed` (default), or not (`false`: the case expects a failure). */
  completed: z.boolean().optional(),
  /** The steps of the iterations, in order. */
  path: z.array(z.string()).optional(),
  /** The intents of the iterations, in order (`null` where a step declares none). */
  intents: z.array(z.string().nullable()).optional(),
  /** Fields the final output must contain (deeply equal values). */
  output: z.record(z.string(), z.unknown()).optional(),
  /** Per step, fields its handoff must contain. */
  handoff: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
  /** A check prompt for a judge call: it sees the final output and answers ok or ng. */
  judge: z.string().min(1).optional(),
  /** A shell command run in the workspace after the run; exit code 0 passes. */
  command: z.string().min(1).optional(),
}).strict();

/** One line of a case file. */
export const EvalCaseSchema = z.object({
  /** The case's name in the report (default `line N`). */
  name: z.string().min(1).max(120).optional(),
  /** The agent's parameters, as `--<flag> value` would give them. */
  args: z.record(
    z.string(),
    z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()]))]),
  ).optional(),
  /** Text for `{input_text}`, as if piped on stdin. */
  stdin: z.string().optional(),
  /** A script or recording answering this case's calls (relative to the case file). */
  script: z.string().min(1).optional(),
  /**
   * A folder copied into a fresh workspace for each run (relative to the case file); it must lie
   * inside the project folder the eval runs in.
   */
  workspace: z.string().min(1).optional(),
  /**
   * The answers to the run's waits, in the order it waits (input steps, tool calls waiting for
   * permission): `{ value, step?, tool?, by? }` each. Default: the `_answers` of the case's
   * script or recording.
   */
  answers: z.array(z.unknown()).optional(),
  /** What the case expects. */
  expect: EvalExpectationSchema.optional(),
}).strict();

/** What a case expects. */
export type EvalExpectation = z.infer<typeof EvalExpectationSchema>;

/** A loaded case: its line, name, parsed parameters and resolved paths. */
export interface EvalCase {
  /** 1-based line in the case file. */
  line: number;
  /** Its name in the report. */
  name: string;
  /** The agent's parameters, checked and with defaults applied. */
  params: Record<string, unknown>;
  /** Text for `{input_text}`. */
  stdin?: string;
  /** Absolute path of the case's script or recording. */
  script?: string;
  /** Absolute path of the workspace template folder. */
  workspace?: string;
  /** The answers to the run's waits (absent: the script's, if any). */
  answers?: ScriptAnswer[];
  /** What the case expects. */
  expect: EvalExpectation;
}

/** At most this many cases in one file (an eval is a test suite, not a dataset dump). */
export const MAX_CASES = 10_000;

/**
 * Loads and checks a case file against the agent's parameters: every problem is
 * `EVAL_CASES_INVALID` naming the file and line; an unreadable file is `EVAL_CASES_NOT_FOUND`.
 * A case's `workspace` must be a folder inside `project` (the folder the eval runs in; by default
 * the case file's), also once its links are followed, and must not hold the temporary folder its
 * copies are made in.
 */
export async function loadEvalCases(
  file: string,
  definition: AgentDefinition,
  shown: string = file,
  project: string = dirname(file),
): Promise<EvalCase[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    throw new StepflowError(
      "EVAL_CASES_NOT_FOUND",
      `Cannot read the case file ${shown}: ${
        error instanceof Deno.errors.NotFound ? "no such file" : errorMessage(error)
      }. Pass --cases with a JSON Lines file, one case per line (docs/testing.md#evaluations).`,
      { details: { file } },
    );
  }
  const dir = dirname(file);
  const cases: EvalCase[] = [];
  const problems: string[] = [];
  const names = new Set<string>();
  text.split("\n").forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === "") return;
    try {
      const c = parseCase(raw, line, dir, definition);
      if (names.has(c.name)) throw new Error(`the name "${c.name}" is used by an earlier case`);
      names.add(c.name);
      cases.push(c);
    } catch (error) {
      problems.push(`${shown}:${line}: ${errorMessage(error)}`);
    }
  });
  for (const c of cases) {
    if (c.workspace === undefined) continue;
    const problem = await workspaceProblem(c.workspace, project);
    if (problem) problems.push(`${shown}:${c.line}: workspace ${c.workspace}: ${problem}`);
  }
  if (problems.length === 0 && cases.length === 0) {
    problems.push(`${shown}: no cases (the file is empty)`);
  }
  if (cases.length > MAX_CASES) {
    problems.push(`${shown}: ${cases.length} cases, at most ${MAX_CASES}`);
  }
  if (problems.length > 0) {
    throw new StepflowError(
      "EVAL_CASES_INVALID",
      `The case file has ${problems.length} problem${problems.length === 1 ? "" : "s"}:\n${
        problems.slice(0, 20).map((p) => `  ${p}`).join("\n")
      }${problems.length > 20 ? `\n  … and ${problems.length - 20} more` : ""}`,
      { details: { file, problems } },
    );
  }
  return cases;
}

function parseCase(raw: string, line: number, dir: string, definition: AgentDefinition): EvalCase {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new Error(`not JSON (${errorMessage(error)})`);
  }
  const parsed = EvalCaseSchema.safeParse(value);
  if (!parsed.success) {
    throw new Error(
      parsed.error.issues.map((i) => `${i.path.join(".") || "the line"}: ${i.message}`).join("; "),
    );
  }
  const c = parsed.data;
  const out: EvalCase = {
    line,
    name: c.name ?? `line ${line}`,
    params: caseParams(c.args ?? {}, definition),
    expect: c.expect ?? {},
  };
  if (c.stdin !== undefined) out.stdin = c.stdin;
  if (c.script !== undefined) out.script = resolve(dir, c.script);
  if (c.workspace !== undefined) out.workspace = resolve(dir, c.workspace);
  if (c.answers !== undefined) {
    try {
      out.answers = parseScriptAnswers(c.answers, "the case", "answers");
    } catch (error) {
      // The line number says where; the message without its "the case: " prefix says what.
      throw new Error(errorMessage(error).replace(/^the case: /, ""));
    }
  }
  return out;
}

/** The case's args through the CLI's own parameter parsing: the same checks and defaults. */
function caseParams(
  args: Record<string, unknown>,
  definition: AgentDefinition,
): Record<string, unknown> {
  const declared = definition.agent.parameters ?? {};
  const argv: string[] = [];
  for (const [key, value] of Object.entries(args)) {
    const def = Object.hasOwn(declared, key) ? declared[key] : undefined;
    if (!def) {
      const known = Object.keys(declared).join(", ") || "none";
      throw new Error(
        `args.${key}: agent "${definition.name}" has no such parameter (it has: ${known})`,
      );
    }
    const flag = `--${parameterFlag(key, def)}`;
    for (const v of Array.isArray(value) ? value : [value]) argv.push(`${flag}=${String(v)}`);
  }
  return parseCommandLine(argv, { parameters: declared, agentName: definition.name }).params;
}

/**
 * Why `workspace` cannot be a case's workspace, or undefined when it can: it must be a folder
 * inside `project` once links are followed (a case file must not copy `/` or `/etc` into a run),
 * and must not hold the temporary folder, where each run's copy is made (a folder cannot be copied
 * into itself).
 */
async function workspaceProblem(workspace: string, project: string): Promise<string | undefined> {
  let real: string;
  try {
    real = await Deno.realPath(workspace);
    if (!(await Deno.stat(real)).isDirectory) return "it is not a folder";
  } catch (error) {
    return error instanceof Deno.errors.NotFound ? "no such folder" : errorMessage(error);
  }
  const root = await Deno.realPath(project).catch(() => resolve(project));
  if (!isInside(root, real)) {
    return `it is outside the project folder ${root}${
      real !== workspace ? ` (it leads to ${real})` : ""
    }; a workspace is a folder inside the folder you run stepflow eval in, copied for each run`;
  }
  const temp = await Deno.realPath(tmpdir()).catch(() => tmpdir());
  if (isInside(real, temp)) {
    return `it holds the temporary folder ${temp}, where each run's copy is made (a folder cannot be copied into itself); name a subfolder`;
  }
  return undefined;
}
