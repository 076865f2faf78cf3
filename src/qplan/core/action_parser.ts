/**
 * QPlan action lines — `module option key=value … -> output`, with `print`'s own argument list —
 * and the end-of-line rule every simple statement ends with (one statement per line).
 *
 * @module
 */
import type { ActionArg, ActionStatement, Expr, PrintItem } from "./ast.ts";
import { ExpressionParser, LITERAL_WORDS, literalWord, pathOf } from "./expression_parser.ts";
import { describe } from "./token_cursor.ts";
import type { Token } from "./tokenizer.ts";

/** Parses action lines; the statement parser builds on it. */
export class ActionParser extends ExpressionParser {
  /** Action sites numbered in script order (the executor keys its per-site state by them). */
  protected sites = 0;

  /** After a simple statement: the next token must start a new line, close a block, or end the script. */
  protected endOfLine(what: string): void {
    const t = this.peek();
    if (t.type === "eof" || (t.type === "op" && t.value === "}")) return;
    const prev = this.prev();
    if (t.line > (prev.endLine ?? prev.line)) return;
    const hint = t.type === "op" && "+-*/".includes(t.value)
      ? " (wrap an expression argument in parentheses: key=(a + b))"
      : "";
    this.fail(
      `unexpected ${describe(t)} after ${what}${hint}`,
      t,
      "the end of the line (one statement per line)",
    );
  }

