/**
 * `deno task run-plan`: reviews and runs an executable tool plan (docs/tool-plans.md), or generates
 * one first.
 *
 * ```
 * deno task run-plan plan.json [--yes | --approve write_file,…] [--workspace DIR] …
 * deno task run-plan --generate "Bump the version to 2.0.0" [plan.json] --backend scripted --script answers.yaml
 * ```
 *
 * It shows the plan review table, asks to start (or `--yes`), streams progress on stderr and
 * writes the plan — statuses and results included — back to its file atomically after every step,
 * so a run that is killed continues where it stopped when started again.
 *
 * `deno task` runs commands in the folder of deno.json, so the user's directory comes from
 * `INIT_CWD` (set by `deno task`): the plan file, `--workspace` and `--script` resolve there.
 *
 * Exit codes: 0 the plan completed (or nothing was asked to run); 1 the plan ran and did not
 * complete; 2 usage error, unreadable or invalid plan, backend setup error; 3 incomplete: every step
 * ended, but some were skipped because approval was not given (`--allow-skipped` makes that 0);
 * 75 another process is running the plan file (its lock is held; try again later); 130 cancelled
 * (Ctrl-C); 70 an unexpected internal error (a bug).
 *
 * One process at a time runs a plan file: it holds `<plan file>.lock` (the one lock of stepflow,
 * `store/file_lock.ts`) from before it reads the plan until the last write.
 *
 * @module
 */
import { resolve } from "node:path";
import { removeStaleTemps } from "../atomic_write.ts";
import { UsageError } from "../errors.ts";
import { createProgressLines, type ProgressLines } from "../events/progress_lines.ts";
import { type LineReader, lineReader } from "./kit/line_reader.ts";
import { notRunText, skippedUnintentionally, summaryText } from "./plan_outcome.ts";
import { askToStart, decideInterrupted, terminalApprover } from "./plan_prompts.ts";
import type { LlmBackend } from "../llm/types.ts";
import { startPlan } from "../plan/executor.ts";
import { fileApprover, firstApproval, recordedApprover } from "../plan/file_approver.ts";
import { generatePlan, revisePlan } from "../plan/generate.ts";
import { planToolNames, readPlanJson, resetPlan, writePlanFile } from "../plan/plan_file.ts";
import { approvalNotes, renderPlanReview } from "../plan/review.ts";
import { parseOnError } from "../plan/on_error.ts";
import type { Approver, ExecutionSummary, Plan } from "../plan/types.ts";
import { assertValidPlan } from "../plan/validate.ts";
import { localizeCommands, stepflowCommand } from "../invocation.ts";
import { assertFileNameFits } from "../fs_error.ts";
import { assertFolderFlag } from "./kit/folder_flag.ts";
import { PLAN_FILE_SUFFIXES } from "../store/file_lock.ts";
import { assertLockHeld, lockPlanFile, planLockSubject } from "../store/file_lock.ts";
import { createToolRegistry } from "../tools/builtin.ts";
import type { ToolRegistry } from "../tools/registry.ts";
import { BACKEND_FLAGS, backendFromFlags } from "./kit/backend.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import {
  declaredHelpLines,
  defineFlags,
  type FlagsOf,
  parseCommandFlags,
  parsePositiveInt,
} from "./kit/flags.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { MCP_CONFIG_FLAG, McpTools } from "./mcp_tools.ts";
import { type CliIo, type CliWriter, colorOn, fullIo, processIo, userDirOf } from "./kit/io.ts";
import { reportError } from "./kit/report_error.ts";
import { pathVisible } from "../path_exists.ts";
import { newRunId } from "../store/run_id.ts";

/** Something text can be written to: the CLI kit's {@linkcode CliWriter}. */
export type RunPlanWriter = CliWriter;

/**
 * Everything `main` touches outside itself: the CLI kit's {@linkcode CliIo}. Questions (start?
 * approve?) are asked only when `isTerminal.stdin` is set, and read from `stdin`.
 */
export type RunPlanIo = CliIo;

