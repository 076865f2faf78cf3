/**
 * `stepflow runs [AGENT]`: the recorded runs of one agent, or of every agent under `.agent/`.
 *
 * @module
 */
import { loadAgentDefinition } from "../../definition/load.ts";
import type { AgentDefinition } from "../../definition/types.ts";
import { FileRunStore } from "../../store/file.ts";
import { formatRunList } from "../../store/format.ts";
import { assertRunGroup } from "../../store/run_group.ts";
import { shownStatus } from "../../store/run_status.ts";
import { selectRunStore } from "../../store/select.ts";
import type { RunSummary } from "../../store/types.ts";
import {
  type AgentCliContext,
  agentOfRun,
  nextCommand,
  runAgentSubcommand,
} from "../agent_context.ts";
import { allRuns } from "../find_run.ts";
import { displayPath } from "../kit/display_path.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import { GROUP_FLAG, HELP_FLAG, JSON_FLAG, STORE_FLAG } from "../run_agent_flags.ts";
import { defineSubcommand, parseSubcommand, type Subcommand, subcommandHelp } from "./command.ts";

/** The flags of `stepflow runs`. */
export const RUNS_FLAGS = defineFlags({
  group: { ...GROUP_FLAG.group, description: "List only the runs of this group" },
  ...STORE_FLAG,
  json: { ...JSON_FLAG.json, description: "Print the runs as a JSON array" },
  ...HELP_FLAG,
});

/** `stepflow runs`. */
export const command: Subcommand<typeof RUNS_FLAGS> = defineSubcommand({
  name: "runs",
  usage: ["runs [AGENT] [--run-group NAME] [--store URL] [--json]"],
  about: [
    "Lists recorded runs, newest first: id, start, status (interrupted, waiting · answer STEP, …),",
    "steps, duration, tokens and the step each is at, then how to continue the newest that can.",
    "Without AGENT, the runs of every agent under .agent/.",
  ].join("\n"),
  operands: [{ name: "AGENT", optional: true, complete: "agent" }],
  flags: RUNS_FLAGS,
  examples: ["stepflow runs", "stepflow runs haiku", "stepflow runs --run-group nightly --json"],
  main,
});

/** Runs `stepflow runs` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("runs", io, async (ctx) => {
    const { flags, operands } = parseSubcommand(command, argv);
    if (flags.help) {
      ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
      return EXIT_CODES.success;
    }
    if (flags.group !== undefined) assertRunGroup(flags.group, "--run-group");
    if (operands[0] === undefined) return await everyAgentsRuns(flags, ctx);
    const definition = await loadAgentDefinition(operands[0], { cwd: ctx.userDir });
    const store = selectRunStore(definition, {
      cwd: ctx.userDir,
      env: ctx.io.env,
      ...(flags.store !== undefined ? { store: flags.store } : {}),
    });
    try {
      const where = store instanceof FileRunStore
        ? displayPath(store.dir, ctx.userDir)
        : store.displayUrl;
      const runs = await store.list();
      return printRuns(runs, `of agent "${definition.name}"`, where, flags, ctx, definition);
    } finally {
      if (!(store instanceof FileRunStore)) await store.close();
    }
  });
}

async function everyAgentsRuns(
  flags: { group?: string; store?: string; json: boolean },
  ctx: AgentCliContext,
): Promise<number> {
  const runs = await allRuns({
    userDir: ctx.userDir,
    env: ctx.io.env,
    ...(flags.store !== undefined ? { store: flags.store } : {}),
  });
  return printRuns(
    runs,
    "of the agents",
    displayPath(`${ctx.userDir}/.agent`, ctx.userDir),
    flags,
    ctx,
  );
}

function printRuns(
  all: readonly RunSummary[],
  whose: string,
  where: string,
  flags: { group?: string; store?: string; json: boolean },
  ctx: AgentCliContext,
  definition?: AgentDefinition,
): number {
  const runs = flags.group === undefined ? all : all.filter((r) => r.group === flags.group);
  const inGroup = flags.group === undefined ? "" : ` in group ${flags.group}`;
  if (flags.json) {
    const shown = runs.map((run) => ({ ...run, shownStatus: shownStatus(run) }));
    ctx.io.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
    return EXIT_CODES.success;
  }
  if (runs.length === 0) {
    ctx.io.stdout.write(
      `No runs ${whose}${inGroup} recorded in ${where}.${
        flags.group !== undefined && all.length > 0
          ? ` ${all.length} other run${all.length === 1 ? "" : "s"}: list them without --run-group.`
          : ""
      }\n`,
    );
    return EXIT_CODES.success;
  }
  // Hints print a command that works as printed (the run's recorded backend needs no flag).
  const render = nextCommand(ctx, flags.store);
  const agent = definition ? agentOfRun(definition, ctx.userDir) : undefined;
  ctx.io.stdout.write(
    `Runs ${whose}${inGroup} in ${where} (${runs.length}, newest first):\n${
      formatRunList(runs, {
        color: ctx.stdoutColor,
        commandFor: (next) => render(agent !== undefined ? { ...next, agent } : next),
      })
    }\n`,
  );
  return EXIT_CODES.success;
}
