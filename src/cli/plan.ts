/**
 * `stepflow plan` (`deno task plan`): the PlanSpec command line (docs/planspec.md).
 *
 * ```
 * deno task plan new "<description>"   generate a plan with an LLM → planspec/<snake_name>.md
 * deno task plan show <name|path>      the plan as a tree (/showplan)
 * deno task plan list                  the plans in planspec/
 * deno task plan archive <name>        planspec/<name>.md → planspec/archive/
 * deno task plan validate <name|file>  check a plan (exit 1 on errors)
 * deno task plan run <name|path>       execute a plan step by step with an LLM
 * ```
 *
 * Names resolve as `planspec/<name>.md`, then `Tasks/<name>/plan.md`, then as a path. Relative
 * paths and `planspec/` are from `INIT_CWD` (set by `deno task`), else the current directory.
 *
 * @module
 */
import { progressText } from "../planspec/tree.ts";
import { localizeCommands, stepflowCommand } from "../invocation.ts";
import { resolve } from "node:path";
import { errorMessage, StepflowError, UsageError } from "../errors.ts";
import { createProgressLines } from "../events/progress_lines.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import type { LlmBackend } from "../llm/types.ts";
import {
  archivePlan,
  collapseStep,
  expandStep,
  freePlanFile,
  generatePlan,
  isPlanName,
  listPlans,
  parsePlan,
  PlanParseError,
  PlanRunner,
  planspecDir,
  PlanTooDeepError,
  readPlanFile,
  renderPlan,
  resolvePlanRef,
  snakeName,
  validatePlan,
  writePlanFile,
  writeTextFile,
} from "../planspec/mod.ts";
import { BACKEND_FLAGS, type BackendFlags, backendFromFlags } from "./kit/backend.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import {
  declaredHelpLines,
  declaredTable,
  defineFlags,
  type FlagDecls,
  type FlagsOf,
  parseFlags,
  parsePositiveInt,
  readDeclaredFlags,
} from "./kit/flags.ts";
import { displayPath } from "./kit/display_path.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { type CliIo, colorOn, fullIo, processIo, userDirOf } from "./kit/io.ts";
import { FILE_SYSTEM_ERROR_CODES, reportError } from "./kit/report_error.ts";
import { fileNameProblem } from "../fs_error.ts";
import { PLAN_FILE_SUFFIXES } from "../store/file_lock.ts";

/**
 * Where the CLI reads and writes: the CLI kit's {@linkcode CliIo}. Questions (`plan new`'s
 * confirmation, `plan run --interactive`) go through `ask` when `isTerminal.stdin` is set; `signal`
 * cancels a run (Ctrl-C).
 */
export type PlanCliIo = CliIo;

/** The backend flags of `plan new` and `plan run`, in the help's order. */
const PLAN_BACKEND_FLAGS = defineFlags({
  backend: {
    ...BACKEND_FLAGS.backend,
    description: "claude-code (default), anthropic, openai or scripted",
  },
  script: {
    ...BACKEND_FLAGS.script,
    description: "Scripted answers (YAML/JSON map from step id to answers); implies scripted",
  },
  model: { ...BACKEND_FLAGS.model, value: "NAME", description: "Model for every call" },
  baseUrl: {
    ...BACKEND_FLAGS.baseUrl,
    description: "Server URL (OpenAI-compatible servers such as Ollama)",
  },
  maxAttempts: {
    ...BACKEND_FLAGS.maxAttempts,
    description: "Attempts per model call on 429/5xx/network errors (default 3)",
  },
});

/** `-h, --help`, a flag of every subcommand. */
const HELP_FLAG = defineFlags({ help: { type: "boolean", short: "h", description: "Show help" } });

