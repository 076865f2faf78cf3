/**
 * The QPlan parser: tokens → typed AST ({@linkcode Script}). A recursive descent in layers, each
 * its own file: the token cursor and syntax errors (`token_cursor.ts`), expressions
 * (`expression_parser.ts`), action lines (`action_parser.ts`), and here the script, its meta lines,
 * blocks and statements. Step statements are delegated to the step parser
 * (`src/qplan/step/step_parser.ts`). Syntax errors are `QPlanSyntaxError`s naming the line, the
 * column, what was expected and what was found.
 *
 * @module
 */
import type {
  ControlStatement,
  EachStatement,
  Expr,
  IfStatement,
  JumpStatement,
  ParallelStatement,
  PlanMetaEntry,
  ReturnEntry,
  ReturnStatement,
  Script,
  SetStatement,
  Statement,
  VarStatement,
  WhileStatement,
} from "./ast.ts";
import { ActionParser } from "./action_parser.ts";
import { pathOf } from "./expression_parser.ts";
import { describe } from "./token_cursor.ts";
import type { Token } from "./tokenizer.ts";
import { parseStepStatement, type StepParserHost } from "../step/step_parser.ts";

export { MAX_NESTING } from "./token_cursor.ts";
export { MAX_OPERATORS } from "./expression_parser.ts";

/**
 * Parses a whole script.
 *
 * @throws QPlanSyntaxError with line, column and what was expected
 *
 * @example
 * ```ts
 * import { parseScript } from "./parser.ts";
 * const script = parseScript(`
 * step id="calc" desc="Compute" {
 *   math add a=1 b=2 -> x
 *   return sum=x
 * }`);
 * console.log(script.body[0].kind); // "step"
 * ```
 */
export function parseScript(source: string): Script {
  const parser = new Parser(source);
  return parser.parseAll(() => parser.parseScript());
}

/** Parses a single expression (as used in `if`, `set`, `var`, `return`). */
export function parseExpression(source: string): Expr {
  const parser = new Parser(source);
  return parser.parseAll(() => {
    const expr = parser.expression();
    parser.expectEnd();
    return expr;
  });
}

class Parser extends ActionParser implements StepParserHost {
  // ---------------------------------------------------------------- script and blocks

  parseScript(): Script {
    const first = this.peek();
    const script: Script = {
      kind: "script",
      planBlock: false,
      meta: [],
      body: [],
      sites: 0,
      line: first.line,
      column: first.column,
    };
    if (first.type === "ident" && first.value.toLowerCase() === "plan" && this.isOp("{", 1)) {
      this.next();
      const opener = this.next();
      script.planBlock = true;
      this.#parseMeta(script.meta);
      script.body = this.#statementsUntilClose("plan", opener);
      const after = this.peek();
      if (after.type !== "eof") {
        this.fail(
          `unexpected ${describe(after)} after the plan block`,
          after,
          "the end of the script (put every statement inside plan { … })",
        );
      }
    } else {
      this.#parseMeta(script.meta);
      const body: Statement[] = [];
      while (this.peek().type !== "eof") {
        if (this.isOp("}")) {
          this.fail('unexpected "}" with no open block', this.peek(), "a statement");
        }
        body.push(this.#statement());
      }
      script.body = body;
    }
    script.sites = this.sites;
    return script;
  }

  #parseMeta(into: PlanMetaEntry[]): void {
    while (this.isOp("@")) {
      const at = this.next();
      const key = this.expectIdent('a plan meta key after "@" (e.g. @title)');
      let value = "";
      const v = this.peek();
      if (v.type === "string" && v.line === key.line) {
        this.next();
        value = v.value;
      } else if (v.type === "number" && v.line === key.line) {
        this.next();
        value = v.value;
      }
      into.push({ key: key.value, value, line: at.line, column: at.column });
      this.endOfLine(`@${key.value}`);
    }
  }

  parseBlock(owner: string, opener: Token): Statement[] {
    if (!(opener.type === "op" && opener.value === "{")) {
      this.expected(`"{" to open the ${owner} block`, opener);
    }
    this.next();
    return this.#statementsUntilClose(owner, opener);
  }

  #statementsUntilClose(owner: string, opener: Token): Statement[] {
    this.enter(opener);
    const statements: Statement[] = [];
    for (;;) {
      const t = this.peek();
      if (t.type === "op" && t.value === "}") {
        this.next();
        break;
      }
      if (t.type === "eof") {
        this.fail(
          `expected "}" to close the ${owner} block opened at line ${opener.line}, found end of script`,
          t,
          `"}" to close the ${owner} block opened at line ${opener.line}`,
        );
      }
      statements.push(this.#statement());
    }
    this.leave();
    return statements;
  }

