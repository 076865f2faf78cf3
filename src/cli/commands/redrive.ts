/**
 * `stepflow redrive RUN_ID`: restarts a run that failed (or was aborted, cancelled, timed out) from
 * the step it ended on.
 *
 * @module
 */
import { runAgentSubcommand } from "../agent_context.ts";
import { continueRun } from "../continue_run.ts";
import { defineFlags } from "../kit/flags.ts";
import type { CliIo } from "../kit/io.ts";
import {
  AGENT_FLAG,
  HELP_FLAG,
  JSON_FLAG,
  RECORD_FLAGS,
  RUN_BACKEND_FLAGS,
  RUN_OPTION_FLAGS,
  STORE_FLAG,
  VERBOSE_FLAG,
} from "../run_agent_flags.ts";
import { defineSubcommand, type Subcommand } from "./command.ts";

/** The flags of `stepflow redrive`. */
export const REDRIVE_FLAGS = defineFlags({
  ...AGENT_FLAG,
  ...RUN_BACKEND_FLAGS,
  ...RUN_OPTION_FLAGS,
  ...RECORD_FLAGS,
  ...STORE_FLAG,
  ...JSON_FLAG,
  ...VERBOSE_FLAG,
  ...HELP_FLAG,
});

/** `stepflow redrive`. */
export const command: Subcommand<typeof REDRIVE_FLAGS> = defineSubcommand({
  name: "redrive",
  usage: ["redrive RUN_ID [options]"],
  about: [
    "Restarts a run that ended without success (failed, aborted, cancelled, timeout) from the step",
    "it ended on, with the history before it kept. It runs on the backend the run recorded;",
    "backend flags given now override it.",
  ].join("\n"),
  operands: [{ name: "RUN_ID", complete: "run" }],
  flags: REDRIVE_FLAGS,
  examples: [
    "stepflow redrive 20261123T100656Z-221507",
    "stepflow redrive 20261123T100656Z-221507 --model claude-opus-4-1",
  ],
  main,
});

/** Runs `stepflow redrive` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand(
    "redrive",
    io,
    async (ctx) => await continueRun(command, "redrive", argv, ctx),
  );
}
