/**
 * `stepflow graph AGENT`: the agent's flow as a Mermaid flowchart.
 *
 * @module
 */
import { flowToMermaid } from "../../definition/graph.ts";
import { loadAgentDefinition } from "../../definition/load.ts";
import { runAgentSubcommand } from "../agent_context.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import { HELP_FLAG, RUN_OPTION_FLAGS } from "../run_agent_flags.ts";
import { defineSubcommand, parseSubcommand, type Subcommand, subcommandHelp } from "./command.ts";

/** The flags of `stepflow graph`. */
export const GRAPH_FLAGS = defineFlags({
  allowFallback: RUN_OPTION_FLAGS.allowFallback,
  ...HELP_FLAG,
});

/** `stepflow graph`. */
export const command: Subcommand<typeof GRAPH_FLAGS> = defineSubcommand({
  name: "graph",
  usage: ["graph AGENT"],
  about: "Prints the agent's flow as a Mermaid flowchart on stdout (paste it into Markdown).",
  operands: [{ name: "AGENT", complete: "agent" }],
  flags: GRAPH_FLAGS,
  examples: ["stepflow graph haiku", "stepflow graph code-improver > flow.mmd"],
  main,
});

/** Runs `stepflow graph` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("graph", io, async (ctx) => {
    const { flags, operands } = parseSubcommand(command, argv);
    if (flags.help) {
      ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
      return EXIT_CODES.success;
    }
    const definition = await loadAgentDefinition(operands[0], {
      cwd: ctx.userDir,
      allowFallback: flags.allowFallback,
    });
    ctx.io.stdout.write(`${flowToMermaid(definition)}\n`);
    return EXIT_CODES.success;
  });
}
