/**
 * The old form of the agent commands — `deno task run-agent --agent NAME …`, `stepflow --agent NAME
 * --show RUN_ID`, `--list`, `--init NAME`, `--validate`, `--graph`, `--runs`, `--resume`,
 * `--redrive`, `--answer`, `--submit` — kept working for a release: each command line is read with
 * every flag of the old form, checked as before (two modes at once, a flag without its mode), and
 * handed to its subcommand (`stepflow show RUN_ID …`), with a one-line hint to the new form on
 * stderr when it used a mode flag.
 *
 * `deno task` runs commands in the folder of deno.json, so the user's own directory comes from
 * `INIT_CWD` (set by `deno task`): `.agent/`, `--script` and relative `--agent` paths resolve there.
 *
 * @module
 */
import { resolve } from "node:path";
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import { errorMessage, UsageError } from "../errors.ts";
import type { NextStep, StepflowAction } from "../invocation.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import { assertRunGroup } from "../store/run_group.ts";
import { agentCliContext, nextCommand } from "./agent_context.ts";
import {
  CLI_FLAGS,
  type CliFlags,
  rejectMistypedCliFlags,
  scanCommandLine,
  usageText,
} from "./args.ts";
import { declaredTable } from "./kit/flags.ts";
import { displayPath } from "./kit/display_path.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { exitProcess, startTelemetryExport } from "./kit/telemetry_export.ts";
import { type CliIo, processIo } from "./kit/io.ts";
import { reportError } from "./kit/report_error.ts";
import { localizeCommands } from "../invocation.ts";
import { rejectMisplacedReplayFlags } from "./replay_flags.ts";
import * as answer from "./commands/answer.ts";
import * as graph from "./commands/graph.ts";
import * as init from "./commands/init.ts";
import * as list from "./commands/list.ts";
import * as redrive from "./commands/redrive.ts";
import * as resume from "./commands/resume.ts";
import * as run from "./commands/run.ts";
import * as runs from "./commands/runs.ts";
import * as show from "./commands/show.ts";
import * as submit from "./commands/submit.ts";
import * as validate from "./commands/validate.ts";

export { type CliIo, type CliWriter, processIo, STDIN_WAIT_MS } from "./kit/io.ts";
export {
  createInterruptHandler,
  INTERRUPT_GRACE_MS,
  type InterruptActions,
} from "./kit/interrupt.ts";

/** The backend used when neither `--backend` nor agent.json `behavior.backend` names one. */
export { DEFAULT_BACKEND };

/** The subcommand an old command line becomes. */
interface Translated {
  /** The subcommand. */
  name: StepflowAction;
  /** Its command line. */
  argv: string[];
  /** The mode flag the old command line used (it gets a hint), if any. */
  mode?: string;
}

const MAINS: Readonly<
  Partial<Record<StepflowAction, (argv: readonly string[], io: Partial<CliIo>) => Promise<number>>>
> = {
  run: run.main,
  validate: validate.main,
  graph: graph.main,
  list: list.main,
  init: init.main,
  runs: runs.main,
  show: show.main,
  resume: resume.main,
  redrive: redrive.main,
  answer: answer.main,
  submit: submit.main,
};

/**
 * Runs an old-form command line (`--agent NAME …`, without the program name) and returns the exit
 * code. It never throws and never calls `Deno.exit`: errors are printed on `io.stderr`.
 *
 * @example
 * ```ts ignore
 * import { main } from "./run_agent.ts";
 * const out: string[] = [];
 * const code = await main(["--list"], { stdout: { write: (t) => void out.push(t) } });
 * ```
 */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const ctx = agentCliContext(io);
  let translated: Translated | undefined;
  try {
    const scan = scanCommandLine(argv);
    ctx.verbose = scan.verbose;
    if (scan.help) return await help(scan, ctx.userDir, ctx.io.stdout);
    translated = await translate(argv, scan, ctx.userDir);
  } catch (error) {
    return reportError(error, ctx.io.stderr, {
      prefix: "error:",
      color: ctx.stderrColor,
      verbose: ctx.verbose,
    });
  }
  if (translated.mode !== undefined) {
    ctx.io.stderr.write(
      `hint: this is now \`${
        nextCommand(ctx)(hintOf(translated))
      }\` (run-agent's ${translated.mode} goes away in a later release)\n`,
    );
  }
  return await MAINS[translated.name]!(translated.argv, io);
}

/**
 * Runs an old-form command line on the real process (signals, stdio) and exits with its code:
 * SIGTERM cancels like Ctrl-C (exit 143); OTLP export when the environment asks for it
 * (OTEL_EXPORTER_OTLP_ENDPOINT), flushed at exit.
 */
export async function runCli(argv: readonly string[] = Deno.args): Promise<never> {
  await startTelemetryExport();
  using interrupt = listenForInterrupt({
    message: "\nCancelling the run… (press Ctrl-C again to quit at once)\n",
  });
  const code = await main(argv, { ...processIo(), signal: interrupt.signal });
  return await exitProcess(interrupt.exitCode(code));
}