/** Every flag of `run-plan`, in `--help` order: its type, parser and help rows follow from it. */
export const RUN_PLAN_FLAGS = defineFlags({
  generate: {
    type: "string",
    value: "TASK",
    description:
      "Ask the LLM for a plan for TASK first; writes it to <plan.json> (default plan.json)",
    parse: nonBlank('--generate needs a task, e.g. --generate "Bump the version to 2.0.0".'),
  },
  force: { type: "boolean", description: "With --generate: replace an existing plan file" },
  revise: {
    type: "string",
    value: "FEEDBACK",
    description: [
      "Ask the LLM to revise the plan with this feedback first (a new version is",
      "written to the plan file; completed steps it keeps unchanged stay completed).",
      'On a terminal, answer "r" at "Start execution?" to revise interactively',
    ].join("\n"),
    parse: nonBlank(
      '--revise needs feedback, e.g. --revise "Also back up config.json before writing it".',
    ),
  },
  yes: {
    type: "boolean",
    short: "y",
    description: [
      "Start without asking and approve every step that needs approval; also",
      "re-runs steps a killed run left running whose tools are not idempotent",
    ].join("\n"),
  },
  approve: {
    type: "string",
    value: "TOOLS",
    multiple: true,
    description: [
      "Approve these tools without asking (comma-separated, e.g. write_file,run_command);",
      "without a terminal this also starts the run, and other approvals are denied",
    ].join("\n"),
  },
  approvals: {
    type: "string",
    value: "MODE",
    description: [
      '"dashboard": also let the dashboard (stepflow ui --allow-actions) approve or deny',
      "waiting steps: requests are written to <plan.json>.approvals/; the first answer",
      "(dashboard or terminal) wins. Without a terminal this starts the run, and steps",
      'wait for the dashboard instead of being denied (default: "terminal")',
    ].join("\n"),
    parse: (raw): "terminal" | "dashboard" => {
      if (raw === "terminal" || raw === "dashboard") return raw;
      throw new UsageError(
        `--approvals is "terminal" (ask here, the default) or "dashboard" (also answerable from stepflow ui --allow-actions), got "${raw}".`,
      );
    },
    default: "terminal",
  },
  dryRun: {
    type: "boolean",
    description: "Validate and show the review, then stop (nothing runs)",
  },
  restart: {
    type: "boolean",
    description: "Run every step again (statuses and results are reset; user skips are kept)",
  },
  allowSkipped: {
    type: "boolean",
    description: "Exit 0 even when steps were skipped because approval was not given",
  },
  workspace: {
    type: "string",
    value: "DIR",
    description: "Folder the tools may use (default: the current directory)",
  },
  concurrency: {
    type: "string",
    value: "N",
    description: "Steps that may run at the same time (default 4)",
    parse: parsePositiveInt(
      "--concurrency",
      (raw) => `--concurrency must be a whole number ≥ 1, got "${raw}".`,
    ),
    default: 4,
  },
  enableHttp: { type: "boolean", description: "Allow the http_get tool" },
  mcpConfig: MCP_CONFIG_FLAG,
  enableCommands: {
    type: "boolean",
    description: "Allow the run_command tool (it always asks for approval)",
  },
  backend: {
    ...BACKEND_FLAGS.backend,
    description: [
      'LLM backend for --generate and onError "recover": scripted, claude-code,',
      "anthropic, openai (default: scripted when --script is given)",
    ].join("\n"),
  },
  script: {
    ...BACKEND_FLAGS.script,
    description: 'Scripted answers: YAML/JSON map with the keys "plan.generate" and "plan.recover"',
  },
  model: { ...BACKEND_FLAGS.model, description: "Model for LLM calls" },
  baseUrl: BACKEND_FLAGS.baseUrl,
  maxAttempts: {
    ...BACKEND_FLAGS.maxAttempts,
    description: "Attempts per LLM call on 429/5xx/network errors (default 3)",
  },
  json: {
    type: "boolean",
    description: "Print the execution summary as JSON on stdout (the review goes to stderr)",
  },
  help: { type: "boolean", short: "h", description: "Show this help" },
});

/** A `parse` that refuses an empty or blank value with `message`. */
function nonBlank(message: string): (raw: string) => string {
  return (raw) => {
    if (raw.trim() === "") throw new UsageError(message);
    return raw;
  };
}

