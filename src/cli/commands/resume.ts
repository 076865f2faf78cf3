/**
 * `stepflow resume RUN_ID`: continues an interrupted run from where it stopped — inside its step
 * in flight, its finished tool calls not run again.
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
  RERUN_FLAG,
  RUN_BACKEND_FLAGS,
  RUN_OPTION_FLAGS,
  STORE_FLAG,
  SUBMIT_FLAG,
  VERBOSE_FLAG,
  WAIT_FLAG,
} from "../run_agent_flags.ts";
import { defineSubcommand, type Subcommand } from "./command.ts";

/** The flags of `stepflow resume`. */
export const RESUME_FLAGS = defineFlags({
  ...AGENT_FLAG,
  ...RERUN_FLAG,
  ...RUN_BACKEND_FLAGS,
  ...RUN_OPTION_FLAGS,
  ...RECORD_FLAGS,
  ...STORE_FLAG,
  submit: {
    ...SUBMIT_FLAG.submit,
    description: "With --rerun-unfinished-call: hand a run the workers hold back to them",
  },
  wait: { ...WAIT_FLAG.wait, description: "With --submit: follow the run on the workers" },
  ...JSON_FLAG,
  ...VERBOSE_FLAG,
  ...HELP_FLAG,
});

/** `stepflow resume`. */
export const command: Subcommand<typeof RESUME_FLAGS> = defineSubcommand({
  name: "resume",
  usage: ["resume RUN_ID [options]"],
  about: [
    "Continues a run that was interrupted (killed, crashed, Ctrl-C) from its step in flight, inside",
    "it: recorded tool calls are not run again. It runs on the backend the run recorded; backend",
    "flags given now override it. A tool call that is not idempotent and never finished stops the",
    "resume until --rerun-unfinished-call says to run it again. A run its budget stopped carries",
    "on inside its step with a higher budget (--budget-usd, --budget-tokens).",
  ].join("\n"),
  operands: [{ name: "RUN_ID", complete: "run" }],
  flags: RESUME_FLAGS,
  examples: [
    "stepflow resume 20261123T100656Z-221507",
    "stepflow resume 20261123T100656Z-221507 --rerun-unfinished-call",
    "stepflow resume 20261123T100656Z-221507 --budget-usd 4",
    "stepflow resume 20261123T100656Z-221507 --backend anthropic --model claude-sonnet-4-5",
  ],
  main,
});

/** Runs `stepflow resume` in-process; returns the exit code. */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  return await runAgentSubcommand(
    "resume",
    io,
    async (ctx) => await continueRun(command, "resume", argv, ctx),
  );
}