// -------------------------------------------------------------------------------------------------

/** The flags of the old form that choose a subcommand, with the value they take, if any. */
const MODE_WORDS: ReadonlyMap<string, boolean> = new Map([
  ["agent", true],
  ["list", false],
  ["init", true],
  ["validate", false],
  ["graph", false],
  ["runs", false],
  ["show", true],
  ["resume", true],
  ["redrive", true],
  ["answer", true],
  ["submit", false],
]);

/**
 * `argv` without `--agent` and the mode flags (and their values): what is passed on to the
 * subcommand, in order. `--submit` stays for `resume` (handing a held run back to the workers).
 */
function withoutModeFlags(argv: readonly string[], keepSubmit: boolean): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      out.push(...argv.slice(i));
      break;
    }
    const match = /^--([a-z-]+)(=.*)?$/s.exec(arg);
    const takesValue = match ? MODE_WORDS.get(match[1]) : undefined;
    if (takesValue === undefined || (match![1] === "submit" && keepSubmit)) {
      out.push(arg);
      continue;
    }
    if (takesValue && match![2] === undefined) i++;
  }
  return out;
}

/** The new form of `translated` as a next step: its `--store` apart (the password hidden). */
function hintOf(translated: Translated): NextStep {
  const args: string[] = [];
  let store: string | undefined;
  for (let i = 0; i < translated.argv.length; i++) {
    const arg = translated.argv[i];
    const next = translated.argv[i + 1];
    if (arg === "--store" && next !== undefined) store = translated.argv[++i];
    else if (arg.startsWith("--store=")) store = arg.slice("--store=".length);
    // An agent under .agent/ (a plain name) is found by the run id alone.
    else if (arg === "--agent" && next !== undefined && !/[/\\]|^\./.test(next)) i++;
    else args.push(arg);
  }
  return { action: translated.name, args, ...(store !== undefined ? { store } : {}) };
}

/**
 * `argv` without the flags of the old form that `name`'s subcommand does not take (the old form
 * ignored them in that mode: `--show ID --script s.json`), with their values. Anything else (an
 * agent's parameter, a mistyped flag) is left for the subcommand to judge.
 */
function onlyTakenFlags(name: StepflowAction, argv: readonly string[]): string[] {
  const taken = TAKES[name];
  if (!taken) return [...argv];
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      out.push(...argv.slice(i));
      break;
    }
    const match = /^--([^=]+)(=.*)?$/s.exec(arg);
    const decl = match ? OLD_FLAGS.get(match[1]) : undefined;
    if (!decl || taken.has(match![1])) {
      out.push(arg);
      if (decl?.type === "string" && match![2] === undefined && i + 1 < argv.length) {
        out.push(argv[++i]);
      }
      continue;
    }
    if (decl.type === "string" && match![2] === undefined) i++;
  }
  return out;
}

/** Every flag of the old form by name. */
const OLD_FLAGS = new Map(CLI_FLAGS.map((f) => [f.name, f]));

/** The flags each subcommand that takes no agent parameters declares (by name). */
const TAKES: Readonly<Partial<Record<StepflowAction, ReadonlySet<string>>>> = Object.fromEntries(
  ([
    ["list", list.command],
    ["init", init.command],
    ["validate", validate.command],
    ["graph", graph.command],
    ["runs", runs.command],
    ["show", show.command],
    ["resume", resume.command],
    ["redrive", redrive.command],
    ["answer", answer.command],
  ] as const).map((
    [name, command],
  ) => [name, new Set(declaredTable(command.flags).map((f) => f.name))]),
);

/** Checks an old command line as the old form did, then names its subcommand and command line. */
async function translate(
  argv: readonly string[],
  scan: CliFlags,
  userDir: string,
): Promise<Translated> {
  // A mistyped CLI flag (--lst) is named before anything else, in every mode.
  rejectMistypedCliFlags(argv);
  const modes = (["list", "init", "validate", "graph"] as const).filter((m) =>
    m === "init" ? scan.init !== undefined : scan[m]
  );
  // Durable-run commands each act on recorded runs: at most one, and none with another mode.
  const durable = [
    scan.runs ? "--runs" : "",
    scan.show !== undefined ? "--show" : "",
    scan.resume !== undefined ? "--resume" : "",
    scan.redrive !== undefined ? "--redrive" : "",
    scan.answer !== undefined ? "--answer" : "",
  ].filter(Boolean);
  for (
    const [flag, given] of [
      ["--value", scan.value],
      ["--answered-by", scan.answeredBy],
      ["--request-id", scan.requestId],
    ]
  ) {
    if (given !== undefined && scan.answer === undefined) {
      throw new UsageError(`${flag} goes with --answer RUN_ID; add --answer.`);
    }
  }
  if (scan.rerunUnfinishedCall && scan.resume === undefined) {
    throw new UsageError(
      "--rerun-unfinished-call goes with --resume RUN_ID (it re-runs the tool call an interrupted run stopped in); add --resume.",
    );
  }
  if (durable.length > 1 || (durable.length === 1 && modes.length > 0) || modes.length > 1) {
    throw new UsageError(
      `${
        [...durable, ...modes.map((m) => `--${m}`)].join(" and ")
      } cannot be combined; run them one at a time.`,
    );
  }
  rejectMisplacedReplayFlags(scan);
  rejectMisplacedGroup(scan);
  if (scan.wait && !scan.submit && scan.answer === undefined) {
    throw new UsageError(
      "--wait follows a run the workers drive: one queued with --submit, or one answered with --answer; add --submit.",
    );
  }
  if (scan.submit && scan.answer !== undefined) {
    throw new UsageError(
      "--answer records the answer to a recorded run; leave out --submit (an answered run that was submitted goes back on the queue by itself, and --wait follows it).",
    );
  }
  if (scan.connect && !scan.validate) {
    throw new UsageError(
      "--connect goes with --validate: it starts each MCP server of the agent and lists its tools.",
    );
  }
  const handBack = scan.resume !== undefined && scan.submit;
  const translated = await pick(argv, scan, handBack, durable, userDir);
  return { ...translated, argv: onlyTakenFlags(translated.name, translated.argv) };
}