/** Each subcommand's flags (type and parser follow; HELP above groups them by subcommand). */
export const PLAN_SUBCOMMAND_FLAGS = {
  new: defineFlags({
    ...PLAN_BACKEND_FLAGS,
    name: { type: "string", value: "NAME", description: "File name of the plan" },
    print: { type: "boolean", description: "Show the plan" },
    yes: { type: "boolean", short: "y", description: "No confirmation question" },
    ...HELP_FLAG,
  }),
  show: defineFlags({
    full: { type: "boolean", description: "No folding" },
    expand: { type: "string", value: "IDS", multiple: true, description: "Unfold these steps" },
    collapse: { type: "string", value: "IDS", multiple: true, description: "Fold these steps" },
    color: { type: "boolean", description: "Colour even when not on a terminal" },
    noColor: { type: "boolean", description: "No colour" },
    ...HELP_FLAG,
  }),
  list: defineFlags({
    archive: { type: "boolean", description: "List planspec/archive/" },
    ...HELP_FLAG,
  }),
  archive: defineFlags({
    force: { type: "boolean", description: "Archive a plan that is not complete" },
    ...HELP_FLAG,
  }),
  validate: HELP_FLAG,
  run: defineFlags({
    ...PLAN_BACKEND_FLAGS,
    maxRounds: {
      type: "string",
      value: "N",
      description: "Rounds per step (default 3)",
      parse: wholeNumberAtLeastOne("--max-rounds"),
    },
    maxAttempts: {
      ...PLAN_BACKEND_FLAGS.maxAttempts,
      parse: wholeNumberAtLeastOne("--max-attempts"),
    },
    interactive: { type: "boolean", description: "Ask questions on the terminal" },
    json: { type: "boolean", description: "Print one JSON result" },
    quiet: { type: "boolean", description: "No progress lines" },
    ...HELP_FLAG,
  }),
} as const;

const HELP = `Usage: stepflow plan <command> [options]

Commands:
  new "<description>"      Generate a plan with an LLM and write planspec/<snake_name>.md
  show <name|path>         Show a plan as a tree: status markers, type badges, folded bodies
  list                     List the plans in planspec/ with their progress
  archive <name>           Move a finished plan (and its run history) to planspec/archive/
  validate <name|file>     Check a plan against the PlanSpec rules (exit 1 on errors)
  run <name|path>          Execute a plan step by step with an LLM, rewriting the file as it goes

Backend options (new, run):
${declaredHelpLines(PLAN_BACKEND_FLAGS, { width: 25 }).join("\n")}

new:       --name NAME (default: the title in snake_case), --print (show it), --yes (no question)
show:      --full (no folding), --expand IDS, --collapse IDS (comma-separated), --color, --no-color
list:      --archive (list planspec/archive/ instead)
archive:   --force (archive a plan that is not complete)
run:       --max-rounds N (3), --max-attempts N (3), --interactive (ask questions on the terminal),
           --json (print one JSON result), --quiet (no progress lines)

Names resolve as planspec/<name>.md, then Tasks/<name>/plan.md, then as a file path; relative paths
resolve against the folder the task was started from. A killed 'plan run' continues where it
stopped when run again. Scripted step ids: planspec.generate, planspec.step.<id>,
planspec.reflect.<id>, planspec.replan, planspec.children.<id>, planspec.regenerate.

Exit codes: 0 success, 1 the command ran and did not succeed (invalid plan, blocked or failed run),
2 usage error, missing plan, or a plan beyond the limits (nested more than 100 levels),
75 another process is running the plan (try again later), 130 interrupted (Ctrl-C), 143 interrupted
(SIGTERM).

Examples:
  stepflow plan new "Add rate limiting to the public API"
  stepflow plan run rate_limiting --backend anthropic`;

/**
 * Runs the `plan` command line and returns the exit code.
 *
 * @example
 * ```ts ignore
 * import { planMain } from "./plan.ts";
 * Deno.exit(await planMain(["list"]));
 * ```
 */
