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
/**
 * The operator at `i` (`c` is its first character), or undefined when none starts there. A
 * `switch` on the character instead of slicing two characters and looking them up in sets: a
 * script with a long literal list (`var [1, 2, …] -> xs`) is mostly numbers and commas, and the
 * slice and the two lookups were most of reading each comma.
 */
function operatorAt(source: string, i: number, c: number): string | undefined {
  const next = source.charCodeAt(i + 1);
  switch (c) {
    case 44:
      return ",";
    case 40:
      return "(";
    case 41:
      return ")";
    case 91:
      return "[";
    case 93:
      return "]";
    case 123:
      return "{";
    case 125:
      return "}";
    case 45:
      return next === 62 ? "->" : "-";
    case 61:
      return next === 61 ? "==" : "=";
    case 33:
      return next === 61 ? "!=" : undefined;
    case 60:
      return next === 61 ? "<=" : "<";
    case 62:
      return next === 61 ? ">=" : ">";
    case 43:
      return "+";
    case 42:
      return "*";
    case 47:
      return "/";
    case 46:
      return next === 46 && source.charCodeAt(i + 2) === 46 ? "..." : ".";
    case 58:
      return ":";
    case 64:
      return "@";
    default:
      return undefined;
  }
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * The end of the number starting at `i` (a digit): `\d+(\.\d+)?([eE][+-]?\d+)?`. Scanned by hand
 * rather than with a sticky regexp: no match array per number.
 */
function numberEnd(source: string, i: number): number {
  let end = i + 1;
  while (isDigit(source.charCodeAt(end))) end++;
  if (source.charCodeAt(end) === 46 && isDigit(source.charCodeAt(end + 1))) {
    end += 2;
    while (isDigit(source.charCodeAt(end))) end++;
  }
  const e = source.charCodeAt(end);
  if (e === 101 || e === 69) {
    let k = end + 1;
    const sign = source.charCodeAt(k);
    if (sign === 43 || sign === 45) k++;
    if (isDigit(source.charCodeAt(k))) {
      k++;
      while (isDigit(source.charCodeAt(k))) k++;
      end = k;
    }
  }
  return end;
}

/** The end of the blanks (spaces, tabs, line breaks) at `i`. */
function blanksEnd(source: string, i: number): number {
  for (;;) {
    const c = source.charCodeAt(i);
    if (c === 32 || c === 10 || c === 9 || c === 13) i++;
    else return i;
  }
}

/** The value of the number `source[start, end)`: digits alone are summed, without a slice. */
function numberValue(source: string, start: number, end: number): number {
  if (end - start > 15) return Number(source.slice(start, end));
  let value = 0;
  for (let i = start; i < end; i++) {
    const d = source.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return Number(source.slice(start, end));
    value = value * 10 + d;
  }
  return value;
}

/**
 * Splits a script into tokens, ending with an `eof` token (every token of a {@linkcode Tokenizer}).
 *
 * Strings have no escape sequences except a backslash before the string's own quote character
 * (`"jump=\"cleanup\""`, as QPlan examples write `onError` values); every other backslash is kept.
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
  const tokenizer = new Tokenizer(source);
  const tokens: Token[] = [];
  for (;;) {
    const token = tokenizer.next();
    tokens.push(token);
    if (token.type === "eof") return tokens;
  }
}

/**
 * Reads a script's tokens one at a time, as the parser asks for them. The parser holds a few
 * tokens at a time instead of the whole list: a token lives only until the parser has read it, so
 * the garbage collector never copies it — with the list (two tokens per item of
 * `var [1, 2, …] -> xs`), keeping a million-item script's tokens alive cost ten times reading them.
 *
 * @example
 * ```ts
 * import { Tokenizer } from "./tokenizer.ts";
 * const tokenizer = new Tokenizer("x -> y");
 * console.log(tokenizer.next().value, tokenizer.next().value); // "x" "->"
 * ```
 */
export class Tokenizer {
  readonly #source: string;
  #i = 0;
  #line = 1;
  #lineStart = 0;
  /** Tokens read but not returned yet (`@key value` makes three at once). */
  readonly #queued: Token[] = [];
  /** The `eof` token, once the end is reached (returned by every later call). */
  #eof: Token | undefined;

  /** A tokenizer at the start of `source`. */
  constructor(source: string) {
    this.#source = source;
  }

  /**
   * Reads on, without making their tokens, the plain numbers of a list that follow `first` (the
   * number token returned last): `first, 2, 3.5, …`. Calls `item` with the value, line and column
   * of every number a `,` or `]` follows (`first` included) and stops before the first thing that
   * is not such a number — a `]`, a sign, a comment, an expression — so that `next()` reads on from
   * there as if every token before it had been returned. Returns the last token read (a number
   * before `]`, or the last `,`), or undefined when `first` is not followed by `,` or `]` (or when
   * the tokenizer has read past `first`); then nothing was read.
   *
   * A literal list (`var [1, 2, …] -> xs`) is most of such a script: the two tokens of each item
   * were most of reading it.
   */
  numberRun(
    first: Token,
    item: (value: number, line: number, column: number) => void,
  ): Token | undefined {
    if (this.#i !== first.end || this.#queued.length > 0 || this.#eof !== undefined) {
      return undefined;
    }
    const source = this.#source;
    let line = this.#line;
    let lineStart = this.#lineStart;
    let start = first.offset;
    let end = first.end;
    let value = Number(first.value);
    let last: Token | undefined;
    for (;;) {
      const numberLine = line;
      const numberColumn = start - lineStart + 1;
      let i = blanksEnd(source, end);
      for (let k = end; k < i; k++) {
        if (source.charCodeAt(k) === 10) {
          line++;
          lineStart = k + 1;
        }
      }
      const c = source.charCodeAt(i);
      if (c !== 44 && c !== 93) break;
      item(value, numberLine, numberColumn);
      if (c === 93) {
        last = {
          type: "number",
          value: source.slice(start, end),
          line: numberLine,
          column: numberColumn,
          offset: start,
          end,
        };
        this.#save(i, line, lineStart);
        break;
      }
      last = { type: "op", value: ",", line, column: i - lineStart + 1, offset: i, end: i + 1 };
      this.#save(i + 1, line, lineStart);
      i = blanksEnd(source, i + 1);
      for (let k = last.end; k < i; k++) {
        if (source.charCodeAt(k) === 10) {
          line++;
          lineStart = k + 1;
        }
      }
      if (!isDigit(source.charCodeAt(i))) break;
      start = i;
      end = numberEnd(source, i);
      value = numberValue(source, start, end);
    }
    return last;
  }

  #save(i: number, line: number, lineStart: number): void {
    this.#i = i;
    this.#line = line;
    this.#lineStart = lineStart;
  }

  /** Reads the rest of the script, for its lexical errors: throws the first one. */
  drain(): void {
    while (this.next().type !== "eof");
  }

  /**
   * The next token: `eof` at the end, and on every call after it.
   *
   * Long because: one pass over the characters, one case per token kind. Every case moves the
   * same position, line and line-start counters, kept in locals on this hot path (every script is
   * tokenized on load); split into functions they would have to travel on an object or in and out
   * of each call.
   *
   * @throws QPlanSyntaxError on an unterminated string or block comment, or a character QPlan does not use
   */
  next(): Token {
    if (this.#queued.length > 0) return this.#queued.shift()!;
    if (this.#eof !== undefined) return this.#eof;
    const source = this.#source;
    const n = source.length;
    let i = this.#i;
    let line = this.#line;
    let lineStart = this.#lineStart;
    let token: Token | undefined;

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
            lexError(
              source,
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
          token = { type: "op", value: "@", line, column, offset: i, end: i + 1 };
          this.#queued.push({
            type: "ident",
            value: source.slice(i + 1, keyEnd),
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
            this.#queued.push({
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
          break;
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
          lexError(
            source,
            "unterminated string",
            start,
            startLine,
            start - column + 1,
            `a closing ${quote}`,
            "end of script",
          );
        }
        token = { type: "string", value, line: startLine, column, offset: start, end: i };
        if (line !== startLine) token.endLine = line;
        break;
      }
      // Numbers
      if (c >= 48 && c <= 57) {
        const end = numberEnd(source, i);
        token = { type: "number", value: source.slice(i, end), line, column, offset: i, end };
        i = end;
        break;
      }
      // Identifiers and keywords
      if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c > 127) {
        const end = identifierEnd(source, i);
        if (end > i) {
          const word = source.slice(i, end);
          const lower = word.toLowerCase();
          token = { type: "ident", value: word, line, column, offset: i, end };
          if (KEYWORDS.has(lower)) token.kw = lower;
          i = end;
          break;
        }
      }
      // Operators
      const op = operatorAt(source, i, c);
      if (op !== undefined) {
        const end = i + op.length;
        token = { type: "op", value: op, line, column, offset: i, end };
        i = end;
        break;
      }
      const cp = source.codePointAt(i)!;
      const shown = String.fromCodePoint(cp);
      lexError(
        source,
        `unexpected character '${shown}'`,
        i,
        line,
        lineStart,
        c === 33 ? '"!=" (QPlan writes negation as "not")' : "a name, number, string or operator",
        `'${shown}'`,
      );
    }
    this.#i = i;
    this.#line = line;
    this.#lineStart = lineStart;
    if (token !== undefined) return token;
    return this.#eof = {
      type: "eof",
      value: "",
      line,
      column: i - lineStart + 1,
      offset: n,
      end: n,
    };
  }
}

function lexError(
  source: string,
  problem: string,
  at: number,
  atLine: number,
  atLineStart: number,
  expected: string,
  found: string,
): never {
  throw new QPlanSyntaxError(
    problem,
    { line: atLine, column: at - atLineStart + 1 },
    expected,
    found,
    source,
  );
}
