/**
 * `stepflow validate AGENT [--connect]`: loads an agent and prints every problem and warning; with
 * `--connect`, also starts each of its MCP servers and lists their tools.
 *
 * @module
 */
import { AgentDefinitionError } from "../../definition/errors.ts";
import { loadAgentDefinition, locateAgent } from "../../definition/load.ts";
import { StepflowError } from "../../errors.ts";
import { type AgentCliContext, runAgentSubcommand } from "../agent_context.ts";
import { displayPath } from "../kit/display_path.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import {
  connectEachMcpServer,
  formatMcpConnectReport,
  type McpConnectReport,
} from "../mcp_connect.ts";
import { HELP_FLAG, JSON_FLAG, MODE_FLAGS, RUN_OPTION_FLAGS } from "../run_agent_flags.ts";
import { formatValidation, type ValidationReport } from "../summary.ts";
import { defineSubcommand, parseSubcommand, type Subcommand, subcommandHelp } from "./command.ts";

/** The flags of `stepflow validate`. */
export const VALIDATE_FLAGS = defineFlags({
  connect: {
    ...MODE_FLAGS.connect,
    description: "Also start each MCP server (behavior.mcpServers) and list its tools",
  },
  allowFallback: RUN_OPTION_FLAGS.allowFallback,
  json: { ...JSON_FLAG.json, description: "Print { valid, problems, warnings, … } as JSON" },
  ...HELP_FLAG,
});

/** `stepflow validate`. */
export const command: Subcommand<typeof VALIDATE_FLAGS> = defineSubcommand({
  name: "validate",
  usage: ["validate AGENT [--connect] [--json]"],
  about: [
    "Loads the agent and prints every problem and warning, numbered; exit 2 when there are",
    "problems. Required parameters may be left out. --connect also starts each MCP server of",
    "agent.json behavior.mcpServers, lists its tools and closes it again.",
  ].join("\n"),
  operands: [{ name: "AGENT", complete: "agent" }],
  flags: VALIDATE_FLAGS,
  examples: [
    "stepflow validate haiku",
    "stepflow validate ./agents/experimental --json",
    "stepflow validate tool-fixer --connect",
  ],
  main,
});

/** Runs `stepflow validate` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("validate", io, async (ctx) => {
    const { flags, operands } = parseSubcommand(command, argv);
    if (flags.help) {
      ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
      return EXIT_CODES.success;
    }
    return await validate(operands[0], flags, ctx);
  });
}

async function validate(
  agent: string,
  flags: { connect: boolean; allowFallback: boolean; json: boolean },
  ctx: AgentCliContext,
): Promise<number> {
  const dir = displayPath(locateAgent(agent, { cwd: ctx.userDir }).dir, ctx.userDir);
  let report: ValidationReport;
  let mcpServers: Record<string, unknown> | undefined;
  try {
    const def = await loadAgentDefinition(agent, {
      cwd: ctx.userDir,
      allowFallback: flags.allowFallback,
      // validate is the explicit check: every output schema is compiled exactly as at run time.
      compileSchemas: true,
    });
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
  const connected = flags.connect && report.problems.length === 0
    ? await connectMcpServersOf(mcpServers, ctx)
    : undefined;
  const failed = connected?.filter((r) => !r.ok) ?? [];
  if (flags.json) {
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
  if (failed.length > 0 && !flags.json) {
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
  ctx: AgentCliContext,
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
