/**
 * `stepflow submit AGENT [--<parameter> value …]`: queues a run for the workers (PostgreSQL store)
 * instead of running it here; `--wait` follows it.
 *
 * @module
 */
import { loadAgentDefinition } from "../../definition/load.ts";
import { UsageError } from "../../errors.ts";
import { assertRunGroup } from "../../store/run_group.ts";
import { nextCommand, runAgentSubcommand } from "../agent_context.ts";
import { readStdinText } from "../agent_run.ts";
import { parseWithParameters } from "../args.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import {
  GROUP_FLAG,
  HELP_FLAG,
  JSON_FLAG,
  RUN_BACKEND_FLAGS,
  RUN_OPTION_FLAGS,
  STORE_FLAG,
  toCliFlags,
  VERBOSE_FLAG,
  WAIT_FLAG,
} from "../run_agent_flags.ts";
import { submitAndFollow } from "../submit.ts";
import { agentHelp, missingAgent, rejectAgentFlag } from "./run.ts";
import {
  defineSubcommand,
  scanFlags,
  splitOperands,
  type Subcommand,
  wantsHelp,
} from "./command.ts";

/** The flags of `stepflow submit`: what travels with the run (the worker chooses the backend). */
export const SUBMIT_FLAGS = defineFlags({
  model: RUN_BACKEND_FLAGS.model,
  fallbackModel: RUN_BACKEND_FLAGS.fallbackModel,
  maxIterations: RUN_OPTION_FLAGS.maxIterations,
  budgetUsd: RUN_OPTION_FLAGS.budgetUsd,
  budgetTokens: RUN_OPTION_FLAGS.budgetTokens,
  pricing: RUN_OPTION_FLAGS.pricing,
  permissionMode: RUN_OPTION_FLAGS.permissionMode,
  ...GROUP_FLAG,
  ...STORE_FLAG,
  ...WAIT_FLAG,
  ...JSON_FLAG,
  ...VERBOSE_FLAG,
  ...HELP_FLAG,
});

/** `stepflow submit`. */
export const command: Subcommand<typeof SUBMIT_FLAGS> = defineSubcommand({
  name: "submit",
  usage: ["submit AGENT [--<parameter> value …] [--store postgres://…] [--wait]"],
  about: [
    "Queues a run of the agent for the workers (stepflow worker) and prints its id. Parameters,",
    "piped stdin, --model, --fallback-model, --max-iterations, --permission-mode, the budget and",
    "the prices read now (--pricing, STEPFLOW_PRICING) travel with the run; the worker chooses",
    "the backend. --wait follows the run live and exits with its end (0, 1), its wait (4) or its",
    "budget's stop (5).",
  ].join("\n"),
  operands: [{ name: "AGENT", complete: "agent" }],
  parameters: true,
  flags: SUBMIT_FLAGS,
  examples: [
    'stepflow submit issue-solver --topic "Fix the flaky login test" --store postgres://localhost/runs',
    "STEPFLOW_STORE=postgres://localhost/runs stepflow submit haiku --topic autumn --wait",
  ],
  main,
});

/** Runs `stepflow submit` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("submit", io, async (ctx) => {
    rejectAgentFlag(command, argv, ctx);
    const { operands, rest } = splitOperands(argv, SUBMIT_FLAGS, 1);
    ctx.verbose = scanFlags(rest, SUBMIT_FLAGS).verbose;
    if (wantsHelp(rest)) return await agentHelp(command, operands[0], ctx);
    // The workers choose the backend: say so, rather than "Unknown option", to someone used to run.
    const backend = ["--backend", "--script", "--base-url"].filter((flag) =>
      rest.some((arg) => arg === flag || arg.startsWith(`${flag}=`))
    );
    if (backend.length > 0) {
      throw new UsageError(
        `submit queues a run for the workers, which choose the backend; drop ${
          backend.join(", ")
        } (a worker takes them: \`${nextCommand(ctx)({ action: "worker", args: ["--help"] })}\`).`,
      );
    }
    const agent = operands[0] ?? await missingAgent(command, rest, ctx);
    const definition = await loadAgentDefinition(agent, { cwd: ctx.userDir });
    const { flags, params } = parseWithParameters(rest, SUBMIT_FLAGS, {
      parameters: definition.agent.parameters ?? {},
      agentName: definition.name,
      flagsHint: `Run \`${
        nextCommand(ctx)({ action: "submit", agent, args: ["--help"] })
      }\` for its options and parameters.`,
    });
    if (flags.group !== undefined) assertRunGroup(flags.group, "--run-group");
    return await submitAndFollow(
      { flags: toCliFlags({ ...flags, agent, submit: true }), params },
      definition,
      { ...ctx, stdin: () => readStdinText(ctx) },
    );
  });
}