export async function planMain(args: string[], io: Partial<PlanCliIo> = {}): Promise<number> {
  const full = fullIo(io);
  // Every path of the plan commands is the user's: `cwd` is the user directory from here on.
  const cli: PlanCliIo = { ...full, cwd: userDirOf(full) };
  const [command, ...rest] = args;
  try {
    switch (command) {
      case undefined:
      case "help":
      case "--help":
      case "-h":
        cli.stdout.write(localizeCommands(HELP, cli.cwd) + "\n");
        return command === undefined ? 2 : 0;
      case "new":
        return await cmdNew(rest, cli);
      case "show":
        return await cmdShow(rest, cli);
      case "list":
        return await cmdList(rest, cli);
      case "archive":
        return await cmdArchive(rest, cli);
      case "validate":
        return await cmdValidate(rest, cli);
      case "run":
        return await cmdRun(rest, cli);
      default:
        throw new UsageError(
          `Unknown command "${command}": use new, show, list, archive, validate or run (see --help).`,
        );
    }
  } catch (error) {
    return report(error, cli);
  }
}

function report(error: unknown, cli: PlanCliIo): number {
  return reportError(error, cli.stderr, {
    prefix: "error:",
    ...(cli.signal ? { signal: cli.signal } : {}),
    exitCodeOf: (e) =>
      e.code === "USAGE" || e.code === "PLAN_NOT_FOUND" || e.code === "PLANSPEC_TOO_DEEP"
        ? EXIT_CODES.usage
        : EXIT_CODES.failed,
  });
}

/**
 * Parses the arguments of `plan <command>`: a usage error names the subcommand; a value a flag's
 * `parse` refuses is reported as it is (read after the usage check).
 */
function parse<C extends keyof typeof PLAN_SUBCOMMAND_FLAGS>(
  command: C,
  args: string[],
): { flags: FlagsOf<typeof PLAN_SUBCOMMAND_FLAGS[C]>; positionals: string[] } {
  const decls: FlagDecls = PLAN_SUBCOMMAND_FLAGS[command];
  let parsed;
  try {
    parsed = parseFlags(args, declaredTable(decls), { hint: " (see plan --help)" });
  } catch (error) {
    throw new UsageError(`plan ${command}: ${errorMessage(error)}`);
  }
  return {
    flags: readDeclaredFlags(PLAN_SUBCOMMAND_FLAGS[command], parsed.values),
    positionals: parsed.positionals,
  };
}
function helpRequested(flags: { help: boolean }, cli: PlanCliIo): boolean {
  if (flags.help) cli.stdout.write(localizeCommands(HELP, cli.cwd) + "\n");
  return flags.help;
}

function onePositional(command: string, positionals: string[], what: string): string {
  if (positionals.length !== 1) {
    throw new UsageError(
      `plan ${command} takes exactly one ${what}, got ${positionals.length}: plan ${command} <${what}>`,
    );
  }
  return positionals[0];
}

async function makeBackend(flags: BackendFlags, cli: PlanCliIo): Promise<LlmBackend> {
  const backend = await backendFromFlags(flags, {
    cwd: cli.cwd,
    fallback: DEFAULT_BACKEND,
    env: cli.env,
    onRetry: (r) =>
      cli.stderr.write(
        `  · backend retry ${r.attempt}/${r.maxAttempts} in ${r.delayMs} ms: ${r.reason}\n`,
      ),
    onWarning: (m) => cli.stderr.write(`  · ${m}\n`),
  });
  return backend!;
}

// ---------------------------------------------------------------------------------------------
// new

