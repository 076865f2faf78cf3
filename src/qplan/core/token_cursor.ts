/**
 * The token cursor under the QPlan parser: looking ahead, consuming, the nesting limit, and the
 * syntax errors that name the line, the column, what was expected and what was found.
 *
 * @module
 */
import { QPlanSyntaxError } from "./errors.ts";
import { type Token, Tokenizer } from "./tokenizer.ts";

/** Blocks and parentheses may nest this deep; deeper input is a syntax error, never a stack overflow. */
export const MAX_NESTING = 200;

/**
 * Reads a script's tokens as the parsers ask for them, a few ahead at most (the tokenizer makes
 * them on demand; see {@linkcode Tokenizer}).
 */
export class TokenCursor {
  #depth = 0;
  readonly #tokenizer: Tokenizer;
  /** The token at the cursor (what `peek()` returns; most looks are at it). */
  #current: Token;
  /** Tokens read after `#current`, for looks further ahead. */
  readonly #ahead: Token[] = [];
  /** The token consumed last. */
  #prev: Token | undefined;
  /** The script's text (for error excerpts and the text of paths). */
  protected readonly source: string;

  /** A cursor at the first token of `source`. */
  constructor(source: string) {
    this.source = source;
    this.#tokenizer = new Tokenizer(source);
    this.#current = this.#tokenizer.next();
  }

  peek(k = 0): Token {
    if (k === 0) return this.#current;
    const ahead = this.#ahead;
    while (ahead.length < k) {
      // Past the end every look is the `eof` token.
      const last = ahead.length > 0 ? ahead[ahead.length - 1] : this.#current;
      if (last.type === "eof") return last;
      ahead.push(this.#tokenizer.next());
    }
    return ahead[k - 1];
  }

  next(): Token {
    const t = this.#current;
    if (t.type !== "eof") {
      this.#prev = t;
      this.#current = this.#ahead.length > 0 ? this.#ahead.shift()! : this.#tokenizer.next();
    }
    return t;
  }

  /**
   * At a number in a list, reads the plain numbers that follow it at once (see
   * {@linkcode Tokenizer.numberRun}), calling `item` for each; the cursor is then at the `]` or at
   * the token after the last `,` read. Returns false when there was no such run (nothing read).
   */
  protected numberRun(item: (value: number, line: number, column: number) => void): boolean {
    const first = this.#current;
    if (first.type !== "number" || this.#ahead.length > 0) return false;
    const last = this.#tokenizer.numberRun(first, item);
    if (last === undefined) return false;
    this.#prev = last;
    this.#current = this.#tokenizer.next();
    return true;
  }

  protected prev(): Token {
    return this.#prev ?? this.#current;
  }

  /**
   * Runs `parse`; when it fails, reads the rest of the script first, so that a lexical error
   * anywhere in it (an unterminated string, a character QPlan does not use) is reported before a
   * syntax error, as when the whole script was split into tokens before parsing.
   */
  parseAll<T>(parse: () => T): T {
    try {
      return parse();
    } catch (error) {
      this.#tokenizer.drain();
      throw error;
    }
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
