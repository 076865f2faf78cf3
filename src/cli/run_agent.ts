/**
 * `deno task run-agent`: runs an agent's step flow from the command line (docs/cli.md), and
 * lists, validates, graphs and scaffolds agents.
 *
 * `deno task` runs commands in the folder of deno.json, so the user's own directory comes from
 * `INIT_CWD` (set by `deno task`): `.agent/`, `--script` and relative `--agent` paths resolve there.
 *
 * Exit codes: 0 success; 1 the flow ran and did not succeed; 2 usage, definition or backend setup
 * error; 3 a person declined the run at an input step; 4 the run waits for an answer and there is no terminal to ask; 130 cancelled with Ctrl-C;
 * 70 an unexpected internal error (a bug).
 *
 * Long because: it is the whole dispatch of
 * one command — modes, durable-run commands, a run and its waits — read top to bottom; what each
 * concern does is beside it (`args.ts`, `progress.ts`, `summary.ts`, `submit.ts`,
 * `waiting_run.ts`, `kit/`).
 *
 * @module
 */
import { resolve } from "node:path";
import { AgentDefinitionError } from "../definition/errors.ts";
import { flowToMermaid } from "../definition/graph.ts";
import { listAgents, loadAgentDefinition, locateAgent } from "../definition/load.ts";
import { agentListLines, checkAgents } from "./agent_list.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { ownValue } from "../own_record.ts";
import { errorMessage, StepflowError, UsageError } from "../errors.ts";
import { StepFlowRunner } from "../flow/runner.ts";
import type { RunPermissionAsk, StepFlowResult } from "../flow/types.ts";
import { askPermission } from "./permission_prompt.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import { defaultModelOf } from "../llm/model_chain.ts";
import { boundDepth } from "../engine/ask_structured.ts";
import type { LlmBackend } from "../llm/types.ts";
import {
  type CliFlags,
  type CommandLine,
  parseCommandLine,
  rejectMistypedCliFlags,
  scanCommandLine,
  usageText,
} from "./args.ts";
import { displayPath, initAgent } from "./init.ts";
import { localizeCommands, runAgentCommand } from "../invocation.ts";
import { agentRunCommand } from "./run_hint.ts";
import {
  createLineProgress,
  createLiveProgress,
  observeBackend,
  type ProgressRenderer,
} from "./progress.ts";
import { formatResult, formatValidation, type ValidationReport } from "./summary.ts";
import {
  connectEachMcpServer,
  formatMcpConnectReport,
  type McpConnectReport,
} from "./mcp_connect.ts";
import {
  type ChildRunEntry,
  childRunsOf,
  formatRunHistory,
  formatRunList,
  historyFromLog,
} from "../store/format.ts";
import { FileRunStore } from "../store/file.ts";
import { fanOutRows, fanOutsOf } from "../store/fan_out_lines.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { submissionOf } from "../worker/submissions.ts";
import { resolveStoreSetting, selectRunStore } from "../store/select.ts";
import type { RunCheckpoint, RunLogEntry, RunStore, RunSummary } from "../store/types.ts";
import { assertRunGroup } from "../store/run_group.ts";
import { shownStatus } from "../store/run_status.ts";
import { isOpenStatus } from "../run_statuses.ts";
import { rejectMisplacedReplayFlags, replayFileOfRun, writeRecording } from "./replay_flags.ts";
import { childRunLogs } from "../flow/child_logs.ts";
import { submitAndFollow } from "./submit.ts";
import { answerQueuedRun } from "./answer_queued.ts";
import { backendFromFlags, backendName } from "./kit/backend.ts";
import {
  type BackendChoice,
  mergeBackendChoice,
  recordableChoice,
  recordedBackendChoice,
} from "../llm/backend_choice.ts";
import type { PendingInput } from "../flow/input_request.ts";
import { lineReader } from "./kit/line_reader.ts";
import {
  askAtTerminal,
  continuationFlags,
  formOf,
  parseAnswerValue,
  pendingOf,
  waitingText,
  waitsText,
} from "./waiting_run.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";
import { cliPricing } from "./kit/pricing.ts";
import { spendView } from "../store/spend_view.ts";
import { costOrNull } from "../token_counts.ts";
import { listenForInterrupt } from "./kit/interrupt.ts";
import { exitProcess, startTelemetryExport } from "./kit/telemetry_export.ts";
import { type CliIo, colorOn, fullIo, processIo, STDIN_WAIT_MS, userDirOf } from "./kit/io.ts";
import { reportError, SETUP_ERROR_CODES } from "./kit/report_error.ts";
import { pathVisible } from "../path_exists.ts";

export { type CliIo, type CliWriter, processIo, STDIN_WAIT_MS } from "./kit/io.ts";
export {
  createInterruptHandler,
  INTERRUPT_GRACE_MS,
  type InterruptActions,
} from "./kit/interrupt.ts";

/** The backend used when neither `--backend` nor agent.json `behavior.backend` names one. */
export { DEFAULT_BACKEND };

/**
 * Runs the CLI with `argv` (without the program name) and returns the exit code. It never throws
 * and never calls `Deno.exit`: errors are printed on `io.stderr`.
 *
 * @example
 * ```ts ignore
 * import { main } from "./run_agent.ts";
 * const out: string[] = [];
 * const code = await main(["--list"], { stdout: { write: (t) => void out.push(t) } });
 * ```
 */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const full = fullIo(io);
  const ctx: Context = {
    io: full,
    userDir: userDirOf(full),
    stderrColor: colorOn(full, "stderr"),
    stdoutColor: colorOn(full, "stdout"),
    verbose: false,
  };
  try {
    return await dispatch(argv, ctx);
  } catch (error) {
    return reportError(error, full.stderr, {
      prefix: "error:",
      color: ctx.stderrColor,
      verbose: ctx.verbose,
    });
  }
}