async function cmdNew(args: string[], cli: PlanCliIo): Promise<number> {
  const { flags: values, positionals } = parse("new", args);
  if (helpRequested(values, cli)) return EXIT_CODES.success;
  const description = positionals.join(" ").trim();
  if (description === "") {
    throw new UsageError('plan new needs a task description: plan new "Implement OAuth login"');
  }
  let name: string | undefined;
  if (values.name !== undefined) {
    name = values.name.replace(/\.md$/i, "");
    if (!isPlanName(name)) {
      throw new UsageError(
        `--name ${JSON.stringify(values.name)} is not a plain file name; use e.g. --name ${
          snakeName(values.name)
        }`,
      );
    }
  }
  const backend = await makeBackend(values, cli);
  const dir = planspecDir(cli.cwd);
  if (cli.isTerminal.stdin && !values.yes) {
    // Generating a plan asks for confirmation first; --yes (or a non-terminal stdin) skips it.
    const answer = ask(
      cli,
      `Generate a plan for "${clip(description, 80)}" with ${backend.name}? [Y/n]`,
    );
    if (answer !== null && /^\s*n(o)?\s*$/i.test(answer)) {
      cli.stderr.write("Cancelled: no plan was generated.\n");
      return EXIT_CODES.failed;
    }
  }
  cli.stderr.write(`Generating a plan with ${backend.name}…\n`);
  let generated;
  try {
    generated = await generatePlan(description, {
      backend,
      ...(values.model !== undefined ? { model: values.model } : {}),
      cwd: cli.cwd,
      ...(cli.signal ? { signal: cli.signal } : {}),
    });
  } catch (error) {
    if (error instanceof StepflowError && error.code === "PLAN_GENERATION_INVALID") {
      const text = String(error.details?.text ?? "");
      const saved = await freePlanFile(dir, `${name ?? snakeName(description)}.rejected`, ".txt");
      await writeTextFile(saved, text);
      cli.stderr.write(
        `error: ${error.message}\nThe last answer is saved in ${displayPath(saved, cli.cwd)}.\n`,
      );
      return EXIT_CODES.failed;
    }
    throw error;
  }
  const { plan, warnings, attempts } = generated;
  const file = await freePlanFile(dir, name ?? snakeName(plan.title || description));
  await writePlanFile(file, plan);
  for (const w of warnings) cli.stderr.write(`${w}\n`);
  if (attempts > 1) {
    cli.stderr.write("(the first answer was invalid; the model was re-asked once)\n");
  }
  if (values.print) cli.stdout.write(renderPlan(plan, { color: useColor({}, cli) }));
  const steps = countSteps(plan.steps);
  cli.stdout.write(`Created ${displayPath(file, cli.cwd)} (${steps} steps)\n`);
  return EXIT_CODES.success;
}

function countSteps(steps: { children: unknown[] }[]): number {
  let n = 0;
  for (const s of steps) n += 1 + countSteps(s.children as { children: unknown[] }[]);
  return n;
}

// ---------------------------------------------------------------------------------------------
// show

async function cmdShow(args: string[], cli: PlanCliIo): Promise<number> {
  const { flags: values, positionals } = parse("show", args);
  if (helpRequested(values, cli)) return EXIT_CODES.success;
  const ref = onePositional("show", positionals, "name|path");
  const { file } = await resolvePlanRef(ref, cli.cwd);
  const plan = await readPlanFile(file);
  for (const [flag, apply] of [["expand", expandStep], ["collapse", collapseStep]] as const) {
    for (const list of values[flag]) {
      for (const id of list.split(",").map((s) => s.trim()).filter(Boolean)) {
        const error = apply(plan, id);
        if (error) {
          throw new UsageError(`--${flag} ${id}: ${error} in ${displayPath(file, cli.cwd)}`);
        }
      }
    }
  }
  cli.stdout.write(renderPlan(plan, { color: useColor(values, cli), fold: !values.full }));
  return EXIT_CODES.success;
}

function useColor(values: { color?: boolean; noColor?: boolean }, cli: PlanCliIo): boolean {
  if (values.noColor) return false;
  if (values.color) return true;
  return cli.isTerminal.stdout && !cli.env.NO_COLOR;
}

// ---------------------------------------------------------------------------------------------
// list

