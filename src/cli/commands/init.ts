/**
 * `stepflow init NAME`: scaffolds a working agent in `.agent/NAME` and prints the commands that
 * try it, run it and check it — as they work where the user stands.
 *
 * @module
 */
import { loadAgentDefinition } from "../../definition/load.ts";
import type { AgentDefinition } from "../../definition/types.ts";
import { nextCommand, runAgentSubcommand } from "../agent_context.ts";
import { displayPath, initAgent } from "../init.ts";
import { EXIT_CODES } from "../kit/exit_codes.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import { HELP_FLAG } from "../run_agent_flags.ts";
import { defineSubcommand, parseSubcommand, type Subcommand, subcommandHelp } from "./command.ts";

/** The flags of `stepflow init`. */
export const INIT_FLAGS = defineFlags({ ...HELP_FLAG });

/** `stepflow init`. */
export const command: Subcommand<typeof INIT_FLAGS> = defineSubcommand({
  name: "init",
  usage: ["init NAME"],
  about: [
    "Copies the gate-routed template into .agent/NAME (never over an existing folder). The new",
    "agent loads, validates and runs with its demo.script.yaml as it is.",
  ].join("\n"),
  operands: [{ name: "NAME" }],
  flags: INIT_FLAGS,
  examples: ["stepflow init release-notes"],
  main,
});

/** Runs `stepflow init` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand("init", io, async (ctx) => {
    const { flags, operands } = parseSubcommand(command, argv);
    if (flags.help) {
      ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
      return EXIT_CODES.success;
    }
    const name = operands[0];
    const created = await initAgent(name, { cwd: ctx.userDir });
    const where = displayPath(created.dir, ctx.userDir);
    // The scaffold must be runnable as is; loading it proves it (and names what to pass).
    const definition = await loadAgentDefinition(created.dir, { cwd: ctx.userDir });
    const args = requiredParameterArgs(definition);
    const render = nextCommand(ctx);
    const lines = [
      `Created agent "${name}" in ${where} from the ${created.template} template (${created.files.length} files):`,
      ...created.files.map((f) => `  ${f}`),
      "",
    ];
    if (created.files.includes("demo.script.yaml")) {
      lines.push(
        "Try it without a model (scripted answers):",
        `  ${
          render({
            action: "run",
            agent: name,
            args: ["--script", `${where}/demo.script.yaml`, ...args],
          })
        }`,
      );
    }
    lines.push(
      "Run it with a model:",
      `  ${render({ action: "run", agent: name, args })}`,
      "Check it after editing:",
      `  ${render({ action: "validate", agent: name })}`,
    );
    ctx.io.stdout.write(`${lines.join("\n")}\n`);
    return EXIT_CODES.success;
  });
}

/**
 * Example values for the agent's required parameters without a default, as command-line words
 * (`--topic …`): what a printed `stepflow run` command needs to run as printed.
 */
export function requiredParameterArgs(definition: AgentDefinition): string[] {
  return Object.entries(definition.agent.parameters ?? {})
    .filter(([, p]) => p.required && p.default === undefined)
    .flatMap(([key, p]) => [
      `--${p.flag ?? key}`,
      p.enum?.length
        ? String(p.enum[0])
        : p.type === "string" || p.type === "array"
        ? "…"
        : p.type === "number"
        ? "1"
        : "true",
    ]);
}
