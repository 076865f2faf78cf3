/**
 * How every stepflow command line reports an error that ended it, and which exit code it gets:
 * errors a user can fix (a {@linkcode StepflowError}: usage, definition, setup) print their message
 * and no stack; anything else is a bug in stepflow and says so.
 *
 * @module
 */
import { AgentDefinitionError } from "../../definition/errors.ts";
import { errorMessage, StepflowError } from "../../errors.ts";
import { findFileAccessError } from "../../fs_error.ts";
import { EXIT_CODES } from "./exit_codes.ts";
import { BACKEND_SETUP_CODES } from "../../llm/backend_error.ts";
import type { CliWriter } from "./io.ts";
import { palette } from "../../palette.ts";
import { asNextStep, type CommandRenderer, plainCommandLine } from "../../invocation.ts";

/**
 * Backend failures that mean "fix your setup" rather than "the run failed" (missing or refused
 * credentials, SDK or executable not installed): exit 2 like a missing key.
 */
export const SETUP_ERROR_CODES: ReadonlySet<string> = BACKEND_SETUP_CODES;

/**
 * The user's file-system situation (a folder without access, a name too long): exit 2 in every
 * command, whatever else its own codes mean.
 */
export const FILE_SYSTEM_ERROR_CODES: ReadonlySet<string> = new Set([
  "FILE_ACCESS",
  "FILE_NAME_TOO_LONG",
]);

/** Options of {@linkcode reportError}. */
export interface ReportOptions {
  /** Starts every error line: `error:` (run-agent, plan), `run-plan:`, `qplan:`. */
  prefix: string;
  /** Colour the prefix red (stderr is a terminal). */
  color?: boolean;
  /** Print the stack of an internal error too (`--verbose`). */
  verbose?: boolean;
  /** Aborted by Ctrl-C: an unexpected error after it is the cancellation, exit 130. */
  signal?: AbortSignal;
  /**
   * The exit code of a {@linkcode StepflowError} whose code is not one the kit decides itself
   * (`PLAN_LOCKED` → 75, {@linkcode SETUP_ERROR_CODES} → 2). Default: 2 (usage).
   */
  exitCodeOf?: (error: StepflowError) => number;
  /**
   * Renders the next step an error names (`details.next`, a `NextStep`): printed under the
   * message as `Next: <command>`. Without it, the step is not printed.
   */
  nextStep?: CommandRenderer;
  /** A line printed after a usage error's message (where the command's options are listed). */
  hint?: string;
}

/**
 * Prints `error` on `stderr` and returns the exit code: a {@linkcode StepflowError} prints its
 * message (an {@linkcode AgentDefinitionError} also its warnings and how to re-check), exit 2 unless
 * `exitCodeOf` says otherwise; a non-stepflow error after Ctrl-C is the cancellation (130); an
 * operating-system error of a file operation (permission denied, read-only, link loop, name too
 * long, disk full) is the user's situation: `FILE_ACCESS`'s what, where and fix, exit 2; anything
 * else is reported as a bug (exit 70).
 *
 * @example
 * ```ts
 * import { reportError } from "./report_error.ts";
 * import { UsageError } from "../../errors.ts";
 * let text = "";
 * const code = reportError(new UsageError("Missing --agent NAME."), { write: (t) => void (text += t) }, {
 *   prefix: "error:",
 * });
 * console.log(code, text); // 2 "error: Missing --agent NAME.\n"
 * ```
 */
export function reportError(error: unknown, stderr: CliWriter, options: ReportOptions): number {
  const prefix = palette(options.color ?? false).red(options.prefix);
  const write = (text: string) => stderr.write(`${text}\n`);
  if (error instanceof AgentDefinitionError) {
    write(`${prefix} ${error.message}`);
    if (error.warnings.length > 0) {
      write(`Warnings:\n${error.warnings.map((w) => `  - ${w}`).join("\n")}`);
    }
    write(
      `Fix the files above; \`${
        (options.nextStep ?? plainCommandLine)({ action: "validate", agent: error.dir })
      }\` re-checks the agent without running it.`,
    );
    return EXIT_CODES.usage;
  }
  if (error instanceof StepflowError) {
    write(`${prefix} ${error.message}`);
    const next = options.nextStep ? asNextStep(error.details?.next) : undefined;
    if (next) write(`Next: ${options.nextStep!(next)}`);
    if (options.hint !== undefined && error.code === "USAGE") write(options.hint);
    if (error.code === "PLAN_LOCKED") return EXIT_CODES.locked;
    if (SETUP_ERROR_CODES.has(error.code) || FILE_SYSTEM_ERROR_CODES.has(error.code)) {
      return EXIT_CODES.usage;
    }
    return options.exitCodeOf?.(error) ?? EXIT_CODES.usage;
  }
  if (options.signal?.aborted) {
    write(`${prefix} cancelled`);
    return EXIT_CODES.interrupted;
  }
  // A folder that is read-only or unreadable, a link loop, a name too long: the user's situation.
  const access = findFileAccessError(error);
  if (access) {
    write(`${prefix} ${access.message}`);
    return EXIT_CODES.usage;
  }
  write(`${prefix} ${errorMessage(error)}`);
  write("(this is a bug; please report it, with the command you ran and this output)");
  if (options.verbose && error instanceof Error && error.stack) write(error.stack);
  return EXIT_CODES.internal;
}