/** The subcommand of an old command line (checked by {@linkcode translate}). */
async function pick(
  argv: readonly string[],
  scan: CliFlags,
  handBack: boolean,
  durable: readonly string[],
  userDir: string,
): Promise<Translated> {
  const rest = withoutModeFlags(argv, handBack);
  if (scan.list) return { name: "list", argv: rest, mode: "--list" };
  if (scan.init !== undefined) return { name: "init", argv: [scan.init, ...rest], mode: "--init" };
  if (scan.agent === undefined) {
    // A mistyped CLI flag (--lst) is named before asking for --agent; other flags may be the
    // parameters of the agent that was left out.
    rejectMistypedCliFlags(argv);
    if (durable.length === 1) {
      throw new UsageError(
        `${
          durable[0]
        } needs --agent NAME in this form; the subcommand finds the run by its id alone.`,
      );
    }
    const agents = await listAgents({ cwd: userDir });
    const known = agents.length > 0
      ? `Agents in ${displayPath(resolve(userDir, ".agent"), userDir)}: ${
        agents.map((a) => a.name).join(", ")
      }.`
      : `There are no agents in ${resolve(userDir, ".agent")} yet; create one with --init NAME.`;
    throw new UsageError(
      `Missing --agent NAME: say which agent to run. ${known}\nRun with --list to see them with descriptions, or --help for every flag.`,
    );
  }
  const agent = scan.agent;
  const onRun = (name: "show" | "resume" | "redrive" | "answer", runId: string): Translated => ({
    name,
    argv: [runId, "--agent", agent, ...rest],
    mode: `--${name}`,
  });
  if (scan.validate) return { name: "validate", argv: [agent, ...rest], mode: "--validate" };
  if (scan.graph) return { name: "graph", argv: [agent, ...rest], mode: "--graph" };
  if (scan.runs) return { name: "runs", argv: [agent, ...rest], mode: "--runs" };
  if (scan.show !== undefined) return onRun("show", scan.show);
  if (scan.resume !== undefined) return onRun("resume", scan.resume);
  if (scan.redrive !== undefined) return onRun("redrive", scan.redrive);
  if (scan.answer !== undefined) return onRun("answer", scan.answer);
  if (scan.submit) return { name: "submit", argv: [agent, ...rest], mode: "--submit" };
  return { name: "run", argv: [agent, ...rest] };
}

/**
 * `--run-group` names the group of a new run, or the group `--runs` lists: a resumed or redriven run
 * keeps the group it started in, and `--show` shows one run.
 */
function rejectMisplacedGroup(scan: CliFlags): void {
  if (scan.group === undefined) return;
  assertRunGroup(scan.group, "--run-group");
  const other = scan.show !== undefined
    ? "--show"
    : scan.resume !== undefined
    ? "--resume"
    : scan.redrive !== undefined
    ? "--redrive"
    : undefined;
  if (other === undefined) return;
  throw new UsageError(
    `--run-group cannot be combined with ${other}: a run keeps the group it was started in. Use --run-group to start a new run in a group, or with --runs to list a group's runs.`,
  );
}

/** `--help` of the old form: every flag, and with `--agent NAME` that agent's parameters. */
async function help(
  scan: CliFlags,
  userDir: string,
  stdout: { write(text: string): void },
): Promise<number> {
  let text = localizeCommands(usageText(), userDir);
  if (scan.agent !== undefined) {
    try {
      const def = await loadAgentDefinition(scan.agent, { cwd: userDir });
      text = localizeCommands(
        usageText({ parameters: def.agent.parameters ?? {}, agentName: def.name }),
        userDir,
      );
    } catch (error) {
      text += `\n\n(Could not load agent "${scan.agent}" to list its parameters: ${
        errorMessage(error).split("\n")[0]
      })`;
    }
  }
  stdout.write(`${text}\n`);
  return EXIT_CODES.success;
}

if (import.meta.main) await runCli();
