/**
 * `stepflow resume`, `redrive` and `answer`: a recorded run, found by its id, continued by the one
 * run engine (`agent_run.ts`) — or, for a run the workers hold or drive, handed back to them.
 *
 * @module
 */
import { UsageError } from "../errors.ts";
import { assertRunId } from "../store/run_id.ts";
import type { AgentCliContext } from "./agent_context.ts";
import { readStdinText, rejectParametersOnContinue, runAgentFlow } from "./agent_run.ts";
import { definitionOfRun } from "./find_run.ts";
import { checkReplayFlags } from "./replay_flags.ts";
import { type CliFlags, toCliFlags } from "./run_agent_flags.ts";
import { submitAndFollow } from "./submit.ts";
import {
  parseSubcommand,
  scanFlags,
  splitOperands,
  type Subcommand,
  subcommandHelp,
} from "./commands/command.ts";
import { EXIT_CODES } from "./kit/exit_codes.ts";

/**
 * Parses and runs `stepflow <resume|redrive|answer> RUN_ID …`: the run's agent (`--agent`, else
 * found by the id), parameters refused, then the run continued here (or handed to the workers:
 * `resume --rerun-unfinished-call --submit`).
 */
export async function continueRun(
  command: Subcommand,
  action: "resume" | "redrive" | "answer",
  argv: readonly string[],
  ctx: AgentCliContext,
): Promise<number> {
  const { operands, rest } = splitOperands(argv, command.flags, 1);
  const scan = scanFlags(rest, command.flags) as Partial<CliFlags>;
  ctx.verbose = scan.verbose === true;
  if (scan.help) {
    ctx.io.stdout.write(`${subcommandHelp(command, ctx.userDir)}\n`);
    return EXIT_CODES.success;
  }
  const runId = operands[0];
  if (runId !== undefined) {
    assertRunId(runId);
    const definition = await definitionOfRun(runId, scan.agent, {
      userDir: ctx.userDir,
      env: ctx.io.env,
      ...(scan.store !== undefined ? { store: scan.store } : {}),
      ...(scan.allowFallback ? { allowFallback: true } : {}),
    });
    rejectParametersOnContinue(rest, definition, action);
    const { flags } = parseSubcommand(command, [runId, ...rest]);
    const cli = toCliFlags({ ...(flags as Partial<CliFlags>), [action]: runId });
    checkReplayFlags(cli);
    if (cli.submit) {
      if (!cli.rerunUnfinishedCall) {
        throw new UsageError(
          "--submit with resume hands back a run the workers hold because its worker died in a tool call: add --rerun-unfinished-call. The workers resume other interrupted runs themselves.",
        );
      }
      return await submitAndFollow({ flags: cli, params: {} }, definition, {
        ...ctx,
        stdin: () => readStdinText(ctx),
      });
    }
    return await runAgentFlow({ flags: cli, params: {} }, definition, ctx);
  }
  parseSubcommand(command, rest); // says RUN_ID is missing (or names a mistyped flag first)
  throw new UsageError(`${action} needs the id of a run.`);
}
