import { StepflowError } from "../errors.ts";

/**
 * A PlanSpec text that cannot be parsed. The message names the 1-based line and quotes its text;
 * `line` and `text` are also available as fields (and in `details`).
 *
 * @example
 * ```ts
 * import { parsePlan, PlanParseError } from "./mod.ts";
 * try {
 *   parsePlan("Goal: g\n## Steps\n1. Do it\n");
 * } catch (e) {
 *   if (e instanceof PlanParseError) console.log(e.line); // 3
 * }
 * ```
 */
export class PlanParseError extends StepflowError {
  /** 1-based line number. */
  readonly line: number;
  /** The offending line, as written. */
  readonly text: string;

  /**
   * Creates the error; the message is `line N: <reason>: "<text>"`.
   *
   * @param line 1-based line number
   * @param text the offending line
   * @param reason what is wrong and how to fix it
   */
  constructor(line: number, text: string, reason: string) {
    super("PLANSPEC_PARSE", `line ${line}: ${reason}: ${JSON.stringify(text.trim())}`, {
      details: { line, text },
    });
    this.line = line;
    this.text = text;
  }
}

/**
 * A plan value that the text format cannot express (e.g. a description containing `|` or a line
 * break, or a step id that does not match its position), thrown by `serializePlan` instead of
 * writing a file that would read back differently.
 */
export class PlanSerializeError extends StepflowError {
  /**
   * Creates the error.
   *
   * @param message what cannot be written and how to fix it
   * @param stepId the step concerned, when there is one
   */
  constructor(message: string, stepId?: string) {
    super("PLANSPEC_UNREPRESENTABLE", message, stepId ? { details: { stepId } } : {});
  }
}
