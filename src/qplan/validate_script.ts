/**
 * `validateScript`: parse + semantic validation in one call, never throwing for a bad script,
 * and `renderIssues`, which shows each issue under its line with a caret.
 *
 * @module
 */
import type { QPlanToolRegistry } from "./core/tool_types.ts";
import type { Script } from "./core/ast.ts";
import { QPlanSyntaxError, renderCaret } from "./core/errors.ts";
import { parseScript } from "./core/parser.ts";
import { validateAst, type ValidationIssue } from "./core/validator.ts";
import type { StepResolution } from "./step/step_types.ts";

/** Options of {@linkcode validateScript}. */
export interface ValidateScriptOptions {
  /** Params the run will receive (names, or the params object itself): they count as defined. */
  params?: Iterable<string> | Record<string, unknown>;
  /** When given, module names are checked against it. */
  registry?: QPlanToolRegistry;
}

/** The outcome of {@linkcode validateScript}. */
export interface ScriptValidation {
  /** True when there is no error (warnings allowed). */
  ok: boolean;
  /** Every error and warning, in script order (a syntax error is the only issue when there is one). */
  issues: ValidationIssue[];
  /** The AST, when the script parsed. */
  script?: Script;
  /** The step tables, when the script parsed. */
  resolution?: StepResolution;
}

/**
 * Parses and validates a script. Syntax errors come back as an issue with code `syntax` (line,
 * column, and what was expected in `hint`); semantic problems as QPlan's validation messages.
 *
 * @example
 * ```ts
 * import { validateScript } from "./validate_script.ts";
 * const v = validateScript('step id="a" { jump to="nowhere" }');
 * console.log(v.ok, v.issues[0].message); // false "jump target 'nowhere' not found"
 * ```
 */
export function validateScript(
  source: string,
  options: ValidateScriptOptions = {},
): ScriptValidation {
  let script: Script;
  try {
    script = parseScript(source);
  } catch (error) {
    if (error instanceof QPlanSyntaxError) {
      const issue = syntaxIssue(error);
      issue.message = clipMessage(issue.message);
      return { ok: false, issues: [issue] };
    }
    throw error;
  }
  const params = options.params === undefined
    ? []
    : isIterable(options.params)
    ? [...options.params]
    : Object.keys(options.params);
  const { issues, resolution } = validateAst(script, { params, registry: options.registry });
  for (const issue of issues) issue.message = clipMessage(issue.message);
  return { ok: !issues.some((i) => i.severity === "error"), issues, script, resolution };
}

/**
 * Messages quote names; a multi-megabyte name must not make a multi-megabyte message. Long messages
 * keep their start and end around a note of what was left out.
 */
function clipMessage(message: string, max = 400): string {
  if (message.length <= max) return message;
  const head = message.slice(0, 240);
  const tail = message.slice(-120);
  return `${head}… (${message.length - 360} characters left out) …${tail}`;
}

/** Turns a syntax error into a validation issue. */
export function syntaxIssue(error: QPlanSyntaxError): ValidationIssue {
  return {
    severity: "error",
    code: "syntax",
    message: error.message,
    line: error.line,
    column: error.column,
    hint: `expected ${error.expected}`,
  };
}

/**
 * Renders issues for people: each as `error|warning line L, column C: message`, the source line
 * with a caret, and the hint.
 *
 * @example
 * ```ts
 * import { renderIssues, validateScript } from "./validate_script.ts";
 * const source = 'step id="a" {\n  set total = 1\n}';
 * console.log(renderIssues(source, validateScript(source).issues));
 * ```
 */
export function renderIssues(source: string, issues: readonly ValidationIssue[]): string {
  return issues.map((issue) => {
    const head = issue.code === "syntax"
      ? `error: ${issue.message}`
      : `${issue.severity}${
        issue.line !== undefined
          ? ` at line ${issue.line}${issue.column !== undefined ? `, column ${issue.column}` : ""}`
          : ""
      }: ${issue.message}`;
    const lines = [head];
    if (issue.line !== undefined) lines.push(renderCaret(source, issue.line, issue.column ?? 1));
    if (issue.hint && issue.code !== "syntax") lines.push(`  hint: ${issue.hint}`);
    return lines.join("\n");
  }).join("\n\n");
}

function isIterable(v: unknown): v is Iterable<string> {
  return typeof (v as Iterable<string>)[Symbol.iterator] === "function";
}