async function cmdList(args: string[], cli: PlanCliIo): Promise<number> {
  const { flags: values, positionals } = parse("list", args);
  if (helpRequested(values, cli)) return EXIT_CODES.success;
  if (positionals.length > 0) throw new UsageError("plan list takes no arguments.");
  const base = planspecDir(cli.cwd);
  const dir = values.archive ? resolve(base, "archive") : base;
  const rows = await listPlans(dir);
  if (rows.length === 0) {
    cli.stdout.write(
      `No plans in ${displayPath(dir, cli.cwd)}/. Create one with: ${
        stepflowCommand("plan", cli.cwd)
      } new "<description>"\n`,
    );
    return EXIT_CODES.success;
  }
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const row of rows) {
    if (!row.plan || !row.progress) {
      cli.stdout.write(`${row.name.padEnd(width)}  (invalid) ${row.error}\n`);
      continue;
    }
    const p = row.progress;
    const state = row.complete
      ? "complete"
      : p.blocked > 0
      ? `${p.blocked} blocked`
      : p.active > 0
      ? "in progress"
      : p.done > 0
      ? "in progress"
      : "not started";
    const progress = progressText(p).padEnd(14);
    cli.stdout.write(
      `${row.name.padEnd(width)}  ${progress}  ${state.padEnd(11)}  ${
        row.plan.title || "(untitled)"
      }\n`,
    );
    cli.stdout.write(`${" ".repeat(width)}  Goal: ${row.plan.goal}\n`);
  }
  return EXIT_CODES.success;
}

// ---------------------------------------------------------------------------------------------
// archive

async function cmdArchive(args: string[], cli: PlanCliIo): Promise<number> {
  const { flags: values, positionals } = parse("archive", args);
  if (helpRequested(values, cli)) return EXIT_CODES.success;
  const name = onePositional("archive", positionals, "name");
  const target = await archivePlan(cli.cwd, name, { force: values.force });
  cli.stdout.write(`Archived ${name} → ${displayPath(target, cli.cwd)}\n`);
  return EXIT_CODES.success;
}

// ---------------------------------------------------------------------------------------------
// validate

async function cmdValidate(args: string[], cli: PlanCliIo): Promise<number> {
  const { flags: values, positionals } = parse("validate", args);
  if (helpRequested(values, cli)) return EXIT_CODES.success;
  const ref = onePositional("validate", positionals, "file");
  const { file } = await resolvePlanRef(ref, cli.cwd);
  const name = displayPath(file, cli.cwd);
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    throw new StepflowError("PLAN_NOT_FOUND", `Cannot read ${name}: ${(error as Error).message}`);
  }
  let plan;
  try {
    plan = parsePlan(text);
  } catch (error) {
    if (error instanceof PlanParseError) {
      cli.stdout.write(
        `${name}:${error.line}: error: ${error.message.replace(/^line \d+: /, "")}\n`,
      );
      return EXIT_CODES.failed;
    }
    if (error instanceof PlanTooDeepError) {
      // A documented limit, not a plan mistake the validator reports: a usage error (exit 2).
      cli.stderr.write(
        `${name}:${error.details?.line}: error: ${error.message.replace(/^line \d+: /, "")}\n`,
      );
      return EXIT_CODES.usage;
    }
    throw error;
  }
  const nameProblem = fileNameProblem(file, PLAN_FILE_SUFFIXES);
  const messages = [
    ...(nameProblem ? [`${nameProblem}: 'plan run' could not save it.`] : []),
    ...validatePlan(plan),
  ];
  const errors = messages.filter((m) => !m.startsWith("warn:"));
  for (const m of messages) {
    cli.stdout.write(
      m.startsWith("warn:") ? `${name}: warning: ${m.slice(5).trim()}\n` : `${name}: error: ${m}\n`,
    );
  }
  const steps = countSteps(plan.steps);
  if (errors.length > 0) {
    cli.stdout.write(
      `${name}: ${errors.length} error(s), ${messages.length - errors.length} warning(s)\n`,
    );
    return EXIT_CODES.failed;
  }
  cli.stdout.write(`${name}: ok (${steps} steps, ${messages.length} warning(s))\n`);
  return EXIT_CODES.success;
}

// ---------------------------------------------------------------------------------------------
// run

