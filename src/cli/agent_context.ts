/**
 * What every agent subcommand of `stepflow` (`run`, `validate`, `runs`, `show`, `resume`, …) works
 * with: its IO, the user's folder, colours, and how it prints a next step ({@linkcode NextStep} →
 * a command line that works where the user stands). Also the one wrapper that reports an error that
 * ended a subcommand.
 *
 * @module
 */
import { isAbsolute } from "node:path";
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError, UsageError } from "../errors.ts";
import {
  agentOfRun as agentOfRunIn,
  agentOperand as agentOperandOf,
  type CommandRenderer,
  commandRenderer,
  type NextStep,
} from "../invocation.ts";
import { type CliIo, colorOn, fullIo, userDirOf } from "./kit/io.ts";
import { reportError } from "./kit/report_error.ts";

/** The context of one agent subcommand. */
export interface AgentCliContext {
  /** Streams, environment, terminal, Ctrl-C. */
  io: CliIo;
  /** The user's directory: `INIT_CWD`, else the process cwd. */
  userDir: string;
  /** ANSI colours on stderr. */
  stderrColor: boolean;
  /** ANSI colours on stdout. */
  stdoutColor: boolean;
  /** `--verbose` (an internal error then prints its stack). */
  verbose: boolean;
}

/** The context of an agent subcommand called with `io` (missing parts from `silentIo`). */
export function agentCliContext(io: Partial<CliIo>): AgentCliContext {
  const full = fullIo(io);
  return {
    io: full,
    userDir: userDirOf(full),
    stderrColor: colorOn(full, "stderr"),
    stdoutColor: colorOn(full, "stdout"),
    verbose: false,
  };
}

/**
 * How the subcommand prints a next step: the command line that works where the user stands, with
 * the `--store` the user named (its password as `***`).
 */
export function nextCommand(ctx: AgentCliContext, store?: string): CommandRenderer {
  const render = commandRenderer({ cwd: ctx.userDir }, store);
  // An agent named by its folder (an error's `dir`) is printed as the user names it.
  return (next) =>
    render(
      next.agent !== undefined && isAbsolute(next.agent)
        ? { ...next, agent: agentOperandOf(next.agent, ctx.userDir) }
        : next,
    );
}

/**
 * How a printed command names `definition`: its folder name when it is `.agent/<name>` of the
 * user's folder, else its path from there ({@linkcode agentOperandOf} of its folder).
 */
export function agentOperand(definition: AgentDefinition, userDir: string): string {
  return agentOperandOf(definition.dir, userDir);
}

/**
 * The `agent` of a printed command that acts on a run of `definition`: none when the run id alone
 * finds it (the agent is under `.agent/`), else the agent's path.
 */
export function agentOfRun(definition: AgentDefinition, userDir: string): string | undefined {
  return agentOfRunIn(definition.dir, userDir);
}

/**
 * Runs one subcommand's body and reports an error that ends it (exit code of
 * {@linkcode reportError}): a usage error ends with where the subcommand's options are listed, and
 * an error that names its next step (`details.next`) prints that step as a command line.
 */
export async function runAgentSubcommand(
  name: string,
  io: Partial<CliIo>,
  body: (ctx: AgentCliContext) => Promise<number>,
): Promise<number> {
  const ctx = agentCliContext(io);
  try {
    return await body(ctx);
  } catch (error) {
    const render = nextCommand(ctx);
    return reportError(error, ctx.io.stderr, {
      prefix: "error:",
      color: ctx.stderrColor,
      verbose: ctx.verbose,
      nextStep: render,
      ...(error instanceof UsageError && !error.message.includes("--help")
        ? {
          hint: `Run \`${
            render({ action: name as NextStep["action"], args: ["--help"] })
          }\` for its options.`,
        }
        : {}),
    });
  }
}

/** The error's next step, when it names one (`details.next`). */
export function errorNextStep(error: unknown): unknown {
  return error instanceof StepflowError ? error.details?.next : undefined;
}
