/**
 * `stepflow list`: the agents under `.agent/`, with their display names and descriptions; an agent
 * that does not load is marked, with the command that shows its problems.
 *
 * @module
 */
import { resolve } from "node:path";
import { agentListLines, checkAgents } from "../agent_list.ts";
import { nextCommand, runAgentSubcommand } from "../agent_context.ts";
import { displayPath } from "../kit/display_path.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import { HELP_FLAG, JSON_FLAG } from "../run_agent_flags.ts";
import { requiredParameterArgs } from "./init.ts";
import { defineSubcommand, parseSubcommand, type Subcommand, subcommandHelp } from "./command.ts";

/** The flags of `stepflow list`. */
export const LIST_FLAGS = defineFlags({
  json: { ...JSON_FLAG.json, description: "Print the agents as a JSON array" },
  ...HELP_FLAG,
});

/** `stepflow list`. */
export const command: Subcommand<typeof LIST_FLAGS> = defineSubcommand({
  name: "list",
  usage: ["list [--json]"],
  about:
    "Lists the agents under .agent/ in this folder: name, display name and description; an agent\nthat does not load is marked with its first problem.",
  operands: [],
  flags: LIST_FLAGS,
  examples: ["stepflow list", "stepflow list --json"],
  main,
});

/** Runs `stepflow list` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("list", io, async (ctx) => {
    const { flags } = parseSubcommand(command, argv);
    if (flags.help) {
      ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
      return EXIT_CODES.success;
    }
    // Each agent loaded once: a mark on those that do not load, as the dashboard shows them.
    const checked = await checkAgents(ctx.userDir);
    const agents = checked.map((a) => a.listed);
    const root = resolve(ctx.userDir, ".agent");
    const render = nextCommand(ctx);
    if (flags.json) {
      ctx.io.stdout.write(`${JSON.stringify(agents, null, 2)}\n`);
      return EXIT_CODES.success;
    }
    if (agents.length === 0) {
      ctx.io.stdout.write(
        `No agents in ${root}.\nCreate one with: ${
          render({ action: "init", agent: "my-agent" })
        }\n`,
      );
      return EXIT_CODES.success;
    }
    const lines = [`Agents in ${displayPath(root, ctx.userDir)} (${agents.length}):`];
    lines.push(...agentListLines(agents, (name) => render({ action: "validate", agent: name })));
    // The first agent that loads, with its required parameters: a command that runs as printed.
    const first = checked.find((a) => a.definition !== undefined);
    if (first) {
      lines.push(
        "",
        `Run one with: ${
          render({
            action: "run",
            agent: first.listed.name,
            args: requiredParameterArgs(first.definition!),
          })
        }`,
      );
    }
    ctx.io.stdout.write(`${lines.join("\n")}\n`);
    return EXIT_CODES.success;
  });
}