async function cmdRun(args: string[], cli: PlanCliIo): Promise<number> {
  const { flags: values, positionals } = parse("run", args);
  if (helpRequested(values, cli)) return EXIT_CODES.success;
  const ref = onePositional("run", positionals, "name|path");
  const { maxRounds, maxAttempts } = values;
  const { file } = await resolvePlanRef(ref, cli.cwd);
  const backend = await makeBackend(values, cli);
  let interactive = values.interactive;
  if (interactive && !cli.isTerminal.stdin) {
    cli.stderr.write(
      "warning: --interactive needs a terminal on stdin; questions will block their steps instead\n",
    );
    interactive = false;
  }
  const quiet = values.quiet || values.json;
  const progress = quiet ? undefined : createProgressLines({
    write: (text) => cli.stderr.write(text),
    color: colorOn(cli, "stderr"),
  });
  const runner = await PlanRunner.fromFile(file, {
    backend,
    cwd: cli.cwd,
    ...(values.model !== undefined ? { model: values.model } : {}),
    maxRounds,
    maxAttempts,
    interactive,
    ask: async (question) => await Promise.resolve(ask(cli, `? ${question}\n>`) ?? undefined),
    ...(cli.signal ? { signal: cli.signal } : {}),
    onLog: (message) => progress?.line(`· ${message}`),
    ...(progress ? { events: progress.events } : {}),
  });
  if (!quiet) cli.stderr.write(`Running ${displayPath(file, cli.cwd)} with ${backend.name}\n`);
  const result = await runner.run();
  if (values.json) {
    cli.stdout.write(
      JSON.stringify({
        file,
        status: result.status,
        rounds: result.rounds,
        stepsExecuted: result.stepsExecuted,
        progress: result.progress,
        blocked: result.blocked,
        ...(result.error ? { error: result.error } : {}),
        ...(result.errorCode ? { errorCode: result.errorCode } : {}),
      }) + "\n",
    );
  } else {
    cli.stdout.write(renderPlan(result.plan, { color: useColor({}, cli) }));
    const p = result.progress;
    cli.stdout.write(
      `\nRun ${result.status}: ${p.done}/${p.total} done, ${p.skipped} skipped, ${p.blocked} blocked` +
        ` after ${result.rounds} round(s), ${result.stepsExecuted} step execution(s)\n`,
    );
    for (const b of result.blocked) cli.stdout.write(`  [!] ${b.stepId}: ${b.result}\n`);
    if (result.error) cli.stdout.write(`  error: ${result.error}\n`);
    if (result.errorCode && FILE_SYSTEM_ERROR_CODES.has(result.errorCode)) {
      // Running again cannot help until the folder is fixed: say that, exit 2 (not a bug).
      cli.stderr.write(`error: ${result.error}\n`);
      cli.stdout.write(
        `The plan is saved in ${
          displayPath(file, cli.cwd)
        } as far as it could be; fix the above, then run the same command to continue.\n`,
      );
      return EXIT_CODES.usage;
    }
    if (result.status !== "completed") {
      cli.stdout.write(
        `The plan is saved in ${displayPath(file, cli.cwd)}; run the same command to continue.\n`,
      );
    }
  }
  if (result.errorCode && FILE_SYSTEM_ERROR_CODES.has(result.errorCode)) return EXIT_CODES.usage;
  return result.status === "completed" ? 0 : result.status === "aborted" ? 130 : 1;
}

/** A `parse` for `plan run`'s counts: a whole number ≥ 1. */
function wholeNumberAtLeastOne(flag: string): (raw: string) => number {
  return parsePositiveInt(
    flag,
    (raw) => `${flag} must be a whole number ≥ 1, got ${JSON.stringify(raw)}`,
  );
}

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ");
  return one.length <= max ? one : one.slice(0, max - 1) + "…";
}

/** Asks on the terminal; no `ask` in the IO means no answer. */
function ask(cli: PlanCliIo, question: string): string | null {
  return cli.ask ? cli.ask(question) : null;
}

/** Runs `plan` on the real process: Ctrl-C cancels a run (the plan file is kept); twice quits. */
export async function planCli(argv: readonly string[] = Deno.args): Promise<never> {
  using interrupt = listenForInterrupt({
    message: "\ninterrupted: stopping after the current call (the plan file is kept)\n",
    reason: new DOMException("interrupted", "AbortError"),
  });
  const code = await planMain([...argv], { ...processIo(), signal: interrupt.signal });
  Deno.exit(interrupt.exitCode(code));
}

if (import.meta.main) await planCli();
