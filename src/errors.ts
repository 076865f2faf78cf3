/**
 * The base class of every error stepflow throws on purpose. Each subclass carries a stable `code`
 * so callers (and the CLI) can branch on it without parsing messages.
 *
 * @module
 */
import type { StepflowErrorCode } from "./error_codes.ts";

export type { StepflowErrorCode };

/**
 * The type a code argument must have: a literal code must be one of {@linkcode StepflowErrorCode}
 * (a typo does not compile); a code computed at run time (typed `string`) is taken as it is.
 */
export type KnownCode<C extends string> = string extends C ? C
  : C extends StepflowErrorCode ? C
  : StepflowErrorCode;

/**
 * An error with a stable machine-readable `code` and optional structured `details`. The codes are
 * listed per module in `error_codes.ts` and documented in docs/errors.md; a literal code that is
 * not listed does not compile.
 *
 * @example
 * ```ts
 * import { StepflowError } from "./errors.ts";
 * try {
 *   throw new StepflowError("PROMPT_NOT_FOUND", "Prompt file not found: /a/b.md");
 * } catch (e) {
 *   if (e instanceof StepflowError && e.code === "PROMPT_NOT_FOUND") console.log("missing prompt");
 * }
 * ```
 */
export class StepflowError<C extends string = StepflowErrorCode> extends Error {
  /** Stable identifier of the kind of failure, e.g. `"PROMPT_NOT_FOUND"`. */
  readonly code: C;
  /** Extra structured context (file, step id, line, …) for tools and logs. */
  readonly details?: Record<string, unknown>;

  /**
   * Creates an error with a stable code.
   *
   * @param code stable error code
   * @param message human-readable message that says what, where and how to fix
   * @param options `cause` and structured `details`
   */
  constructor(
    code: KnownCode<C>,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code as C;
    if (options.details) this.details = options.details;
  }
}

/**
 * Thrown when a caller passes invalid input at a public boundary (bad flag, bad option, bad file).
 * The CLI maps it to exit code 2.
 */
export class UsageError extends StepflowError {
  /**
   * Creates a usage error.
   *
   * @param message what was wrong and how to fix it
   * @param details structured context
   */
  constructor(message: string, details?: Record<string, unknown>) {
    super("USAGE", message, { details });
  }
}

/** Returns `error.message` for Error instances and `String(error)` for anything else. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