/**
 * Runs the CLI on the real process (signals, stdio) and exits with its code. SIGTERM cancels the
 * run as Ctrl-C does, so its child runs and their processes end with it.
 */
export async function runCli(argv: readonly string[] = Deno.args): Promise<never> {
  // OTLP export when the environment asks for it (OTEL_EXPORTER_OTLP_ENDPOINT), flushed at exit.
  await startTelemetryExport();
  using interrupt = listenForInterrupt({
    message: "\nCancelling the run… (press Ctrl-C again to quit at once)\n",
  });
  const code = await main(argv, { ...processIo(), signal: interrupt.signal });
  return await exitProcess(interrupt.exitCode(code));
}

// -------------------------------------------------------------------------------------------------

interface Context {
  io: CliIo;
  /** The user's directory: `INIT_CWD`, else the process cwd. */
  userDir: string;
  stderrColor: boolean;
  stdoutColor: boolean;
  verbose: boolean;
}

async function dispatch(argv: readonly string[], ctx: Context): Promise<number> {
  const scan = scanCommandLine(argv);
  ctx.verbose = scan.verbose;
  if (scan.help) return await help(scan, ctx);

  const modes = (["list", "init", "validate", "graph"] as const).filter((m) =>
    m === "init" ? scan.init !== undefined : scan[m]
  );
  // Durable-run commands (--runs, --show, --resume, --redrive) each act on recorded runs, so at most
  // one may be given and none with another mode (--list, --init, --validate, --graph).
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
  if (durable.length > 1 || (durable.length === 1 && modes.length > 0)) {
    throw new UsageError(
      `${
        [...durable, ...modes.map((m) => `--${m}`)].join(" and ")
      } cannot be combined; run them one at a time.`,
    );
  }
  rejectMisplacedReplayFlags(scan);
  rejectMisplacedGroup(scan);
  if (scan.runs || scan.show !== undefined) return await recordedRuns(argv, scan, ctx);
  if (scan.wait && !scan.submit && scan.answer === undefined) {
    throw new UsageError(
      "--wait follows a run the workers drive: one queued with --submit, or one answered with --answer; add --submit.",
    );
  }
  // -- end of durable-run commands --
  if (modes.length > 1) {
    throw new UsageError(
      `${modes.map((m) => `--${m}`).join(" and ")} cannot be combined; run them one at a time.`,
    );
  }
  if (scan.list) return await list(parseCommandLine(argv).flags, ctx);
  if (scan.init !== undefined) return await init(parseCommandLine(argv).flags, ctx);

  if (scan.agent === undefined) {
    // A mistyped CLI flag (--lst) is named before asking for --agent; other flags may be the
    // parameters of the agent that was left out.
    rejectMistypedCliFlags(argv);
    const agents = await listAgents({ cwd: ctx.userDir });
    const known = agents.length > 0
      ? `Agents in ${displayPath(resolve(ctx.userDir, ".agent"), ctx.userDir)}: ${
        agents.map((a) => a.name).join(", ")
      }.`
      : `There are no agents in ${
        resolve(ctx.userDir, ".agent")
      } yet; create one with --init NAME.`;
    throw new UsageError(
      `Missing --agent NAME: say which agent to run. ${known}\nRun with --list to see them with descriptions, or --help for every flag.`,
    );
  }
  if (scan.connect && !scan.validate) {
    throw new UsageError(
      "--connect goes with --validate: run-agent --agent NAME --validate --connect starts each MCP server and lists its tools.",
    );
  }
  if (scan.validate) return await validate(argv, scan, ctx);

  const definition = await loadAgentDefinition(scan.agent, {
    cwd: ctx.userDir,
    allowFallback: scan.allowFallback,
  });
  if (scan.graph) {
    parseAgentCommandLine(argv, definition, { requireParameters: false });
    ctx.io.stdout.write(`${flowToMermaid(definition)}\n`);
    return EXIT_CODES.success;
  }
  const continuing = scan.resume !== undefined || scan.redrive !== undefined ||
    scan.answer !== undefined;
  if (continuing) rejectParametersOnContinue(argv, definition, scan);
  if (scan.submit && scan.answer !== undefined) {
    throw new UsageError(
      "--answer records the answer to a recorded run; leave out --submit (an answered run that was submitted goes back on the queue by itself, and --wait follows it).",
    );
  }
  if (scan.submit) {
    return await submitAndFollow(
      parseAgentCommandLine(argv, definition, { requireParameters: !continuing }),
      definition,
      { ...ctx, stdin: () => readStdinText(ctx) },
    );
  }
  return await run(
    parseAgentCommandLine(argv, definition, { requireParameters: !continuing }),
    definition,
    ctx,
  );
}

/** `--runs` and `--show RUN_ID`: the agent's recorded runs (agent.json `logging.directory`). */
async function recordedRuns(
  argv: readonly string[],
  scan: CliFlags,
  ctx: Context,
): Promise<number> {
  const flag = scan.runs ? "--runs" : "--show";
  if (scan.agent === undefined) {
    rejectMistypedCliFlags(argv); // a mistyped flag is named first
    throw new UsageError(
      `${flag} needs --agent NAME: runs are recorded per agent (agent.json logging.directory).`,
    );
  }
  const definition = await loadAgentDefinition(scan.agent, {
    cwd: ctx.userDir,
    allowFallback: scan.allowFallback,
  });
  const { flags } = parseAgentCommandLine(argv, definition, { requireParameters: false });
  const store = selectRunStore(definition, {
    cwd: ctx.userDir,
    env: ctx.io.env,
    ...(flags.store !== undefined ? { store: flags.store } : {}),
  });
  try {
    return await showRuns(store, flags, definition, ctx);
  } finally {
    if (!(store instanceof FileRunStore)) await store.close();
  }
}

