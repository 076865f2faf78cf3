/**
 * The QPlan tokenizer: identifiers (Unicode letters allowed), numbers, strings in `"…"` or `'…'`,
 * operators and punctuation. Comments (`//`, `#`, `/* … *\/`) and whitespace are skipped.
 *
 * @module
 */
import { spanEnd } from "../../unicode_span.ts";
import { QPlanSyntaxError } from "./errors.ts";

/** The kinds of token. */
export type TokenType = "ident" | "number" | "string" | "op" | "eof";

/** One token. */
export interface Token {
  /** The kind. */
  type: TokenType;
  /** Identifier text, the string's contents (quotes removed), the number's text or the operator. */
  value: string;
  /** For identifiers that are keywords: the keyword in lower case (keywords are case-insensitive). */
  kw?: string;
  /** 1-based line. */
  line: number;
  /** 1-based column (UTF-16 units). */
  column: number;
  /** Offset of the first character in the source. */
  offset: number;
  /** Offset just past the last character. */
  end: number;
  /** Line of the last character, for strings that span lines. */
  endLine?: number;
}

/** Words with a meaning of their own in QPlan, compared case-insensitively. */
export const KEYWORDS: ReadonlySet<string> = new Set([
  "step",
  "jump",
  "if",
  "else",
  "while",
  "each",
  "in",
  "parallel",
  "break",
  "continue",
  "stop",
  "skip",
  "return",
  "set",
  "var",
  "and",
  "or",
  "not",
  "exists",
  "not_exists",
  "true",
  "false",
  "null",
  "using",
]);

/** The identifier rule of QPlan: a Unicode letter or `_`, then letters, digits or `_`. */
export const IDENTIFIER_PATTERN: RegExp = /^[\p{L}_][\p{L}\p{N}_]*$/u;

const NUMBER_AT = /\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const IDENT_START_AT = /[\p{L}_]/uy;

/**
 * The end of the identifier starting at `start` in `text`, or `start` when none starts there.
 * Scanned in bounded chunks (`spanEnd`): a 6.5 MB name must not overflow the regexp stack.
 */
export function identifierEnd(text: string, start: number): number {
  IDENT_START_AT.lastIndex = start;
  if (!IDENT_START_AT.test(text)) return start;
  return spanEnd(text, IDENT_START_AT.lastIndex, "[\\p{L}\\p{N}_]");
}

/** True when `text` is a QPlan identifier ({@linkcode IDENTIFIER_PATTERN}), at any length. */
export function isIdentifier(text: string): boolean {
  return text.length > 0 && identifierEnd(text, 0) === text.length;
}
const TWO_CHAR_OPS = new Set(["->", "==", "!=", "<=", ">="]);
const ONE_CHAR_OPS = new Set([
  "=",
  "<",
  ">",
  "+",
  "-",
  "*",
  "/",
  "(",
  ")",
  "{",
  "}",
  "[",
  "]",
  ",",
  ".",
  ":",
  "@",
]);