const HELP = `Usage:
  stepflow run-plan <plan.json> [options]
  stepflow run-plan --generate "<task>" [<plan.json>] [options]

Shows the plan for review, asks to start, runs it and saves statuses and results back to the plan
file after every step. Running the same command again continues where the plan stopped.

Options:
${declaredHelpLines(RUN_PLAN_FLAGS, { width: 20 }).join("\n")}

Exit codes: 0 completed, 1 the plan did not complete, 2 usage or invalid plan, 3 incomplete (steps
skipped because approval was not given; see --allow-skipped), 75 another process is running this
plan file, 130 cancelled (Ctrl-C), 143 cancelled (SIGTERM).

Examples:
  stepflow run-plan release.plan.json --yes
  stepflow run-plan --generate "Tag and publish 1.2.0" release.plan.json --approvals dashboard
`;

/** The parsed command line of `run-plan`: its flags and the plan file (the one positional). */
type Flags = FlagsOf<typeof RUN_PLAN_FLAGS> & { planFile?: string };

/** Parses the command line of `run-plan`; bad input is a {@linkcode UsageError}. */
export function parseRunPlanArgs(argv: readonly string[]): Flags {
  const { flags, positionals } = parseCommandFlags(argv, RUN_PLAN_FLAGS, {
    hint: " Run with --help to see every option.",
  });
  if (positionals.length > 1) {
    throw new UsageError(
      `Expected one plan file, got ${positionals.length}: ${
        positionals.join(" ")
      }. Quote a --generate task that has spaces.`,
    );
  }
  const approve = flags.approve.flatMap((a) => a.split(",")).map((a) => a.trim()).filter(Boolean);
  return {
    ...flags,
    approve,
    ...(positionals[0] !== undefined ? { planFile: positionals[0] } : {}),
  };
}

/**
 * Runs `run-plan` with `argv` and returns the exit code. Never throws and never exits: errors are
 * printed on `io.stderr` (no stack traces for user errors).
 */
export async function main(argv: readonly string[], io: Partial<RunPlanIo> = {}): Promise<number> {
  const full = fullIo(io);
  try {
    return await dispatch(argv, full, userDirOf(full));
  } catch (error) {
    return reportError(error, full.stderr, {
      prefix: "run-plan:",
      ...(full.signal ? { signal: full.signal } : {}),
      exitCodeOf: (e) => RAN_AND_FAILED(e.code) ? EXIT_CODES.failed : EXIT_CODES.usage,
    });
  }
}