async function showRuns(
  store: FileRunStore | PostgresRunStore,
  flags: CliFlags,
  definition: AgentDefinition,
  ctx: Context,
): Promise<number> {
  const where = store instanceof FileRunStore
    ? displayPath(store.dir, ctx.userDir)
    : store.displayUrl;
  // Hints print a command that works as printed (the run's recorded backend needs no flag).
  const command = agentRunCommand(ctx.userDir, definition.name, flags.store);
  if (flags.runs) {
    const all = await store.list();
    const runs = flags.group === undefined ? all : all.filter((r) => r.group === flags.group);
    const inGroup = flags.group === undefined ? "" : ` in group ${flags.group}`;
    if (flags.json) {
      const shown = runs.map((run) => ({ ...run, shownStatus: shownStatus(run) }));
      ctx.io.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
    } else if (runs.length === 0) {
      ctx.io.stdout.write(
        `No runs of agent "${definition.name}"${inGroup} recorded in ${where}.${
          flags.group !== undefined && all.length > 0
            ? ` ${all.length} other run${
              all.length === 1 ? "" : "s"
            }: list them without --run-group.`
            : ""
        }\n`,
      );
    } else {
      ctx.io.stdout.write(
        `Runs of agent "${definition.name}"${inGroup} in ${where} (${runs.length}, newest first):\n${
          formatRunList(runs, { color: ctx.stdoutColor, command })
        }\n`,
      );
    }
    return EXIT_CODES.success;
  }
  const runId = flags.show!;
  let checkpoint: RunCheckpoint | undefined;
  try {
    checkpoint = await store.loadCheckpoint(runId);
  } catch (error) {
    // A run that stopped before its first checkpoint still has a log worth showing.
    if (!(error instanceof StepflowError && error.code === "RUN_CHECKPOINT_MISSING")) throw error;
  }
  const log = await store.readLog(runId);
  const logExists = store instanceof FileRunStore
    ? await pathVisible(store.files(runId).log)
    : log.length > 0;
  if (!checkpoint && !logExists) {
    throw new StepflowError(
      "RUN_NOT_FOUND",
      `No run ${runId} of agent "${definition.name}" is recorded in ${where}. List the runs with --runs.`,
      { details: { runId } },
    );
  }
  if (flags.asScript) {
    // -- replay: --show RUN_ID --as-script --
    const children = await childRunLogs(store, definition, log);
    ctx.io.stdout.write(replayFileOfRun(log, definition.name, runId, ctx.io.env, children));
    return EXIT_CODES.success;
  }
  // Liveness (who holds the run's lock or lease) as --runs sees it: one status everywhere.
  const summary = checkpoint ? await runSummary(store, runId) : undefined;
  // Open with an error: the workers hold it (else the error is why the queue gave it up).
  const held = summary?.error !== undefined && isOpenStatus(summary.status);
  const children = await childStatuses(store, definition, log);
  const fanOuts = await fanOutReport(store, definition, log);
  if (flags.json) {
    const historyLength = checkpoint?.state.historyLength;
    const history = historyFromLog(
      log,
      typeof historyLength === "number" ? historyLength : undefined,
    );
    const status = checkpoint ? shownStatus(summary ?? checkpoint) : undefined;
    ctx.io.stdout.write(
      `${
        jsonOutput({
          ...(status ? { shownStatus: status } : {}),
          ...(summary?.error ? { error: summary.error } : {}),
          checkpoint: checkpoint ? withKnownCost(checkpoint) : checkpoint,
          history,
          ...(children.length > 0 ? { children } : {}),
          ...(fanOuts.json.length > 0 ? { fanOuts: fanOuts.json } : {}),
          // Cost per run, step and call; a cost no call could be priced for is null.
          cost: spendView(checkpoint, log),
        })
      }\n`,
    );
  } else {
    ctx.io.stdout.write(
      `${
        formatRunHistory(checkpoint, log, {
          color: ctx.stdoutColor,
          runId,
          command,
          ...(summary?.live !== undefined ? { live: summary.live } : {}),
          ...(held ? { held: summary!.error } : {}),
          childStatus: new Map([
            ...children.map((child) => [child.runId, child.shownStatus ?? ""] as const),
            ...fanOuts.statuses,
          ]),
        })
      }\n${summary?.error && !held ? `! ${summary.error}\n` : ""}`,
    );
  }
  return EXIT_CODES.success;
}

/**
 * The child runs of a run's agent steps (its log's `agent_start` lines), each with its status: read
 * from its own agent's store (where children are recorded), else this store (a child recorded
 * before that, beside its parent); no status when neither holds it (pruned, or never started).
 */
async function childStatuses(
  store: FileRunStore | PostgresRunStore,
  definition: AgentDefinition,
  log: readonly RunLogEntry[],
): Promise<(ChildRunEntry & { shownStatus?: string })[]> {
  const out: (ChildRunEntry & { shownStatus?: string })[] = [];
  for (const child of childRunsOf(log)) {
    const agent = ownValue(definition.steps, child.stepId)?.child;
    let checkpoint: RunCheckpoint | undefined;
    const own: RunStore = agent ? (store as RunStore).forAgent?.(agent) ?? store : store;
    for (const where of new Set<RunStore>([own, store])) {
      checkpoint = await where.loadCheckpoint(child.runId).catch(() => undefined);
      if (checkpoint) break;
    }
    out.push(
      checkpoint ? { ...child, shownStatus: shownStatus({ status: checkpoint.status }) } : child,
    );
  }
  return out;
}

