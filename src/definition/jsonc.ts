import { parse, type ParseError, printParseErrorCode, visit } from "jsonc-parser";
import { StepflowError } from "../errors.ts";

/** Thrown when a JSON/JSONC file does not parse; the message names file, line and column. */
export class JsonParseError extends StepflowError {
  /**
   * Creates the error.
   *
   * @param file the file
   * @param line 1-based line
   * @param column 1-based column
   * @param what the parser's complaint
   */
  constructor(file: string, line: number, column: number, what: string) {
    super("JSON_INVALID", `${file}:${line}:${column}: invalid JSON: ${what}.`, {
      details: { file, line, column },
    });
  }
}

/**
 * Parses JSON or JSONC (comments and trailing commas allowed). Errors name `file:line:column`.
 *
 * @example
 * ```ts
 * import { parseJsonc } from "./jsonc.ts";
 * parseJsonc('{ "a": 1, // note\n }', "x.jsonc"); // { a: 1 }
 * ```
 */
export function parseJsonc(text: string, file: string): unknown {
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (errors.length > 0) {
    const first = errors[0];
    const { line, column } = lineColumn(text, first.offset);
    throw new JsonParseError(file, line, column, printParseErrorCode(first.error));
  }
  if (value === undefined) throw new JsonParseError(file, 1, 1, "the file is empty");
  if (text.includes("__proto__")) rejectProtoKeys(text, file);
  return value;
}

/**
 * A `"__proto__"` key would set the parsed object's prototype (and then vanish from every schema
 * check), so it is refused with its position. Other keys named like Object's members
 * (`constructor`, `toString`) are ordinary own keys.
 */
function rejectProtoKeys(text: string, file: string): void {
  let found: number | undefined;
  visit(text, {
    onObjectProperty(property, offset) {
      if (property === "__proto__" && found === undefined) found = offset;
    },
  }, { allowTrailingComma: true, disallowComments: false });
  if (found === undefined) return;
  const { line, column } = lineColumn(text, found);
  throw new JsonParseError(
    file,
    line,
    column,
    'the key "__proto__" is not allowed (it would replace the object\'s prototype); rename it',
  );
}

/** 1-based line and column of a character offset. */
export function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}
