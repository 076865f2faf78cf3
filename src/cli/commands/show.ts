/**
 * `stepflow show RUN_ID`: one recorded run's history (`--as-script`: as a replay file).
 *
 * @module
 */
import type { AgentDefinition } from "../../definition/types.ts";
import { StepflowError } from "../../errors.ts";
import { exampleAnswer, formOf } from "../waiting_run.ts";
import type { PendingInput } from "../../flow/input_request.ts";
import { pathVisible } from "../../path_exists.ts";
import { FileRunStore } from "../../store/file.ts";
import {
  type ChildRunEntry,
  childRunsOf,
  formatRunHistory,
  historyFromLog,
} from "../../store/format.ts";
import { PostgresRunStore } from "../../store/postgres.ts";
import { shownStatus } from "../../store/run_status.ts";
import { selectRunStore } from "../../store/select.ts";
import type { RunCheckpoint, RunLogEntry, RunStore, RunSummary } from "../../store/types.ts";
import { spendView } from "../../store/spend_view.ts";
import { ownValue } from "../../own_record.ts";
import { agentOfRun as agentOfRunIn } from "../../invocation.ts";
import { isOpenStatus } from "../../run_statuses.ts";
import {
  type AgentCliContext,
  agentOfRun,
  nextCommand,
  runAgentSubcommand,
} from "../agent_context.ts";
import { jsonOutput, withKnownCost } from "../agent_run.ts";
import { definitionOfRun } from "../find_run.ts";
import { displayPath } from "../kit/display_path.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import { replayFileOfRun } from "../replay_flags.ts";
import { childRunLogs } from "../../flow/child_logs.ts";
import { fanOutRows, fanOutsOf } from "../../store/fan_out_lines.ts";
import { UsageError } from "../../errors.ts";
import {
  AGENT_FLAG,
  AS_SCRIPT_FLAG,
  HELP_FLAG,
  JSON_FLAG,
  STORE_FLAG,
} from "../run_agent_flags.ts";
import { defineSubcommand, parseSubcommand, type Subcommand, subcommandHelp } from "./command.ts";

/** The flags of `stepflow show`. */
export const SHOW_FLAGS = defineFlags({
  ...AGENT_FLAG,
  ...AS_SCRIPT_FLAG,
  ...STORE_FLAG,
  json: {
    ...JSON_FLAG.json,
    description: "Print { shownStatus, checkpoint, history, children, cost } as JSON",
  },
  ...HELP_FLAG,
});

/** `stepflow show`. */
export const command: Subcommand<typeof SHOW_FLAGS> = defineSubcommand({
  name: "show",
  usage: ["show RUN_ID [--agent NAME] [--json | --as-script]"],
  about: [
    "Prints a recorded run: status, times, tokens, cost, its history as a table, its child runs,",
    "and what comes next (the command that answers, resumes or redrives it). The run is found by",
    "its id among the agents under .agent/ (a child run too, recorded under its own agent);",
    "--agent names the agent when it lives elsewhere.",
  ].join("\n"),
  operands: [{ name: "RUN_ID", complete: "run" }],
  flags: SHOW_FLAGS,
  examples: [
    "stepflow show 20261123T100656Z-221507",
    "stepflow show 20261123T100656Z-221507 --json",
    "stepflow show 20261123T100656Z-221507 --as-script > tests/haiku.replay.yaml",
  ],
  main,
});