/**
 * The fan-outs of a run's log for `--show`: the status of each child that has no end line yet
 * (read from its agent's store: running, waiting, interrupted…), and the items as `--json` lists
 * them (`fanOuts`: step, agent, total and one row per item).
 */
async function fanOutReport(
  store: FileRunStore | PostgresRunStore,
  definition: AgentDefinition,
  log: readonly RunLogEntry[],
): Promise<{ statuses: Map<string, string>; json: Record<string, unknown>[] }> {
  const statuses = new Map<string, string>();
  const json: Record<string, unknown>[] = [];
  for (const record of fanOutsOf(log)) {
    const agent = ownValue(definition.steps, record.stepId)?.child;
    const own: RunStore = agent ? (store as RunStore).forAgent?.(agent) ?? store : store;
    // One listing per store (liveness included), not one per child.
    const listings = new Map<RunStore, Map<string, RunSummary>>();
    for (const item of record.items.values()) {
      const last = item.children[item.children.length - 1];
      if (!last || last.end) continue;
      const where = last.store === "agent" ? own : store;
      let listing = listings.get(where);
      if (!listing) {
        const runs = await where.list().catch(() => []);
        listings.set(where, listing = new Map(runs.map((r) => [r.runId, r])));
      }
      const summary = listing.get(last.childRunId);
      if (summary) statuses.set(last.childRunId, shownStatus(summary));
    }
    json.push({
      stepId: record.stepId,
      agent: record.agent,
      total: record.total,
      items: fanOutRows(record, (runId) => statuses.get(runId)),
    });
  }
  return { statuses, json };
}

/** The run's listing line (status, liveness), or undefined when the store does not list it. */
async function runSummary(
  store: FileRunStore | PostgresRunStore,
  runId: string,
): Promise<RunSummary | undefined> {
  if (store instanceof PostgresRunStore) return await store.summary(runId);
  return (await store.list()).find((run) => run.runId === runId);
}

/** A run's result as `--json` prints it: a cost no call could be priced for is `null`, never 0. */
function resultJson(result: StepFlowResult): unknown {
  return { ...result, usage: { ...result.usage, costUsd: costOrNull(result.usage) } };
}

/** A checkpoint as `--show --json` prints it: its usage's unknown cost `null`, never 0. */
function withKnownCost(checkpoint: RunCheckpoint): RunCheckpoint {
  const usage = checkpoint.state.usage as Record<string, unknown> | undefined;
  if (!usage || typeof usage !== "object") return checkpoint;
  const costUsd = costOrNull(
    usage as { costUsd?: number; calls?: number; callsWithoutCost?: number },
  );
  return { ...checkpoint, state: { ...checkpoint.state, usage: { ...usage, costUsd } } };
}

/** Nesting kept by `--json` output; deeper values (stored by older versions) are elided. */
const JSON_OUTPUT_DEPTH = 1_000;

/**
 * Indented JSON for `--json` and `--show --json`. Output is bounded at validation time, but a run
 * recorded before that may hold data nested thousands of levels deep, on which an indented
 * `JSON.stringify` overflows the stack: such values are cut at {@linkcode JSON_OUTPUT_DEPTH} levels.
 */