  /**
   * The module name starting with `token`. MCP tool names (`mcp__<server>__<tool>`) may hold `-`
   * (`mcp__everything__get-sum`), which QPlan names cannot: after an `mcp__` name, a `-` and the
   * name or number written right against it (no space) continue the module's name.
   */
  #mcpToolName(token: Token): string {
    if (!token.value.startsWith("mcp__")) return token.value;
    let name = token.value;
    let end = token.end;
    for (;;) {
      const dash = this.peek();
      const part = this.peek(1);
      if (
        dash.type !== "op" || dash.value !== "-" || dash.offset !== end ||
        (part.type !== "ident" && part.type !== "number") || part.offset !== dash.end
      ) break;
      this.next();
      this.next();
      name += `-${part.value}`;
      end = part.end;
      // A name and a number can also touch each other after a dash ("get-2fa").
      for (let next = this.peek(); next.type !== "op" && next.offset === end; next = this.peek()) {
        if (next.type !== "ident" && next.type !== "number") break;
        name += this.next().value;
        end = next.end;
      }
    }
    token.value = name;
    token.end = end;
    return name;
  }

  /** An action line (`module option arg=value … -> output`) at the cursor. */
  protected action(): ActionStatement {
    const moduleToken = this.next();
    const node: ActionStatement = {
      kind: "action",
      module: this.#mcpToolName(moduleToken),
      options: [],
      args: [],
      site: this.sites++,
      line: moduleToken.line,
      column: moduleToken.column,
    };
    if (moduleToken.value === "print") return this.#print(node, moduleToken);
    if (this.isOp("=")) {
      this.fail(
        `'${moduleToken.value} =' is not a statement`,
        this.peek(),
        `a statement: set ${moduleToken.value} = … updates a variable, var … -> ${moduleToken.value} creates one`,
      );
    }

    // Options: bare words on the module's line, chained with AND.
    let optionTokens: Token[] = [];
    for (;;) {
      const t = this.peek();
      // Keywords may be options too (json set, string join …); AND and USING keep their meaning.
      if (
        t.type !== "ident" || t.line !== moduleToken.line || t.kw === "and" || t.kw === "using" ||
        this.isOp("=", 1)
      ) break;
      optionTokens.push(this.next());
      if (this.isKw("and") && this.peek().line === moduleToken.line) {
        const and = this.next();
        const o = this.peek();
        if (o.type !== "ident" || o.kw === "and" || this.isOp("=", 1)) {
          this.fail(
            `expected an option after ${and.value}`,
            o,
            'an option name (e.g. "get AND cache")',
          );
        }
        continue;
      }
      break;
    }
    node.options = optionTokens.map((o) => o.value);
    if (optionTokens.length > 0) {
      const o = optionTokens[0];
      node.args.push({
        key: "op",
        value: { kind: "literal", value: o.value, line: o.line, column: o.column },
        bare: false,
        line: o.line,
        column: o.column,
      });
      if (optionTokens.length > 1) {
        node.args.push({
          key: "options",
          value: {
            kind: "array",
            items: optionTokens.map((x) => ({
              kind: "literal" as const,
              value: x.value,
              line: x.line,
              column: x.column,
            })),
            line: o.line,
            column: o.column,
          },
          bare: false,
          line: o.line,
          column: o.column,
        });
      }
    }
    optionTokens = [];

    // `module "prompt" [USING a, b]`
    const lead = this.peek();
    if (lead.type === "string") {
      this.next();
      node.args.push({
        key: "prompt",
        value: { kind: "literal", value: lead.value, line: lead.line, column: lead.column },
        bare: false,
        line: lead.line,
        column: lead.column,
      });
      if (this.isKw("using")) {
        const using = this.next();
        const names: Token[] = [this.expectIdent("a variable name after USING")];
        while (this.isOp(",")) {
          this.next();
          names.push(this.expectIdent('a variable name after ","'));
        }
        node.using = names.map((n) => n.value);
        node.args.push({
          key: "context",
          value: {
            kind: "object",
            entries: names.map((n) => ({ key: n.value, value: pathOf(n) })),
            line: using.line,
            column: using.column,
          },
          bare: false,
          line: using.line,
          column: using.column,
        });
      }
    }

    this.#args(node.args);
    this.#output(node);
    this.endOfLine(`the ${node.module} action`);
    return node;
  }

  #args(into: ActionArg[]): void {
    for (;;) {
      const t = this.peek();
      if (t.type !== "ident" || !this.isOp("=", 1)) return;
      this.next();
      this.next();
      if (into.some((a) => a.key === t.value)) {
        this.fail(
          t.value === "op"
            ? "op is given twice (as an option after the module name and as op=)"
            : `argument '${t.value}' is given twice`,
          t,
          "each argument once",
        );
      }
      const { value, bare } = this.argValue();
      into.push({ key: t.value, value, bare, line: t.line, column: t.column });
    }
  }

  /** An argument's value: a bare path or word, or an expression in parentheses or brackets. */
  protected argValue(): { value: Expr; bare: boolean } {
    const t = this.peek();
    if (t.type === "ident") {
      if (t.kw && LITERAL_WORDS.has(t.kw)) {
        this.next();
        return { value: literalWord(t), bare: false };
      }
      if (t.kw) this.expected("a value (number, string, JSON, variable or (expression))", t);
      return { value: this.path(), bare: true };
    }
    if (
      t.type === "number" || t.type === "string" || (t.type === "op" && "([{-".includes(t.value))
    ) {
      return { value: this.unary(), bare: false };
    }
    this.expected("a value (number, string, JSON, variable or (expression))", t);
  }

  #output(node: { output?: string }): void {
    if (!this.isOp("->")) return;
    this.next();
    node.output = this.expectIdent('a variable name after "->"').value;
  }

  #print(node: ActionStatement, keyword: Token): ActionStatement {
    const items: PrintItem[] = [];
    for (;;) {
      const t = this.peek();
      if (t.type === "eof" || t.line !== keyword.line) break;
      if (t.type === "op" && (t.value === "->" || t.value === "}")) break;
      if (t.type === "op" && t.value === ",") {
        this.next();
        continue;
      }
      if (t.type === "ident" && this.isOp("=", 1)) {
        this.next();
        this.next();
        const { value, bare } = this.argValue();
        items.push({ label: t.value, value, bare, line: t.line, column: t.column });
        continue;
      }
      const { value, bare } = this.argValue();
      items.push({ value, bare, line: t.line, column: t.column });
    }
    node.printItems = items;
    this.#output(node);
    this.endOfLine("the print action");
    return node;
  }
}
