/**
 * The QPlan expression grammar, one method per precedence level: `or`, `and`, `not`,
 * comparisons (and `exists`), `+ -`, `* /`, unary signs, then values — numbers, strings,
 * `true`/`false`/`null`, paths (`a.b[0]`), `[lists]`, `{objects}` and `(groups)`.
 *
 * @module
 */
import type { BinaryOperator, Expr, PathExpr, PathSegment } from "./ast.ts";
import { TokenCursor } from "./token_cursor.ts";
import type { Token } from "./tokenizer.ts";

/** The words that are values: `true`, `false`, `null`. */
export const LITERAL_WORDS: ReadonlySet<string> = new Set(["true", "false", "null"]);

/** One statement may hold this many binary operators (longer chains would overflow the stack when evaluated). */
export const MAX_OPERATORS = 1000;

const COMPARISON: ReadonlySet<string> = new Set(["==", "!=", "<", ">", "<=", ">="]);

/** Parses expressions; the statement parser builds on it. */
export class ExpressionParser extends TokenCursor {
  /** Binary operators in the current statement (the statement parser resets it). */
  protected operators = 0;
  /** True while parsing a condition outside brackets: there "{" opens the block, not an object. */
  #braceOpensBlock = false;

  #binary(op: string, left: Expr, right: Expr, at: Token): Expr {
    if (++this.operators > MAX_OPERATORS) {
      this.fail(
        `the statement is too long (more than ${MAX_OPERATORS} operators)`,
        at,
        "a shorter expression (compute parts into variables with var … -> name)",
      );
    }
    return binary(op, left, right, at);
  }

  /** Parses one expression at the cursor. */
  expression(): Expr {
    return this.#or();
  }

  #or(): Expr {
    let left = this.#and();
    while (this.isKw("or")) {
      const op = this.next();
      left = this.#binary("or", left, this.#and(), op);
    }
    return left;
  }

  #and(): Expr {
    let left = this.#not();
    while (this.isKw("and")) {
      const op = this.next();
      left = this.#binary("and", left, this.#not(), op);
    }
    return left;
  }

  #not(): Expr {
    if (this.isKw("not")) {
      const op = this.next();
      this.enter(op);
      const operand = this.#not();
      this.leave();
      return { kind: "unary", op: "not", operand, line: op.line, column: op.column };
    }
    return this.#comparison();
  }

  #comparison(): Expr {
    const left = this.#additive();
    const t = this.peek();
    if (t.kw === "exists" || t.kw === "not_exists") {
      this.next();
      return {
        kind: "exists",
        negated: t.kw === "not_exists",
        operand: left,
        line: left.line,
        column: left.column,
      };
    }
    if (t.type === "op" && COMPARISON.has(t.value)) {
      this.next();
      return this.#binary(t.value, left, this.#additive(), t);
    }
    if (t.type === "op" && t.value === "=") {
      this.fail('"=" assigns; compare with "=="', t, '"==" (or another comparison operator)');
    }
    return left;
  }

  #additive(): Expr {
    let left = this.#multiplicative();
    for (;;) {
      const t = this.peek();
      if (t.type !== "op" || (t.value !== "+" && t.value !== "-")) return left;
      this.next();
      left = this.#binary(t.value, left, this.#multiplicative(), t);
    }
  }

  #multiplicative(): Expr {
    let left = this.unary();
    for (;;) {
      const t = this.peek();
      if (t.type !== "op" || (t.value !== "*" && t.value !== "/")) return left;
      this.next();
      left = this.#binary(t.value, left, this.unary(), t);
    }
  }

  /** A value with its unary signs (binds tighter than any binary operator). */
  protected unary(): Expr {
    const t = this.peek();
    if (t.type === "op" && (t.value === "-" || t.value === "+")) {
      this.next();
      this.enter(t);
      const operand = this.unary();
      this.leave();
      if (t.value === "+") return operand;
      if (operand.kind === "literal" && typeof operand.value === "number") {
        return { kind: "literal", value: -operand.value, line: t.line, column: t.column };
      }
      return { kind: "unary", op: "-", operand, line: t.line, column: t.column };
    }
    return this.#primary();
  }

  #primary(): Expr {
    const t = this.peek();
    switch (t.type) {
      case "number":
        this.next();
        return { kind: "literal", value: Number(t.value), line: t.line, column: t.column };
      case "string":
        this.next();
        return { kind: "literal", value: t.value, line: t.line, column: t.column };
      case "ident":
        if (t.kw && LITERAL_WORDS.has(t.kw)) {
          this.next();
          return literalWord(t);
        }
        if (t.kw) {
          this.expected("a value (number, string, variable, [list], {object} or (expression))", t);
        }
        return this.path();
      case "op":
        if (t.value === "(") {
          this.next();
          this.enter(t);
          const inner = this.#nested(() => this.expression());
          this.leave();
          this.expectOp(")", `")" to close the "(" at line ${t.line}, column ${t.column}`);
          return inner;
        }
        if (t.value === "[") return this.#nested(() => this.#array());
        if (t.value === "{" && !this.#braceOpensBlock) return this.#nested(() => this.#object());
        break;
    }
    this.expected("a value (number, string, variable, [list], {object} or (expression))", t);
  }

  /** A path (`name.field[index]`) at the cursor. */
  protected path(): PathExpr {
    const root = this.next();
    const segments: PathSegment[] = [];
    let text = root.value;
    for (;;) {
      if (this.isOp(".") && this.peek(1).type === "ident") {
        const dot = this.next();
        const name = this.next();
        segments.push({ kind: "prop", name: name.value, line: dot.line, column: dot.column });
        text += `.${name.value}`;
        continue;
      }
      if (this.isOp("[") && this.peek().line === this.prev().line) {
        const open = this.next();
        this.enter(open);
        const index = this.#nested(() => this.expression());
        this.leave();
        const close = this.expectOp(
          "]",
          `"]" to close the "[" at line ${open.line}, column ${open.column}`,
        );
        segments.push({ kind: "index", index, line: open.line, column: open.column });
        text += this.source.slice(open.offset, close.end);
        continue;
      }
      break;
    }
    return { kind: "path", root: root.value, segments, text, line: root.line, column: root.column };
  }

  #array(): Expr {
    const open = this.next();
    this.enter(open);
    const items: Expr[] = [];
    const literal = (value: number, line: number, column: number) =>
      void items.push({ kind: "literal", value, line, column });
    while (!this.isOp("]")) {
      if (this.peek().type === "eof") {
        this.expected(`"]" to close the list opened at line ${open.line}, column ${open.column}`);
      }
      // A run of plain numbers is read at once; the cursor is then at `]` or after a `,`.
      if (this.numberRun(literal)) continue;
      items.push(this.#listItem());
      if (this.isOp(",")) {
        this.next();
        continue;
      }
      if (!this.isOp("]")) {
        this.expected(`"," or "]" in the list opened at line ${open.line}, column ${open.column}`);
      }
    }
    this.next();
    this.leave();
    return { kind: "array", items, line: open.line, column: open.column };
  }

  /**
   * One item of a list. A number or string followed by `,` or `]` is its literal at once: the
   * precedence levels would return the same node after eight calls, and a literal list (`var [1,
   * 2, …] -> xs`) is all such items.
   */
  #listItem(): Expr {
    const t = this.peek();
    if (t.type === "number" || t.type === "string") {
      const after = this.peek(1);
      if (after.type === "op" && (after.value === "," || after.value === "]")) {
        this.next();
        const value = t.type === "number" ? Number(t.value) : t.value;
        return { kind: "literal", value, line: t.line, column: t.column };
      }
    }
    return this.expression();
  }

  #object(): Expr {
    const open = this.next();
    this.enter(open);
    const entries: { key: string; value: Expr }[] = [];
    while (!this.isOp("}")) {
      const k = this.peek();
      if (k.type !== "string" && k.type !== "ident" && k.type !== "number") {
        this.expected(
          `a key ("name": value) or "}" in the object opened at line ${open.line}, column ${open.column}`,
          k,
        );
      }
      this.next();
      this.expectOp(":", `":" after the key "${k.value}"`);
      entries.push({ key: k.value, value: this.expression() });
      if (this.isOp(",")) {
        this.next();
        continue;
      }
      if (!this.isOp("}")) {
        this.expected(
          `"," or "}" in the object opened at line ${open.line}, column ${open.column}`,
        );
      }
    }
    this.next();
    this.leave();
    return { kind: "object", entries, line: open.line, column: open.column };
  }

  /** Parses `{ … }` after `if` / `while`: there "{" opens the block, not an object. */
  protected expressionBeforeBlock(): Expr {
    const saved = this.#braceOpensBlock;
    this.#braceOpensBlock = true;
    try {
      return this.expression();
    } finally {
      this.#braceOpensBlock = saved;
    }
  }

  /** Parses inside brackets, where "{" opens an object again. */
  #nested<T>(parse: () => T): T {
    const saved = this.#braceOpensBlock;
    this.#braceOpensBlock = false;
    try {
      return parse();
    } finally {
      this.#braceOpensBlock = saved;
    }
  }
}

function binary(op: string, left: Expr, right: Expr, at: Token): Expr {
  return {
    kind: "binary",
    op: op as BinaryOperator,
    left,
    right,
    line: at.line,
    column: at.column,
  };
}

/** The literal of `true`, `false` or `null`. */
export function literalWord(t: Token): Expr {
  const value = t.kw === "true" ? true : t.kw === "false" ? false : null;
  return { kind: "literal", value, line: t.line, column: t.column };
}

/** A path of one name (`name`, no segments). */
export function pathOf(t: Token): PathExpr {
  return {
    kind: "path",
    root: t.value,
    segments: [],
    text: t.value,
    line: t.line,
    column: t.column,
  };
}