function jsonOutput(value: unknown): string {
  return JSON.stringify(boundDepth(value, JSON_OUTPUT_DEPTH), null, 2);
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

/** `--resume`/`--redrive` continue with the run's own parameters; passing others is a mistake. */
function rejectParametersOnContinue(
  argv: readonly string[],
  definition: AgentDefinition,
  scan: CliFlags,
): void {
  const declared = Object.keys(definition.agent.parameters ?? {});
  const given = declared.filter((key) =>
    argv.some((arg) => arg === `--${key}` || arg.startsWith(`--${key}=`))
  );
  if (given.length === 0) return;
  const flag = scan.resume !== undefined
    ? `--resume ${scan.resume}`
    : scan.redrive !== undefined
    ? `--redrive ${scan.redrive}`
    : `--answer ${scan.answer}`;
  throw new UsageError(
    `${flag} continues the run with the parameters it started with; remove ${
      given.map((k) => `--${k}`).join(", ")
    } (start a new run to use other values).`,
  );
}

async function help(scan: CliFlags, ctx: Context): Promise<number> {
  let text = localizeCommands(usageText(), ctx.userDir);
  if (scan.agent !== undefined) {
    try {
      const def = await loadAgentDefinition(scan.agent, { cwd: ctx.userDir });
      text = localizeCommands(
        usageText({ parameters: def.agent.parameters ?? {}, agentName: def.name }),
        ctx.userDir,
      );
    } catch (error) {
      text += `\n\n(Could not load agent "${scan.agent}" to list its parameters: ${
        firstLine(errorMessage(error))
      })`;
    }
  }
  ctx.io.stdout.write(`${text}\n`);
  return EXIT_CODES.success;
}

async function list(flags: CliFlags, ctx: Context): Promise<number> {
  const agents = (await checkAgents(ctx.userDir)).map((a) => a.listed);
  const root = resolve(ctx.userDir, ".agent");
  if (flags.json) {
    ctx.io.stdout.write(`${JSON.stringify(agents, null, 2)}\n`);
    return EXIT_CODES.success;
  }
  if (agents.length === 0) {
    ctx.io.stdout.write(
      `No agents in ${root}.\nCreate one with: ${runAgentCommand(ctx.userDir)} --init my-agent\n`,
    );
    return EXIT_CODES.success;
  }
  const lines = [`Agents in ${displayPath(root, ctx.userDir)} (${agents.length}):`];
  lines.push(
    ...agentListLines(
      agents,
      (name) => `${runAgentCommand(ctx.userDir)} --agent ${name} --validate`,
    ),
  );
  lines.push(
    "",
    `Run one with: ${runAgentCommand(ctx.userDir)} --agent NAME [--<parameter> value …]`,
  );
  ctx.io.stdout.write(`${lines.join("\n")}\n`);
  return EXIT_CODES.success;
}

async function init(flags: CliFlags, ctx: Context): Promise<number> {
  const name = flags.init!;
  const created = await initAgent(name, { cwd: ctx.userDir });
  const where = displayPath(created.dir, ctx.userDir);
  // The scaffold must be runnable as is; loading it proves it (and names what to pass).
  const def = await loadAgentDefinition(created.dir, { cwd: ctx.userDir });
  const required = Object.entries(def.agent.parameters ?? {})
    .filter(([, p]) => p.required && p.default === undefined)
    .map(([key, p]) =>
      ` --${key} ${p.type === "string" ? '"…"' : p.type === "number" ? "1" : "true"}`
    )
    .join("");
  // Next steps that work where the user stands (deno task only works inside the checkout).
  const command = runAgentCommand(ctx.userDir);
  const lines = [
    `Created agent "${name}" in ${where} from the ${created.template} template (${created.files.length} files):`,
    ...created.files.map((f) => `  ${f}`),
    "",
  ];
  if (created.files.includes("demo.script.yaml")) {
    lines.push(
      "Try it without a model (scripted answers):",
      `  ${command} --agent ${name} --script ${where}/demo.script.yaml${required}`,
    );
  }
  lines.push(
    "Run it with a model:",
    `  ${command} --agent ${name}${required}`,
    "Check it after editing:",
    `  ${command} --agent ${name} --validate`,
  );
  ctx.io.stdout.write(`${lines.join("\n")}\n`);
  return EXIT_CODES.success;
}

async function validate(argv: readonly string[], scan: CliFlags, ctx: Context): Promise<number> {
  const agent = scan.agent!;
  const dir = displayPath(locateAgent(agent, { cwd: ctx.userDir }).dir, ctx.userDir);
  let report: ValidationReport;
  let mcpServers: Record<string, unknown> | undefined;
  try {
    const def = await loadAgentDefinition(agent, {
      cwd: ctx.userDir,
      allowFallback: scan.allowFallback,
      // --validate is the explicit check: every output schema is compiled exactly as at run time.
      compileSchemas: true,
    });
    parseAgentCommandLine(argv, def, { requireParameters: false });
    report = {
      agent: def.name,
      dir,
      problems: [],
      warnings: def.warnings,
      steps: Object.values(def.steps).filter((s) => s.kind !== "section").length,
      entryStepId: def.entryStepId,
    };
    mcpServers = def.agent.behavior.mcpServers;
    const agentSteps = Object.values(def.steps).filter((s) => s.kind === "agent" && s.child)
      .map((s) => ({
        stepId: s.id,
        agent: s.child!.name,
        dir: displayPath(s.child!.dir, ctx.userDir),
      }));
    if (agentSteps.length > 0) report.agentSteps = agentSteps;
  } catch (error) {
    if (!(error instanceof AgentDefinitionError)) throw error;
    report = { agent, dir, problems: error.problems, warnings: error.warnings };
  }
  // --connect: only a definition without problems has servers worth starting.
  const connected = scan.connect && report.problems.length === 0
    ? await connectMcpServersOf(mcpServers, ctx)
    : undefined;
  const failed = connected?.filter((r) => !r.ok) ?? [];
  if (scan.json) {
    const valid = report.problems.length === 0 && failed.length === 0;
    ctx.io.stdout.write(
      `${
        JSON.stringify(
          { valid, ...report, ...(connected ? { mcpServers: connected } : {}) },
          null,
          2,
        )
      }\n`,
    );
  } else {
    ctx.io.stdout.write(`${formatValidation(report, ctx.stdoutColor)}\n`);
    if (connected) {
      ctx.io.stdout.write(
        connected.length === 0
          ? "No MCP servers to connect to (agent.json behavior.mcpServers is not set).\n"
          : `${formatMcpConnectReport(connected, ctx.stdoutColor)}\n`,
      );
    }
  }
  if (failed.length > 0 && !scan.json) {
    ctx.io.stderr.write(
      `error: ${failed.length === 1 ? "the MCP server" : "the MCP servers"} ${
        failed.map((r) => `"${r.name}"`).join(", ")
      } of agent "${agent}" could not be started or reached (see above): fix behavior.mcpServers in ${dir}/agent.json, or the server.\n`,
    );
  }
  return report.problems.length === 0 && failed.length === 0
    ? EXIT_CODES.success
    : EXIT_CODES.usage;
}

/**
 * Starts each server of `behavior.mcpServers`, lists its tools and closes it (`--connect`); a
 * configuration that does not parse is one failed entry per problem's server, never a crash.
 */
async function connectMcpServersOf(
  configured: Record<string, unknown> | undefined,
  ctx: Context,
): Promise<McpConnectReport[]> {
  if (!configured || Object.keys(configured).length === 0) return [];
  try {
    return await connectEachMcpServer(configured, ctx.io.env, ctx.userDir);
  } catch (error) {
    if (!(error instanceof StepflowError)) throw error;
    // A configuration problem (an unset ${VAR}) is reported under the server it is about.
    const problems = (error.details?.problems ?? []) as string[];
    const byServer = Object.keys(configured).flatMap((name) => {
      const own = problems.filter((p) => p.startsWith(`mcpServers.${name}.`));
      return own.length
        ? [{ name, ok: false as const, error: { code: error.code, message: own.join("\n") } }]
        : [];
    });
    return byServer.length ? byServer : [{
      name: "behavior.mcpServers",
      ok: false,
      error: { code: error.code, message: error.message },
    }];
  }
}

// Long because: one run of the command end to end — input, the answer given or asked, the backend
// the run recorded, the drive and every wait it reaches, the recording, then the exit — read top to
// bottom; each part it calls lives beside it (waiting_run.ts, answer_queued.ts, replay_flags.ts).
async function run(
  commandLine: CommandLine,
  definition: AgentDefinition,
  ctx: Context,
): Promise<number> {
  const { flags, params } = commandLine;
  const continuing = flags.resume !== undefined || flags.redrive !== undefined ||
    flags.answer !== undefined;
  // A continued run keeps the {input_text} it started with; an answer may come on stdin instead.
  const inputText = continuing ? undefined : await readStdinText(ctx);
  const given =
    flags.answer !== undefined && (flags.value !== undefined || !ctx.io.isTerminal.stdin)
      ? {
        value: parseAnswerValue(
          flags.value ?? await readStdinText(ctx),
          flags.value !== undefined ? "--value" : "stdin",
        ),
      }
      : undefined;
  // `--json` promises one JSON object and nothing else: it never asks, like a run without a terminal.
  const terminal = ctx.io.isTerminal.stdin && ctx.io.stdin && !flags.json
    ? lineReader(ctx.io.stdin)
    : undefined;
  const ask = terminal
    ? { lines: terminal, write: (t: string) => ctx.io.stderr.write(t), signal: ctx.io.signal }
    : undefined;
  const who = (how: string) => ctx.io.env.USER ? `${how} (${ctx.io.env.USER})` : how;
  let progress = createProgress(flags, ctx);
  let result: StepFlowResult | undefined;
  const started = performance.now();
  let store: RunStore | undefined;
  try {
    // Every CLI run is recorded (file store by default), so any run can be resumed from another
    // process.
    store = selectRunStore(definition, {
      cwd: ctx.userDir,
      env: ctx.io.env,
      onWarning: (message) => progress.warn(message),
      ...(flags.store !== undefined ? { store: flags.store } : {}),
    });
    // A run submitted to the workers is answered here and continued by a worker.
    if (
      flags.answer !== undefined && store instanceof PostgresRunStore &&
      await submissionOf(store, flags.answer) !== undefined
    ) {
      progress.finish(undefined);
      return await answerQueuedRun(store, definition, flags.answer, flags, {
        io: ctx.io,
        stdoutColor: ctx.stdoutColor,
        url: resolveStoreSetting(definition, {
          env: ctx.io.env,
          ...(flags.store !== undefined ? { store: flags.store } : {}),
        }).value,
        ...(given ? { given } : {}),
        ...(ask ? { ask } : {}),
        answeredBy: who,
      });
    }
    // A continued or answered run starts from the backend it recorded; flags given now override.
    const continued = flags.resume ?? flags.redrive ?? flags.answer;
    const { backend, choice } = await selectBackend(
      flags,
      definition,
      ctx,
      progress,
      continued !== undefined ? await recordedChoice(store, continued) : undefined,
    );
    const backendChoice = recordableChoice(choice);
    // --pricing FILE over STEPFLOW_PRICING=FILE, both over agent.json's and the built-in prices.
    const pricing = await cliPricing(flags.pricing, ctx.io.env.STEPFLOW_PRICING, ctx.userDir);
    const budget = {
      ...(flags.budgetUsd !== undefined ? { usd: flags.budgetUsd } : {}),
      ...(flags.budgetTokens !== undefined ? { tokens: flags.budgetTokens } : {}),
    };
    // One runner per drive, each with the progress renderer of that drive.
    const runner = (drive: ProgressRenderer) =>
      new StepFlowRunner(definition, {
        backend: observeBackend(backend, drive),
        events: drive.events,
        allowFallback: flags.allowFallback,
        allowRun: flags.allowRun,
        skipValidators: flags.skipValidators,
        ...(flags.permissionAsks ? { permissionAsks: flags.permissionAsks } : {}),
        onWarning: (message) => drive.warn(message),
        store,
        ...(flags.maxIterations !== undefined ? { maxTotalIterations: flags.maxIterations } : {}),
        ...(flags.maxChildren !== undefined ? { maxChildren: flags.maxChildren } : {}),
        ...(choice.model !== undefined ? { model: choice.model } : {}),
        ...(Object.keys(budget).length ? { budget } : {}),
        ...(pricing ? { pricing } : {}),
        // At a terminal, a tool call that asks is asked here (yes, no, always for this run).
        ...(ask
          ? {
            onPermissionRequest: (request: RunPermissionAsk) =>
              askPermission(request, {
                lines: ask.lines,
                write: ask.write,
                who: who("terminal"),
                ...(drive.hold ? { hold: () => drive.hold!() } : {}),
              }),
          }
          : {}),
      });
    const permissionMode = flags.permissionMode !== undefined
      ? { permissionMode: flags.permissionMode }
      : {};
    const signal = ctx.io.signal ? { signal: ctx.io.signal } : {};
    const answerAtTerminal = async (
      runId: string,
      waiting: PendingInput,
    ): Promise<StepFlowResult> => {
      progress.finish(undefined);
      const form = await formOf(definition, waiting);
      for (;;) {
        const value = await askAtTerminal(waiting, runId, form, ask!);
        progress = createProgress(flags, ctx, progress.startedAt);
        try {
          return await runner(progress).answer(runId, value, {
            answeredBy: flags.answeredBy ?? who("terminal"),
            requestId: waiting.requestId,
            backendChoice,
            ...permissionMode,
            ...signal,
          });
        } catch (error) {
          // A value the form took but the schema refuses (a pattern, a length): ask again.
          if (!(error instanceof StepflowError) || error.code !== "INPUT_ANSWER_INVALID") {
            throw error;
          }
          progress.finish(undefined);
          ctx.io.stderr.write(`${error.message}\n`);
        }
      }
    };
    if (flags.answer !== undefined && given) {
      result = await runner(progress).answer(flags.answer, given.value, {
        answeredBy: flags.answeredBy ?? who("cli"),
        ...(flags.requestId !== undefined ? { requestId: flags.requestId } : {}),
        backendChoice,
        ...permissionMode,
        ...signal,
      });
    } else if (flags.answer !== undefined) {
      // At a terminal without --value: the run's question is asked field by field.
      const waiting = await pendingOf(store, flags.answer, flags.requestId);
      if (!waiting) {
        result = await runner(progress).answer(flags.answer, undefined, signal); // says why
      } else {
        result = await answerAtTerminal(flags.answer, waiting);
      }
    } else {
      result = await runner(progress).run({
        args: params,
        cwd: ctx.userDir,
        backendChoice,
        ...permissionMode,
        ...(inputText !== undefined ? { inputText } : {}),
        ...signal,
        ...(flags.resume !== undefined ? { resume: flags.resume } : {}),
        ...(flags.rerunUnfinishedCall ? { rerunUnfinishedCall: true } : {}),
        ...(flags.redrive !== undefined ? { redrive: flags.redrive } : {}),
        ...(flags.group !== undefined ? { group: flags.group } : {}),
      });
    }
    // At a terminal, every wait is asked at once and the run goes on in this process.
    while (ask && result.completionReason === "waiting" && result.waiting) {
      result = await answerAtTerminal(result.runId, result.waiting);
    }
    if (flags.answer !== undefined && result.runId !== flags.answer) {
      // Another process drives the run: the answer went to its waiting child, driven here.
      progress.warn(
        `run ${flags.answer} is driven by another process; the answer was recorded in its child run ${result.runId}, which went on here (${result.completionReason}); the run takes its result there`,
      );
    }
    if (flags.record !== undefined) {
      await writeRecording(flags.record, store, result.runId, definition, ctx);
    }
  } finally {
    progress.finish(result);
    if (store instanceof PostgresRunStore) await store.close();
  }
  if (result.completionReason === "waiting" && result.waiting) {
    // Nobody at a terminal: say what the run asks and how to answer it, and exit with its own code.
    if (flags.json) ctx.io.stdout.write(`${jsonOutput(resultJson(result))}\n`);
    else {
      const command = [
        agentRunCommand(ctx.userDir, definition.name, flags.store),
        ...continuationFlags(flags),
      ].join(" ");
      const waits = result.waits ?? [result.waiting];
      const forms = await Promise.all(
        waits.map((w) => formOf(definition, w).catch(() => undefined)),
      );
      ctx.io.stdout.write(
        waits.length > 1
          ? waitsText(waits, result.runId, command, forms)
          : waitingText(result.waiting, result.runId, command, forms[0]),
      );
    }
    return EXIT_CODES.waiting;
  }
  if (flags.json) {
    ctx.io.stdout.write(`${jsonOutput(resultJson(result))}\n`);
  } else {
    ctx.io.stdout.write(
      `${
        formatResult(result, {
          agentName: definition.name,
          color: ctx.stdoutColor,
          elapsedMs: performance.now() - started,
        })
      }\n`,
    );
  }
  if (result.success) return EXIT_CODES.success;
  if (result.completionReason === "budget_exceeded") {
    if (!flags.json) {
      const command = `${
        agentRunCommand(ctx.userDir, definition.name, flags.store)
      } --resume ${result.runId}`;
      ctx.io.stderr.write(
        `The run stays resumable: raise its budget and carry on inside the step with ${command} --budget-usd <USD> (or --budget-tokens <N>).\n`,
      );
    }
    return EXIT_CODES.budgetExceeded;
  }
  if (result.completionReason === "declined") return EXIT_CODES.incomplete; // a person said no
  if (!flags.json) {
    const redrive = `${
      agentRunCommand(ctx.userDir, definition.name, flags.store)
    } --redrive ${result.runId}`;
    // A configuration problem fails again on every redrive until the agent's files are fixed.
    ctx.io.stderr.write(
      result.error?.code.startsWith("REPLAY_")
        ? `The run no longer follows the recording in ${flags.script}: record it again with --record FILE${
          result.error.code === "REPLAY_PROMPT_CHANGED"
            ? " (or accept the drift with --replay lenient)"
            : ""
        }.\n`
        : result.error && CONFIGURATION_FAILURE_CODES.has(result.error.code)
        ? `This is a problem in the agent's files, not in the run: fix it, check with --validate, then start a new run.\n`
        : result.completionReason === "cancelled"
        ? `Continue it from step "${result.finalStepId}" with: ${redrive}\n`
        : `Restart it from its failed step with: ${redrive}\n`,
    );
  }
  if (result.completionReason === "cancelled" && ctx.io.signal?.aborted) {
    return EXIT_CODES.interrupted;
  }
  // A backend that cannot be used at all (credentials refused, SDK or executable missing) is a
  // setup problem like a missing key, not a flow that failed.
  if (result.error && SETUP_ERROR_CODES.has(result.error.code)) return EXIT_CODES.usage;
  return EXIT_CODES.failed;
}

/** Run failures caused by the agent's own files (prompts, schemas): no redrive can succeed. */
const CONFIGURATION_FAILURE_CODES = new Set([
  "FAILED_SCHEMA_RESOLUTION",
  "PROMPT_NOT_FOUND",
  "PROMPT_PATH_INVALID",
  "PROMPT_VARIABLES_MISSING",
  "PROMPT_FRONTMATTER_INVALID",
]);

/** Parses the command line against the agent's declared parameters. */
function parseAgentCommandLine(
  argv: readonly string[],
  definition: AgentDefinition,
  { requireParameters = true }: { requireParameters?: boolean } = {},
): CommandLine {
  const declared = definition.agent.parameters ?? {};
  if (requireParameters) {
    return parseCommandLine(argv, { parameters: declared, agentName: definition.name });
  }
  // --validate / --graph do not run the flow: required parameters may be left out.
  const optional = Object.fromEntries(
    Object.entries(declared).map(([k, p]) => [k, { ...p, required: false }]),
  );
  return parseCommandLine(argv, { parameters: optional, agentName: definition.name });
}

/**
 * `--script` (or `--backend scripted`) → the scripted backend; otherwise `createBackend` with
 * `--backend`/`--model`/`--base-url`, falling back to agent.json `behavior.backend`/`behavior.model`,
 * then {@linkcode DEFAULT_BACKEND}. A resumed or redriven run starts from the choice it recorded
 * (`recorded`); the flags given now override it field by field. Returns the backend and the choice
 * to record.
 */
async function selectBackend(
  flags: CliFlags,
  definition: AgentDefinition,
  ctx: Context,
  progress: ProgressRenderer,
  recorded: BackendChoice | undefined,
): Promise<{ backend: LlmBackend; choice: BackendChoice }> {
  const behavior = definition.agent.behavior;
  const given: Partial<BackendChoice> = {};
  if (flags.backend !== undefined) given.backend = flags.backend;
  if (flags.script !== undefined) given.script = resolve(ctx.userDir, flags.script);
  if (flags.model !== undefined) given.model = flags.model;
  if (flags.baseUrl !== undefined) given.baseUrl = flags.baseUrl;
  if (flags.fallbackModel.length > 0) given.fallbackModels = flags.fallbackModel;
  const name = backendName(flags, {
    fallback: recorded?.backend ?? behavior.backend ?? DEFAULT_BACKEND,
  })!;
  const choice = mergeBackendChoice(recorded ?? { backend: name }, given);
  // How calls are made (not recorded with the run): the retry limit, streaming, the replay mode.
  const how = {
    ...(flags.maxAttempts !== undefined ? { maxAttempts: flags.maxAttempts } : {}),
    ...(flags.maxRateLimitWaitMs !== undefined
      ? { maxRateLimitWaitMs: flags.maxRateLimitWaitMs }
      : {}),
    ...(flags.idleTimeoutMs !== undefined ? { idleTimeoutMs: flags.idleTimeoutMs } : {}),
    ...(flags.noStream ? { noStream: true } : {}),
    ...(flags.replay !== undefined ? { replay: flags.replay } : {}),
  };
  const defaultModel = defaultModelOf(behavior.model);
  // Always able to walk model chains (agent.json's, the steps', --fallback-model), with the
  // options of these flags for the entries on other backends.
  const { fallbackModels = [], ...chosen } = choice;
  const backend = await backendFromFlags({ ...chosen, ...how, fallbackModel: fallbackModels }, {
    cwd: ctx.userDir,
    ...(defaultModel !== undefined ? { defaultModel } : {}),
    env: ctx.io.env,
    // Backend retries reach the progress display as the runner's onStepRetry events.
    onWarning: (message) => progress.warn(message),
  });
  return { backend: backend!, choice };
}

/**
 * The backend choice recorded by the run being continued; undefined when it recorded none or its
 * checkpoint cannot be read (the runner then reports what is wrong with the run).
 */
async function recordedChoice(
  store: RunStore,
  runId: string,
): Promise<BackendChoice | undefined> {
  try {
    return recordedBackendChoice((await store.loadCheckpoint(runId))?.state);
  } catch {
    return undefined;
  }
}

function createProgress(flags: CliFlags, ctx: Context, startedAt?: number): ProgressRenderer {
  const write = (text: string) => ctx.io.stderr.write(text);
  const live = ctx.io.isTerminal.stderr && !flags.verbose && ctx.io.env.TERM !== "dumb";
  return live
    ? createLiveProgress({
      write,
      color: ctx.stderrColor,
      startedAt,
      ...(ctx.io.columns !== undefined ? { columns: ctx.io.columns } : {}),
    })
    : createLineProgress({ write, color: ctx.stderrColor, verbose: flags.verbose, startedAt });
}

/**
 * Piped stdin becomes `{input_text}`. A terminal is never read; an empty or closed stdin gives
 * nothing; a pipe that stays silent for `stdinWaitMs` is left alone (with a note) rather than
 * blocking the run forever.
 */
async function readStdinText(ctx: Context): Promise<string | undefined> {
  const stream = ctx.io.stdin;
  if (!stream || ctx.io.isTerminal.stdin) return undefined;
  const reader = stream.getReader();
  const waitMs = ctx.io.stdinWaitMs ?? STDIN_WAIT_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), waitMs));
  const first = await Promise.race([reader.read(), timeout]);
  clearTimeout(timer);
  if (first === "timeout") {
    reader.cancel().catch(() => {});
    if (ctx.verbose) {
      ctx.io.stderr.write(
        `note: stdin is a pipe but nothing arrived within ${waitMs} ms; running without {input_text}.\n`,
      );
    }
    return undefined;
  }
  if (first.done) return undefined;
  const chunks: Uint8Array[] = [first.value];
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    chunks.push(next.value);
  }
  const decoder = new TextDecoder();
  const text = chunks.map((c) => decoder.decode(c, { stream: true })).join("") + decoder.decode();
  return text.trim() === "" ? undefined : text;
}

function firstLine(text: string): string {
  return text.split("\n")[0];
}

if (import.meta.main) await runCli();