/**
 * Splits a script into tokens, ending with an `eof` token.
 *
 * Strings have no escape sequences except a backslash before the string's own quote character
 * (`"jump=\"cleanup\""`, as QPlan examples write `onError` values); every other backslash is kept.
 *
 * Long because: one pass over the characters, one case per token kind. Every case moves the
 * same position, line and line-start counters, kept in locals on this hot path (every script is
 * tokenized on load); split into functions they would have to travel on an object or in and out
 * of each call.
 *
 * @throws QPlanSyntaxError on an unterminated string or block comment, or a character QPlan does not use
 *
 * @example
 * ```ts
 * import { tokenize } from "./tokenizer.ts";
 * const tokens = tokenize('math add a=1 -> x');
 * console.log(tokens.map((t) => t.value)); // ["math", "add", "a", "=", "1", "->", "x", ""]
 * ```
 */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  const n = source.length;
  let i = 0;
  let line = 1;
  let lineStart = 0;

  const fail = (
    problem: string,
    at: number,
    atLine: number,
    atLineStart: number,
    expected: string,
    found: string,
  ) => {
    throw new QPlanSyntaxError(
      problem,
      { line: atLine, column: at - atLineStart + 1 },
      expected,
      found,
      source,
    );
  };

  while (i < n) {
    const c = source.charCodeAt(i);
    // Newline
    if (c === 10) {
      i++;
      line++;
      lineStart = i;
      continue;
    }
    // Whitespace (space, tab, CR, form feed, vertical tab, NBSP, BOM)
    if (c === 32 || c === 9 || c === 13 || c === 12 || c === 11 || c === 0xa0 || c === 0xfeff) {
      i++;
      continue;
    }
    // # comment
    if (c === 35) {
      while (i < n && source.charCodeAt(i) !== 10) i++;
      continue;
    }
    if (c === 47) {
      const next = source.charCodeAt(i + 1);
      if (next === 47) {
        while (i < n && source.charCodeAt(i) !== 10) i++;
        continue;
      }
      if (next === 42) {
        const startLine = line;
        const startLineStart = lineStart;
        const start = i;
        i += 2;
        let closed = false;
        while (i < n) {
          const ch = source.charCodeAt(i);
          if (ch === 42 && source.charCodeAt(i + 1) === 47) {
            i += 2;
            closed = true;
            break;
          }
          i++;
          if (ch === 10) {
            line++;
            lineStart = i;
          }
        }
        if (!closed) {
          fail(
            "unterminated block comment",
            start,
            startLine,
            startLineStart,
            '"*/" to close the comment',
            "end of script",
          );
        }
        continue;
      }
    }
    const column = i - lineStart + 1;
    // `@key value` at the start of a line: an unquoted value runs to the end of the line.
    if (c === 64 && source.slice(lineStart, i).trim() === "") {
      const keyEnd = identifierEnd(source, i + 1);
      if (keyEnd > i + 1) {
        const key = [source.slice(i + 1, keyEnd)];
        tokens.push({ type: "op", value: "@", line, column, offset: i, end: i + 1 });
        tokens.push({
          type: "ident",
          value: key[0],
          line,
          column: column + 1,
          offset: i + 1,
          end: keyEnd,
        });
        let j = keyEnd;
        while (j < n && (source.charCodeAt(j) === 32 || source.charCodeAt(j) === 9)) j++;
        const q = source.charCodeAt(j);
        if (j < n && q !== 10 && q !== 13 && q !== 34 && q !== 39) {
          let k = j;
          while (k < n && source.charCodeAt(k) !== 10) k++;
          const value = source.slice(j, k).trim();
          tokens.push({
            type: "string",
            value,
            line,
            column: j - lineStart + 1,
            offset: j,
            end: j + value.length,
          });
          i = k;
        } else {
          i = keyEnd;
        }
        continue;
      }
    }
    // Strings
    if (c === 34 || c === 39) {
      const startLine = line;
      const start = i;
      let value = "";
      let segment = i + 1;
      i++;
      let closed = false;
      while (i < n) {
        const ch = source.charCodeAt(i);
        if (ch === c) {
          value += source.slice(segment, i);
          i++;
          closed = true;
          break;
        }
        if (ch === 92 && source.charCodeAt(i + 1) === c) {
          value += source.slice(segment, i) + source[i + 1];
          i += 2;
          segment = i;
          continue;
        }
        i++;
        if (ch === 10) {
          line++;
          lineStart = i;
        }
      }
      if (!closed) {
        const quote = c === 34 ? '"' : "'";
        fail(
          "unterminated string",
          start,
          startLine,
          start - column + 1,
          `a closing ${quote}`,
          "end of script",
        );
      }
      const token: Token = {
        type: "string",
        value,
        line: startLine,
        column,
        offset: start,
        end: i,
      };
      if (line !== startLine) token.endLine = line;
      tokens.push(token);
      continue;
    }
    // Numbers
    if (c >= 48 && c <= 57) {
      NUMBER_AT.lastIndex = i;
      const m = NUMBER_AT.exec(source)!;
      const end = i + m[0].length;
      tokens.push({ type: "number", value: m[0], line, column, offset: i, end });
      i = end;
      continue;
    }
    // Identifiers and keywords
    if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c > 127) {
      const end = identifierEnd(source, i);
      if (end > i) {
        const word = source.slice(i, end);
        const lower = word.toLowerCase();
        const token: Token = { type: "ident", value: word, line, column, offset: i, end };
        if (KEYWORDS.has(lower)) token.kw = lower;
        tokens.push(token);
        i = end;
        continue;
      }
    }
    // Operators
    if (c === 46 && source.charCodeAt(i + 1) === 46 && source.charCodeAt(i + 2) === 46) {
      tokens.push({ type: "op", value: "...", line, column, offset: i, end: i + 3 });
      i += 3;
      continue;
    }
    const two = source.slice(i, i + 2);
    if (TWO_CHAR_OPS.has(two)) {
      tokens.push({ type: "op", value: two, line, column, offset: i, end: i + 2 });
      i += 2;
      continue;
    }
    const one = source[i];
    if (ONE_CHAR_OPS.has(one)) {
      tokens.push({ type: "op", value: one, line, column, offset: i, end: i + 1 });
      i++;
      continue;
    }
    const cp = source.codePointAt(i)!;
    const shown = String.fromCodePoint(cp);
    fail(
      `unexpected character '${shown}'`,
      i,
      line,
      lineStart,
      one === "!" ? '"!=" (QPlan writes negation as "not")' : "a name, number, string or operator",
      `'${shown}'`,
    );
  }
  tokens.push({ type: "eof", value: "", line, column: i - lineStart + 1, offset: n, end: n });
  return tokens;
}
