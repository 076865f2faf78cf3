/**
 * Errors of the QPlan front end and runtime, and the caret rendering of a source position.
 *
 * @module
 */
import { StepflowError } from "../../errors.ts";

/**
 * A tokenizer or parser error: where (line, column), what was expected and what was found.
 * `render()` shows the offending line with a caret under the column.
 *
 * @example
 * ```ts
 * import { parseScript } from "../core/parser.ts";
 * import { QPlanSyntaxError } from "./errors.ts";
 * try {
 *   parseScript('step id="a" {\n  math add a=1 ->\n}');
 * } catch (e) {
 *   if (e instanceof QPlanSyntaxError) console.log(e.render());
 * }
 * ```
 */
export class QPlanSyntaxError extends StepflowError {
  /** 1-based line. */
  readonly line: number;
  /** 1-based column. */
  readonly column: number;
  /** What the parser expected there. */
  readonly expected: string;
  /** What it found. */
  readonly found: string;
  /** The script, kept for rendering. */
  readonly source: string;

  /**
   * Creates the syntax error.
   *
   * @param problem short description, e.g. `expected "}" to close the step block opened at line 2`
   * @param at position of the offending token
   * @param expected what would have been valid
   * @param found what was there
   * @param source the whole script
   */
  constructor(
    problem: string,
    at: { line: number; column: number },
    expected: string,
    found: string,
    source: string,
  ) {
    const said = /\bexpected\b/.test(problem) ? problem : `${problem}; expected ${expected}`;
    super("QPLAN_SYNTAX", `Syntax error at line ${at.line}, column ${at.column}: ${said}`, {
      details: { line: at.line, column: at.column, expected, found },
    });
    this.line = at.line;
    this.column = at.column;
    this.expected = expected;
    this.found = found;
    this.source = source;
  }

  /** The message followed by the offending line and a caret under the column. */
  render(): string {
    return `${this.message}\n${renderCaret(this.source, this.line, this.column)}`;
  }
}

/**
 * A failure while running a script: a module that failed, a `set` of an unknown variable, a list
 * that is not a list, … It names the line, the step and (for actions) the module.
 */
export class QPlanRuntimeError extends StepflowError {
  /** 1-based line of the statement that failed. */
  readonly line?: number;
  /** 1-based column. */
  readonly column?: number;
  /** The step the statement belongs to. */
  readonly stepId?: string;

  /**
   * Creates the runtime error; the location is appended to the message.
   *
   * @param message what went wrong (without the location; it is appended)
   * @param where line, column, step id and module of the failing statement
   * @param cause the underlying error
   */
  constructor(
    message: string,
    where: { line?: number; column?: number; stepId?: string; module?: string } = {},
    cause?: unknown,
  ) {
    const location = [
      where.line !== undefined ? `line ${where.line}` : undefined,
      where.stepId !== undefined ? `step '${where.stepId}'` : undefined,
    ].filter(Boolean).join(", ");
    super("QPLAN_RUNTIME", location ? `${message} (${location})` : message, {
      cause,
      details: { ...where },
    });
    this.line = where.line;
    this.column = where.column;
    this.stepId = where.stepId;
  }
}

/** How many characters of a long source line an error shows around its column. */
const CARET_WINDOW = 160;

/**
 * Renders `line` of `source` with a gutter and a caret under `column`:
 *
 * ```text
 *   2 |   math add a=1 ->
 *     |                  ^
 * ```
 */
export function renderCaret(source: string, line: number, column: number): string {
  const lines = source.split(/\r\n|\r|\n/);
  const text = lines[line - 1] ?? "";
  const gutter = String(line);
  const pad = " ".repeat(gutter.length);
  // A long line (a multi-megabyte token) shows a window of it around the column.
  const at = Math.max(0, Math.min(column - 1, text.length));
  const from = text.length > CARET_WINDOW ? Math.max(0, at - CARET_WINDOW / 2) : 0;
  const to = Math.min(text.length, from + CARET_WINDOW);
  const lead = from > 0 ? "…" : "";
  const shown = `${lead}${text.slice(from, to)}${to < text.length ? "…" : ""}`;
  // Columns count UTF-16 units; tabs are kept so the caret lines up with the text above it.
  const prefix = (lead ? " " : "") + text.slice(from, at).replace(/[^\t]/g, " ");
  return `  ${gutter} | ${shown}\n  ${pad} | ${prefix}^`;
}