/** Runs `stepflow show` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("show", io, async (ctx) => {
    const { flags, operands } = parseSubcommand(command, argv);
    if (flags.help) {
      ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
      return EXIT_CODES.success;
    }
    if (flags.asScript && flags.json) {
      throw new UsageError("--as-script and --json cannot be combined: a replay file is YAML.");
    }
    const runId = operands[0];
    const definition = await definitionOfRun(runId, flags.agent, {
      userDir: ctx.userDir,
      env: ctx.io.env,
      ...(flags.store !== undefined ? { store: flags.store } : {}),
    });
    const store = selectRunStore(definition, {
      cwd: ctx.userDir,
      env: ctx.io.env,
      ...(flags.store !== undefined ? { store: flags.store } : {}),
    });
    try {
      return await showRun(store, runId, flags, definition, ctx);
    } finally {
      if (!(store instanceof FileRunStore)) await store.close();
    }
  });
}

async function showRun(
  store: FileRunStore | PostgresRunStore,
  runId: string,
  flags: { store?: string; json: boolean; asScript: boolean },
  definition: AgentDefinition,
  ctx: AgentCliContext,
): Promise<number> {
  const where = store instanceof FileRunStore
    ? displayPath(store.dir, ctx.userDir)
    : store.displayUrl;
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
  const agent = agentOfRun(definition, ctx.userDir);
  if (!checkpoint && !logExists) {
    throw new StepflowError(
      "RUN_NOT_FOUND",
      `No run ${runId} of agent "${definition.name}" is recorded in ${where}. Its runs are listed by the next command.`,
      {
        details: {
          runId,
          next: {
            action: "runs",
            agent: agent ?? definition.name,
            ...(flags.store !== undefined ? { store: flags.store } : {}),
          },
        },
      },
    );
  }
  if (flags.asScript) {
    // With the calls of its child runs (read from their own logs), so the file replays to its end.
    const children = await childRunLogs(store, definition, log);
    ctx.io.stdout.write(replayFileOfRun(log, definition.name, runId, ctx.io.env, children));
    return EXIT_CODES.success;
  }
  // Liveness (who holds the run's lock or lease) as `runs` sees it: one status everywhere.
  const summary = checkpoint ? await runSummary(store, runId) : undefined;
  // Open with an error: the workers hold it (else the error is why the queue gave it up).
  const held = summary?.error !== undefined && isOpenStatus(summary.status);
  const children = await childStatuses(store, definition, log, ctx.userDir);
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
          ...(children.length > 0
            ? { children: children.map(({ agentOperand: _, ...child }) => child) }
            : {}),
          ...(fanOuts.json.length > 0 ? { fanOuts: fanOuts.json } : {}),
          // Cost per run, step and call; a cost no call could be priced for is null.
          cost: spendView(checkpoint, log),
        })
      }\n`,
    );
    return EXIT_CODES.success;
  }
  const render = nextCommand(ctx, flags.store);
  const answerValue = await exampleAnswerOf(definition, checkpoint);
  ctx.io.stdout.write(
    `${
      formatRunHistory(checkpoint, log, {
        color: ctx.stdoutColor,
        runId,
        // The run's own steps name its agent when the id alone does not find it.
        commandFor: (next) =>
          render(
            agent !== undefined && next.runId === runId && next.agent === undefined
              ? { ...next, agent }
              : next,
          ),
        ...(answerValue !== undefined ? { answerValue } : {}),
        childStatus: new Map([
          ...children.map((child) => [child.runId, child.shownStatus ?? ""] as const),
          ...fanOuts.statuses,
        ]),
        childAgent: new Map(
          children.flatMap((child) =>
            child.agentOperand !== undefined ? [[child.runId, child.agentOperand]] : []
          ),
        ),
        ...(summary?.live !== undefined ? { live: summary.live } : {}),
        ...(held ? { held: summary!.error } : {}),
      })
    }\n${summary?.error && !held ? `! ${summary.error}\n` : ""}`,
  );
  return EXIT_CODES.success;
}

/** An answer to the question a waiting run asks, as JSON, from its step's schema (when it reads). */
async function exampleAnswerOf(
  definition: AgentDefinition,
  checkpoint: RunCheckpoint | undefined,
): Promise<string | undefined> {
  const waiting = checkpoint?.status === "waiting"
    ? checkpoint.state.waiting as PendingInput | undefined
    : undefined;
  if (typeof waiting?.stepId !== "string" || waiting.permission) return undefined;
  const form = await formOf(definition, waiting).catch(() => undefined);
  return form ? JSON.stringify(exampleAnswer(form)) : undefined;
}

/** A child run of the shown run, with its status and how a printed command names its agent. */
type ChildStatus = ChildRunEntry & { shownStatus?: string; agentOperand?: string };

/**
 * The child runs of a run's agent steps (its log's `agent_start` lines), each with its status: read
 * from its own agent's store (where children are recorded), else this store (a child recorded
 * before that, beside its parent); no status when neither holds it (pruned, or never started).
 * `agentOperand` is set when the child's id alone does not find it (its agent is not under
 * `.agent/` where the user stands).
 */
async function childStatuses(
  store: FileRunStore | PostgresRunStore,
  definition: AgentDefinition,
  log: readonly RunLogEntry[],
  userDir: string,
): Promise<ChildStatus[]> {
  const out: ChildStatus[] = [];
  for (const child of childRunsOf(log)) {
    const agent = ownValue(definition.steps, child.stepId)?.child;
    let checkpoint: RunCheckpoint | undefined;
    const own: RunStore = agent ? (store as RunStore).forAgent?.(agent) ?? store : store;
    for (const where of new Set<RunStore>([own, store])) {
      checkpoint = await where.loadCheckpoint(child.runId).catch(() => undefined);
      if (checkpoint) break;
    }
    const operand = agent ? agentOfRunIn(agent.dir, userDir) : undefined;
    out.push({
      ...child,
      ...(checkpoint ? { shownStatus: shownStatus({ status: checkpoint.status }) } : {}),
      ...(operand !== undefined ? { agentOperand: operand } : {}),
    });
  }
  return out;
}

/** The run's listing line (status, liveness), or undefined when the store does not list it. */
async function runSummary(
  store: FileRunStore | PostgresRunStore,
  runId: string,
): Promise<RunSummary | undefined> {
  if (store instanceof PostgresRunStore) return await store.summary(runId);
  return (await store.list()).find((run) => run.runId === runId);
}

/**
 * The fan-outs of a run's log: the status of each child that has no end line yet (read from its
 * agent's store: running, waiting, interrupted…), and the items as `--json` lists them (`fanOuts`:
 * step, agent, total and one row per item).
 */
async function fanOutReport(
  store: RunStore,
  definition: AgentDefinition,
  log: readonly RunLogEntry[],
): Promise<{ statuses: Map<string, string>; json: Record<string, unknown>[] }> {
  const statuses = new Map<string, string>();
  const json: Record<string, unknown>[] = [];
  for (const record of fanOutsOf(log)) {
    const agent = ownValue(definition.steps, record.stepId)?.child;
    const own: RunStore = agent ? store.forAgent?.(agent) ?? store : store;
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
