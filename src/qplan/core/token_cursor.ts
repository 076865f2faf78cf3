/**
 * The token cursor under the QPlan parser: looking ahead, consuming, the nesting limit, and the
 * syntax errors that name the line, the column, what was expected and what was found.
 *
 * @module
 */
import { QPlanSyntaxError } from "./errors.ts";
import type { Token } from "./tokenizer.ts";

/** Blocks and parentheses may nest this deep; deeper input is a syntax error, never a stack overflow. */
export const MAX_NESTING = 200;

/** Reads a token list; the parsers build on it. */
export class TokenCursor {
  #pos = 0;
  #depth = 0;
  readonly #tokens: Token[];
  /** The script's text (for error excerpts and the text of paths). */
  protected readonly source: string;

  /** A cursor at the first of `tokens` (which end with an `eof` token) of `source`. */
  constructor(source: string, tokens: Token[]) {
    this.source = source;
    this.#tokens = tokens;
  }

  peek(k = 0): Token {
    const i = this.#pos + k;
    return this.#tokens[i < this.#tokens.length ? i : this.#tokens.length - 1];
  }

  next(): Token {
    const t = this.#tokens[this.#pos];
    if (this.#pos < this.#tokens.length - 1) this.#pos++;
    return t;
  }

  protected prev(): Token {
    return this.#tokens[Math.max(0, this.#pos - 1)];
  }

  fail(problem: string, token: Token, expected: string): never {
    throw new QPlanSyntaxError(
      problem,
      { line: token.line, column: token.column },
      expected,
      describe(token),
      this.source,
    );
  }

  protected expected(expected: string, token: Token = this.peek()): never {
    this.fail(`expected ${expected}, found ${describe(token)}`, token, expected);
  }

  expectIdent(expected: string): Token {
    const t = this.peek();
    if (t.type !== "ident") this.expected(expected, t);
    return this.next();
  }

  protected isOp(value: string, k = 0): boolean {
    const t = this.peek(k);
    return t.type === "op" && t.value === value;
  }

  protected isKw(kw: string, k = 0): boolean {
    return this.peek(k).kw === kw;
  }

  protected expectOp(value: string, expected: string): Token {
    if (!this.isOp(value)) this.expected(expected);
    return this.next();
  }

  /** Fails unless every token has been consumed. */
  expectEnd(): void {
    const t = this.peek();
    if (t.type !== "eof") this.expected("the end of the expression", t);
  }

  protected enter(token: Token): void {
    if (++this.#depth > MAX_NESTING) {
      this.fail(
        `nesting is too deep (more than ${MAX_NESTING} levels)`,
        token,
        "fewer nested blocks or parentheses",
      );
    }
  }

  protected leave(): void {
    this.#depth--;
  }
}

/** How a token is named in error messages. */
export function describe(t: Token): string {
  switch (t.type) {
    case "eof":
      return "end of script";
    case "string": {
      const shown = t.value.length > 30 ? `${t.value.slice(0, 27)}...` : t.value;
      return `string "${shown}"`;
    }
    case "number":
      return `number ${t.value}`;
    case "ident":
      return t.kw ? `keyword '${t.value}'` : `'${t.value}'`;
    default:
      return `"${t.value}"`;
  }
}