  // ---------------------------------------------------------------- statements

  #statement(): Statement {
    this.operators = 0;
    const t = this.peek();
    if (t.type === "ident") {
      switch (t.kw) {
        case "step":
          return parseStepStatement(this);
        case "if":
          return this.#if();
        case "while":
          return this.#while();
        case "each":
          return this.#each();
        case "parallel":
          return this.#parallel();
        case "var":
          return this.#var();
        case "set":
          return this.#set();
        case "return":
          return this.#return();
        case "jump":
          return this.#jump();
        case "stop":
        case "skip":
        case "break":
        case "continue": {
          this.next();
          const node: ControlStatement = { kind: t.kw, line: t.line, column: t.column };
          this.endOfLine(`"${t.value}"`);
          return node;
        }
        case "else":
          this.fail("'else' without a matching 'if'", t, "a statement");
          break;
        case undefined:
          return this.action();
        default:
          this.fail(
            `unexpected keyword '${t.value}' at the start of a statement`,
            t,
            "a statement (a module name, step, if, while, each, parallel, var, set, return, jump, stop, skip, break or continue)",
          );
      }
    }
    if (t.type === "op") {
      if (t.value === "...") {
        this.next();
        this.endOfLine('"..."');
        return { kind: "placeholder", text: "...", line: t.line, column: t.column };
      }
      if (
        t.value === "<" && this.peek(1).type === "ident" && this.isOp(">", 2) &&
        this.peek(2).offset === this.peek(1).end
      ) {
        this.next();
        const word = this.next();
        this.next();
        this.endOfLine(`"<${word.value}>"`);
        return {
          kind: "placeholder",
          text: `<${word.value}>`,
          line: t.line,
          column: t.column,
        };
      }
      if (t.value === "@") {
        this.fail(
          "plan meta lines (@title, @params, …) must come before the first statement",
          t,
          "a statement",
        );
      }
    }
    this.expected(
      "a statement (a module name, step, if, while, each, parallel, var, set, return, jump, stop, skip, break or continue)",
      t,
    );
  }

  #var(): VarStatement {
    const kw = this.next();
    let value: Expr;
    if (this.peek().type === "ident" && this.isOp("=", 1)) {
      const key = this.next();
      if (key.value !== "value") {
        this.fail(
          `var takes a value, not '${key.value}='`,
          key,
          "a value: var <expression> -> name (or var value=<expression> -> name)",
        );
      }
      this.next();
      value = this.expression();
    } else {
      if (this.isOp("->") || this.peek().type === "eof") {
        this.expected("a value after var (e.g. var 0 -> total)");
      }
      value = this.expression();
    }
    const node: VarStatement = { kind: "var", value, line: kw.line, column: kw.column };
    if (this.isOp("->")) {
      this.next();
      node.name = this.expectIdent('a variable name after "->"').value;
    }
    this.endOfLine("the var statement");
    return node;
  }

  #set(): SetStatement {
    const kw = this.next();
    const name = this.expectIdent("the name of the variable to set (set name = value)");
    if (this.isOp(".") || this.isOp("[")) {
      this.fail("set updates a whole variable, not a field", this.peek(), '"=" (set name = value)');
    }
    this.expectOp("=", '"=" (set name = value)');
    const value = this.expression();
    this.endOfLine("the set statement");
    return { kind: "set", name: name.value, value, line: kw.line, column: kw.column };
  }

  #if(): IfStatement {
    const kw = this.next();
    const condition = this.#condition("if");
    const thenBlock = this.parseBlock("if", this.peek());
    const node: IfStatement = {
      kind: "if",
      condition,
      then: thenBlock,
      line: kw.line,
      column: kw.column,
    };
    if (this.isKw("else")) {
      this.next();
      if (this.isKw("if")) {
        this.enter(this.peek());
        node.else = [this.#if()];
        this.leave();
      } else {
        node.else = this.parseBlock("else", this.peek());
      }
    }
    return node;
  }

  #condition(owner: string): Expr {
    const t = this.peek();
    if (t.type === "op" && t.value === "{") {
      this.expected(`a condition after ${owner}`, t);
    }
    return this.expressionBeforeBlock();
  }

  #while(): WhileStatement {
    const kw = this.next();
    const condition = this.#condition("while");
    const body = this.parseBlock("while", this.peek());
    return { kind: "while", condition, body, line: kw.line, column: kw.column };
  }

  #each(): EachStatement {
    const kw = this.next();
    let item: Token;
    let index: Token | undefined;
    if (this.isOp("(")) {
      this.next();
      item = this.expectIdent("the item variable: each (item, index) in list");
      if (this.isOp(",")) {
        this.next();
        index = this.expectIdent("the index variable: each (item, index) in list");
      }
      this.expectOp(")", '")" after the loop variables');
    } else {
      item = this.expectIdent("the item variable: each item in list");
    }
    if (!this.isKw("in")) this.expected('"in" (each item in list)');
    this.next();
    const iterable = this.#condition("in");
    const body = this.parseBlock("each", this.peek());
    const node: EachStatement = {
      kind: "each",
      item: item.value,
      iterable,
      body,
      line: kw.line,
      column: kw.column,
    };
    if (index) node.index = index.value;
    return node;
  }

  #parallel(): ParallelStatement {
    const kw = this.next();
    const node: ParallelStatement = {
      kind: "parallel",
      ignoreErrors: false,
      body: [],
      line: kw.line,
      column: kw.column,
    };
    const seen = new Set<string>();
    const options = (after: boolean) => {
      for (;;) {
        const t = this.peek();
        if (t.type !== "ident" || !this.isOp("=", 1)) return;
        const key = t.value.toLowerCase();
        if (key !== "concurrency" && key !== "ignoreerrors") {
          if (after) return;
          this.fail(
            `unknown parallel option '${t.value}'`,
            t,
            'concurrency=N, ignoreErrors=true or "{"',
          );
        }
        if (seen.has(key)) {
          this.fail(`parallel option '${t.value}' is given twice`, t, "each option once");
        }
        seen.add(key);
        this.next();
        this.next();
        const { value } = this.argValue();
        if (key === "concurrency") node.concurrency = value;
        else {
          if (
            value.kind !== "literal" || !(value.value === true || value.value === false ||
              value.value === "true" || value.value === "false")
          ) {
            this.fail(
              "ignoreErrors must be true or false",
              t,
              "ignoreErrors=true or ignoreErrors=false",
            );
          }
          node.ignoreErrors = value.value === true || value.value === "true";
        }
      }
    };
    options(false);
    node.body = this.parseBlock("parallel", this.peek());
    options(true);
    return node;
  }

  #return(): ReturnStatement {
    const kw = this.next();
    const entries: ReturnEntry[] = [];
    let lastLine = kw.line;
    for (;;) {
      const t = this.peek();
      if (t.type === "op" && t.value === "," && entries.length > 0) {
        this.next();
        continue;
      }
      if (t.type !== "ident") break;
      if (this.isOp("=", 1)) {
        this.next();
        this.next();
        const value = this.expression();
        entries.push({ key: t.value, value, line: t.line, column: t.column });
        lastLine = this.prev().endLine ?? this.prev().line;
        continue;
      }
      if (t.line !== lastLine) break;
      if (t.kw) {
        this.fail(
          `'${t.value}' is a keyword, not a name to return`,
          t,
          "key=value or a variable name",
        );
      }
      if (this.isOp(".", 1) || this.isOp("[", 1)) {
        this.fail(
          `return shorthand takes plain names; write a key for '${t.value}…'`,
          this.peek(1),
          `key=${t.value}… (e.g. return data=${t.value}.field)`,
        );
      }
      this.next();
      entries.push({ key: t.value, value: pathOf(t), line: t.line, column: t.column });
      lastLine = t.line;
    }
    if (entries.length === 0) {
      this.expected("at least one value to return (return key=value or return name)");
    }
    this.endOfLine("the return statement");
    return { kind: "return", entries, line: kw.line, column: kw.column };
  }

  #jump(): JumpStatement {
    const kw = this.next();
    const to = this.peek();
    if (!(to.type === "ident" && to.value.toLowerCase() === "to" && this.isOp("=", 1))) {
      this.expected('to="stepId" after jump', to);
    }
    this.next();
    this.next();
    const target = this.peek();
    if (target.type !== "string" && target.type !== "ident") {
      this.expected('the target step id (jump to="stepId")', target);
    }
    this.next();
    this.endOfLine("the jump statement");
    return { kind: "jump", target: target.value, line: kw.line, column: kw.column };
  }
}
