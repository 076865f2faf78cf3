/**
 * `stepflow run AGENT [--<parameter> value …] [options]`: runs an agent's step flow and records it.
 *
 * @module
 */
import { resolve } from "node:path";
import { listAgents, loadAgentDefinition } from "../../definition/load.ts";
import { UsageError } from "../../errors.ts";
import { assertRunGroup } from "../../store/run_group.ts";
import { type AgentCliContext, nextCommand, runAgentSubcommand } from "../agent_context.ts";
import { runAgentFlow } from "../agent_run.ts";
import { parseWithParameters, rejectMistypedFlags } from "../args.ts";
import { displayPath } from "../kit/display_path.ts";
import { defineFlags } from "../kit/flags.ts";
import { parameterList } from "../parameter_list.ts";
import {
  GROUP_FLAG,
  HELP_FLAG,
  JSON_FLAG,
  RECORD_FLAGS,
  RUN_BACKEND_FLAGS,
  RUN_OPTION_FLAGS,
  STORE_FLAG,
  toCliFlags,
  VERBOSE_FLAG,
} from "../run_agent_flags.ts";
import { checkReplayFlags } from "../replay_flags.ts";
import type { CliIo } from "../kit/io.ts";
import {
  defineSubcommand,
  scanFlags,
  splitOperands,
  type Subcommand,
  subcommandHelp,
  wantsHelp,
} from "./command.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";

/** The flags of `stepflow run`. */
export const RUN_FLAGS = defineFlags({
  ...RUN_BACKEND_FLAGS,
  ...RUN_OPTION_FLAGS,
  ...GROUP_FLAG,
  ...RECORD_FLAGS,
  ...STORE_FLAG,
  ...JSON_FLAG,
  ...VERBOSE_FLAG,
  ...HELP_FLAG,
});

/** `stepflow run`. */
export const command: Subcommand<typeof RUN_FLAGS> = defineSubcommand({
  name: "run",
  usage: ["run AGENT [--<parameter> value …] [options]"],
  about: [
    "Runs the agent's step flow (.agent/AGENT, or a folder path) and records every step, so the",
    "run can be resumed or redriven. Text piped on stdin becomes {input_text}. Exit codes: 0",
    "completed, 1 did not succeed, 2 usage or setup error, 3 a person declined it at an input step,",
    "4 waits for an answer (no terminal to ask), 5 stopped by its budget (resumable with a higher",
    "one), 130 cancelled with Ctrl-C, 143 cancelled with SIGTERM.",
  ].join("\n"),
  operands: [{ name: "AGENT", complete: "agent" }],
  parameters: true,
  flags: RUN_FLAGS,
  examples: [
    'stepflow run issue-solver --topic "Fix the flaky login test"',
    "stepflow run haiku --script .agent/haiku/demo.script.yaml --topic autumn --json",
    "git diff | stepflow run reviewer --backend anthropic",
    "stepflow run haiku --backend openai --base-url http://127.0.0.1:11434/v1 --topic autumn",
    "stepflow run haiku --topic autumn --record tests/haiku.replay.yaml",
    "stepflow run issue-solver --topic t --budget-usd 2 --fallback-model gpt-4o-mini",
  ],
  main,
});

/** Runs `stepflow run` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("run", io, async (ctx) => {
    rejectAgentFlag(command, argv, ctx);
    const { operands, rest } = splitOperands(argv, RUN_FLAGS, 1);
    const scan = scanFlags(rest, RUN_FLAGS);
    ctx.verbose = scan.verbose;
    if (wantsHelp(rest)) return await agentHelp(command, operands[0], ctx);
    const agent = operands[0] ?? await missingAgent(command, rest, ctx);
    const definition = await loadAgentDefinition(agent, {
      cwd: ctx.userDir,
      allowFallback: scan.allowFallback,
    });
    const { flags, params } = parseWithParameters(rest, RUN_FLAGS, {
      parameters: definition.agent.parameters ?? {},
      agentName: definition.name,
      flagsHint: `Run \`${
        nextCommand(ctx)({ action: "run", agent, args: ["--help"] })
      }\` for its options and parameters.`,
    });
    checkReplayFlags(flags);
    if (flags.group !== undefined) assertRunGroup(flags.group, "--run-group");
    return await runAgentFlow({ flags: toCliFlags({ ...flags, agent }), params }, definition, ctx);
  });
}

/**
 * `stepflow <run|submit> [AGENT] --help`: the subcommand's help, with the agent's parameters when
 * one is named (or why they cannot be listed).
 */
export async function agentHelp(
  subcommand: Subcommand,
  agent: string | undefined,
  ctx: AgentCliContext,
): Promise<number> {
  let extra = "Name an agent (stepflow " + subcommand.name +
    " AGENT --help) to see the parameters it takes.";
  if (agent !== undefined) {
    try {
      const definition = await loadAgentDefinition(agent, { cwd: ctx.userDir });
      extra = parameterList(definition.agent.parameters ?? {}, definition.name);
    } catch (error) {
      extra = `(Could not load agent "${agent}" to list its parameters: ${
        String((error as Error).message).split("\n")[0]
      })`;
    }
  }
  ctx.io.stdout.write(`${subcommandHelp(subcommand, ctx.userDir, extra)}\n`);
  return EXIT_CODES.success;
}

/** No AGENT: a mistyped flag is named first, else the agents there are. */
export async function missingAgent(
  subcommand: Subcommand,
  rest: readonly string[],
  ctx: AgentCliContext,
): Promise<never> {
  rejectMistypedFlags(
    rest,
    subcommand.flags,
    `Run \`${nextCommand(ctx)({ action: subcommand.name, args: ["--help"] })}\` for its options.`,
  );
  const agents = await listAgents({ cwd: ctx.userDir });
  const root = resolve(ctx.userDir, ".agent");
  const known = agents.length > 0
    ? `Agents in ${displayPath(root, ctx.userDir)}: ${agents.map((a) => a.name).join(", ")}.`
    : `There are no agents in ${root} yet; create one with \`${
      nextCommand(ctx)({ action: "init", agent: "my-agent" })
    }\`.`;
  throw new UsageError(`Name the agent after "${subcommand.name}". ${known}`);
}

/**
 * `stepflow run --agent NAME` (the old form's habit): the agent is the subcommand's first word;
 * said with the command that works.
 */
export function rejectAgentFlag(
  subcommand: Subcommand,
  argv: readonly string[],
  ctx: AgentCliContext,
): void {
  const at = argv.findIndex((arg) => arg === "--agent" || arg.startsWith("--agent="));
  if (at === -1) return;
  const name = argv[at].includes("=") ? argv[at].slice("--agent=".length) : argv[at + 1];
  throw new UsageError(
    `${subcommand.name} takes the agent as its first word, without --agent: \`${
      nextCommand(ctx)({ action: subcommand.name, agent: name ?? "my-agent" })
    }\`.`,
  );
}