async function dispatch(argv: readonly string[], io: RunPlanIo, userDir: string): Promise<number> {
  const flags = parseRunPlanArgs(argv);
  if (flags.help) {
    io.stdout.write(localizeCommands(HELP, userDir));
    return EXIT_CODES.success;
  }
  if (flags.planFile === undefined && flags.generate === undefined) {
    throw new UsageError(
      'Missing the plan file: run-plan <plan.json>, or --generate "<task>" to plan first. Run with --help for every option.',
    );
  }
  const planFile = resolve(userDir, flags.planFile ?? "plan.json");
  // Also for a dry run: it says whether the real run could work.
  assertFileNameFits(planFile, PLAN_FILE_SUFFIXES);
  // One process at a time: the lock is taken before the plan is read, released after the last
  // write. A dry run only reads (atomic writes never show it half a plan).
  using lock = flags.dryRun ? undefined : lockPlanFile(planFile, {
    runId: newRunId(),
    onWarning: (message) => io.stderr.write(`warning: ${message}\n`),
  });
  if (lock) {
    for (const temp of await removeStaleTemps(planFile)) {
      io.stderr.write(`Removed ${temp}, left by a run that was killed while saving the plan.\n`);
    }
  }
  const ctx = await planContext(flags, io, userDir, planFile);
  // Declared after the lock: the servers are closed before the lock is released.
  await using _servers = ctx.mcp;

  let plan = await loadOrGenerate(ctx);
  if (flags.restart) plan = resetPlan(plan);
  if (flags.revise !== undefined) plan = await reviseAndSave(ctx, plan, flags.revise);

  const needsRecovery = plan.steps.some((s) => parseOnError(s.onError)?.kind === "recover");
  if (needsRecovery && !flags.dryRun) await ctx.backend();

  const done = plan.steps.filter((s) => s.status === "completed").length;
  if (done > 0 && !flags.restart) {
    io.stderr.write(
      `Continuing: ${done} of ${plan.steps.length} steps completed in an earlier run (--restart runs everything again).\n`,
    );
  }
  await showReview(ctx, plan);
  if (flags.dryRun) return EXIT_CODES.success;
  const finished = nothingToRun(ctx, plan);
  if (finished !== undefined) return finished;

  const lines = io.isTerminal.stdin && io.stdin ? lineReader(io.stdin) : undefined;
  const rerunInterrupted = await decideInterrupted(plan, ctx.tools, flags.yes, lines, io);
  if (!flags.yes) {
    if (lines) {
      const start = await askToStart(lines, io, async (feedback) => {
        plan = await reviseAndSave(ctx, plan, feedback);
        await showReview(ctx, plan);
      });
      if (!start) return EXIT_CODES.success;
    } else if (flags.approve.length === 0 && flags.approvals !== "dashboard") {
      throw new UsageError(
        `Not starting: stdin is not a terminal, so nobody can confirm. Pass --yes to start and approve every step, --approve TOOLS to start and approve only those tools, or --approvals dashboard to start and answer approvals from ${
          stepflowCommand("ui", userDir)
        } --allow-actions.`,
      );
    }
  }

  const progress = createProgressLines({
    write: (text) => io.stderr.write(text),
    color: colorOn(io, "stderr"),
  });
  const alwaysApproved = new Set(flags.approve);
  const backend = ctx.madeBackend();
  const summary = await runWithProgress(plan, {
    progress,
    planFile,
    ...(lock ? { assertLocked: () => assertLockHeld(lock, planLockSubject(planFile)) } : {}),
    io,
    tools: ctx.tools,
    workspaceRoot: ctx.workspaceRoot,
    concurrency: flags.concurrency,
    autoApprove: flags.yes ? true : [...alwaysApproved],
    rerunInterrupted,
    ...(backend ? { backend } : {}),
    ...(flags.model !== undefined ? { model: flags.model } : {}),
    ...planApprover(ctx, progress, lines, alwaysApproved),
  });
  return reportOutcome(ctx, summary);
}

/** What the steps of one `run-plan` invocation share once the plan file is locked. */
interface PlanContext {
  flags: Flags;
  io: RunPlanIo;
  userDir: string;
  planFile: string;
  workspaceRoot: string;
  tools: ToolRegistry;
  /** The MCP servers of `--mcp-config`, started for the tools the plan names. */
  mcp: McpTools;
  /** Where the review goes: stdout, or stderr with `--json` (stdout then holds the summary). */
  out: CliWriter;
  /** The LLM backend, made on first use (generating, revising, recovering). */
  backend: () => Promise<LlmBackend>;
  /** The backend when one was made already, without making one. */
  madeBackend: () => LlmBackend | undefined;
}

async function planContext(
  flags: Flags,
  io: RunPlanIo,
  userDir: string,
  planFile: string,
): Promise<PlanContext> {
  const workspaceRoot = resolve(userDir, flags.workspace ?? ".");
  await assertFolderFlag(workspaceRoot, "--workspace");
  const tools = createToolRegistry({
    enableHttp: flags.enableHttp,
    enableCommands: flags.enableCommands,
  });
  let backend: LlmBackend | undefined;
  return {
    flags,
    io,
    userDir,
    planFile,
    workspaceRoot,
    tools,
    mcp: new McpTools({
      configFile: flags.mcpConfig,
      userDir,
      env: io.env,
      cwd: workspaceRoot,
      registry: tools,
      note: (line) => io.stderr.write(`${line}\n`),
    }),
    out: flags.json ? io.stderr : io.stdout,
    backend: async () => (backend ??= await selectBackend(flags, io, userDir)),
    madeBackend: () => backend,
  };
}

/** The options of an LLM call over the plan (generating or revising). */
async function llmOptions(ctx: PlanContext) {
  return {
    backend: await ctx.backend(),
    tools: ctx.tools,
    workspaceRoot: ctx.workspaceRoot,
    ...(ctx.flags.model !== undefined ? { model: ctx.flags.model } : {}),
    ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
  };
}

