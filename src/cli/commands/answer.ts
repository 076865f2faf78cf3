/**
 * `stepflow answer RUN_ID --value JSON`: answers a run that waits at an input step (or for a tool
 * call's permission) and continues it.
 *
 * @module
 */
import { runAgentSubcommand } from "../agent_context.ts";
import { continueRun } from "../continue_run.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import {
  AGENT_FLAG,
  ANSWER_FLAGS,
  HELP_FLAG,
  JSON_FLAG,
  RECORD_FLAGS,
  RUN_BACKEND_FLAGS,
  RUN_OPTION_FLAGS,
  STORE_FLAG,
  VERBOSE_FLAG,
  WAIT_FLAG,
} from "../run_agent_flags.ts";
import { defineSubcommand, type Subcommand } from "./command.ts";

/** The flags of `stepflow answer`. */
export const ANSWER_COMMAND_FLAGS = defineFlags({
  ...ANSWER_FLAGS,
  ...AGENT_FLAG,
  wait: {
    ...WAIT_FLAG.wait,
    description: "For a run of the workers: follow it after the answer until it ends or waits",
  },
  ...RUN_BACKEND_FLAGS,
  ...RUN_OPTION_FLAGS,
  ...RECORD_FLAGS,
  ...STORE_FLAG,
  ...JSON_FLAG,
  ...VERBOSE_FLAG,
  ...HELP_FLAG,
});

/** `stepflow answer`. */
export const command: Subcommand<typeof ANSWER_COMMAND_FLAGS> = defineSubcommand({
  name: "answer",
  usage: ["answer RUN_ID --value JSON [options]", "answer RUN_ID          (at a terminal: asked)"],
  about: [
    "Checks the answer against the step's schema, records it (exactly once, whoever answers),",
    "and continues the run here to its next wait (exit 4) or its end. JSON piped on stdin works",
    "instead of --value; at a terminal without --value the question is asked field by field. A",
    "run submitted to the workers goes back on their queue instead (--wait follows it).",
  ].join("\n"),
  operands: [{ name: "RUN_ID", complete: "run" }],
  flags: ANSWER_COMMAND_FLAGS,
  examples: [
    `stepflow answer 20261126T200659Z-ce7fb0 --value '{"decision":"next"}'`,
    `echo '{"decision":"abort","note":"not now"}' | stepflow answer 20261126T200659Z-ce7fb0`,
    `stepflow answer 20261126T200659Z-ce7fb0 --value '{"decision":"allow"}' --wait`,
  ],
  main,
});

/** Runs `stepflow answer` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand(
    "answer",
    io,
    async (ctx) => await continueRun(command, "answer", argv, ctx),
  );
}