/** With `--generate`: a new plan from the LLM, written to the plan file; else the file's plan. */
async function loadOrGenerate(ctx: PlanContext): Promise<Plan> {
  const { flags, io, planFile } = ctx;
  if (flags.generate === undefined) {
    const raw = await readPlanJson(planFile);
    // The MCP servers the plan names, before validation: their tools' names and schemas are theirs.
    await ctx.mcp.start(planToolNames(raw));
    // Shape, tools, arguments and references are checked in one pass, every problem at once.
    return assertValidPlan(raw, ctx.tools, planFile);
  }
  if (!flags.force && await pathVisible(planFile)) {
    throw new UsageError(
      `${planFile} exists already. Pass --force to replace it, or name another file: run-plan --generate "…" other.json.`,
    );
  }
  // The planner may use any configured server's tools.
  await ctx.mcp.start("all");
  io.stderr.write(`Planning: ${flags.generate}\n`);
  const plan = await generatePlan(flags.generate, await llmOptions(ctx));
  await writePlanFile(planFile, plan);
  io.stderr.write(`Plan written to ${planFile} (${plan.steps.length} steps)\n`);
  return plan;
}

/** The plan revised by the LLM with `feedback`, written to the plan file (not on a dry run). */
async function reviseAndSave(ctx: PlanContext, plan: Plan, feedback: string): Promise<Plan> {
  const { io, planFile } = ctx;
  io.stderr.write(`Revising the plan: ${feedback}\n`);
  const revised = await revisePlan(plan, feedback, await llmOptions(ctx));
  if (ctx.flags.dryRun) {
    // A dry run holds no lock, so it writes nothing: the revised plan is only shown.
    io.stderr.write(
      `Plan revised: version ${revised.version}, ${revised.steps.length} steps (--dry-run: not saved)\n`,
    );
    return revised;
  }
  await writePlanFile(planFile, revised);
  io.stderr.write(
    `Plan revised: version ${revised.version}, ${revised.steps.length} steps, written to ${planFile}\n`,
  );
  return revised;
}

/** Shows the plan review table, with the approval each step will ask for. */
async function showReview(ctx: PlanContext, plan: Plan): Promise<void> {
  const approvals = await approvalNotes(plan, ctx.tools, ctx.workspaceRoot);
  ctx.out.write(`${renderPlanReview(plan, { approvals })}\n`);
}

/** The exit code when every step has ended already (nothing to run); undefined otherwise. */
function nothingToRun(ctx: PlanContext, plan: Plan): number | undefined {
  if (!plan.steps.every((s) => s.status === "completed" || s.status === "skipped")) {
    return undefined;
  }
  const notRun = skippedUnintentionally(plan);
  if (notRun.length > 0 && !ctx.flags.allowSkipped) {
    ctx.io.stderr.write(
      `Nothing to run, but the plan is incomplete: ${
        notRunText(notRun)
      }. Pass --restart to run the plan again (or --allow-skipped to accept it).\n`,
    );
    return EXIT_CODES.incomplete;
  }
  ctx.io.stderr.write(
    "Nothing to run: every step has completed or was skipped. Pass --restart to run the plan again.\n",
  );
  return EXIT_CODES.success;
}

/** The approvers of the run: the terminal when there is one, the dashboard with `--approvals dashboard`. */
function planApprover(
  ctx: PlanContext,
  progress: ProgressLines,
  lines: LineReader | undefined,
  alwaysApproved: Set<string>,
): { approver?: Approver } {
  const { io, planFile } = ctx;
  const dashboard = ctx.flags.approvals === "dashboard";
  // With the dashboard answering too, the terminal's answers go through the same one-answer step.
  const terminal = lines ? terminalApprover(lines, io, alwaysApproved) : undefined;
  return approverOf(
    terminal && dashboard ? recordedApprover(planFile, terminal, "terminal") : terminal,
    dashboard
      ? fileApprover(planFile, {
        onWarning: (message) => io.stderr.write(`warning: ${message}\n`),
        onWaiting: (record, file) =>
          progress.line(
            `step ${record.stepId} · waiting for approval from the dashboard (${file})`,
          ),
      })
      : undefined,
  );
}

/** Prints the summary (text, or JSON with `--json`) and returns the exit code of the run. */
function reportOutcome(ctx: PlanContext, summary: ExecutionSummary): number {
  const { flags, io, planFile } = ctx;
  const notRun = summary.status === "completed" ? skippedUnintentionally(summary.plan) : [];
  const incomplete = notRun.length > 0 && !flags.allowSkipped;
  if (flags.json) {
    const notExecuted = notRun.map((st) => st.id);
    io.stdout.write(
      `${JSON.stringify({ ...summary, planFile, incomplete, notExecuted }, null, 2)}\n`,
    );
  } else {
    io.stdout.write(`${summaryText(summary, planFile, incomplete ? notRun : [])}\n`);
  }
  if (incomplete) return EXIT_CODES.incomplete;
  if (summary.status === "completed") return EXIT_CODES.success;
  return summary.status === "cancelled" ? EXIT_CODES.interrupted : EXIT_CODES.failed;
}

interface RunSettings {
  /** The one line renderer of the shared events, writing to stderr. */
  progress: ProgressLines;
  planFile: string;
  /** Throws once another process took the plan's lock over: nothing more may be written. */
  assertLocked?: () => void;
  io: RunPlanIo;
  tools: ToolRegistry;
  workspaceRoot: string;
  concurrency: number;
  autoApprove: boolean | string[];
  rerunInterrupted: boolean | string[];
  backend?: LlmBackend;
  model?: string;
  approver?: Approver;
}

async function runWithProgress(plan: Plan, s: RunSettings): Promise<ExecutionSummary> {
  const run = startPlan(plan, {
    tools: s.tools,
    workspaceRoot: s.workspaceRoot,
    concurrency: s.concurrency,
    autoApprove: s.autoApprove,
    rerunInterrupted: s.rerunInterrupted,
    events: s.progress.events,
    persist: (p) => {
      s.assertLocked?.();
      return writePlanFile(s.planFile, p);
    },
    ...(s.backend ? { backend: s.backend } : {}),
    ...(s.model !== undefined ? { model: s.model } : {}),
    ...(s.approver ? { approver: s.approver } : {}),
    ...(s.io.signal ? { signal: s.io.signal } : {}),
  });
  return await run.summary;
}

async function selectBackend(flags: Flags, io: RunPlanIo, userDir: string): Promise<LlmBackend> {
  const backend = await backendFromFlags(flags, {
    cwd: userDir,
    env: io.env,
    onWarning: (message) => io.stderr.write(`warning: ${message}\n`),
  });
  if (backend === undefined) {
    throw new UsageError(
      'This needs an LLM (--generate, or a step with onError "recover"): pass --backend NAME (claude-code, anthropic, openai), or --script FILE for scripted answers.',
    );
  }
  return backend;
}

/** The approvers given (terminal, dashboard), the first answer winning; none when none is. */
function approverOf(...approvers: (Approver | undefined)[]): { approver?: Approver } {
  const given = approvers.filter((a): a is Approver => a !== undefined);
  return given.length > 0 ? { approver: firstApproval(given) } : {};
}

/**
 * The LLM answered badly or the call failed: the command ran and did not succeed (exit 1). Setup
 * problems (credentials, missing SDK) and every input problem are usage errors (exit 2).
 */
const RAN_AND_FAILED = (code: string): boolean =>
  code === "PLAN_GENERATION_FAILED" || code === "SCRIPT_EXHAUSTED" || code.startsWith("BACKEND_");

/** Runs `run-plan` on the real process: Ctrl-C cancels the run (twice quits at once). */
export async function runPlanCli(argv: readonly string[] = Deno.args): Promise<never> {
  using interrupt = listenForInterrupt({
    message:
      "\nCancelling: running steps are stopped and the plan is saved… (press Ctrl-C again to quit now)\n",
    reason: new Error("interrupted (Ctrl-C)"),
  });
  const code = await main(argv, { ...processIo(), signal: interrupt.signal });
  Deno.exit(interrupt.exitCode(code));
}

if (import.meta.main) await runPlanCli();
