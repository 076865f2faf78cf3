/**
 * The QPlan parser: tokens → typed AST ({@linkcode Script}). Step statements are delegated to the
 * step parser (`src/qplan/step/step_parser.ts`). Syntax errors are {@linkcode QPlanSyntaxError}s
 * naming the line, the column, what was expected and what was found.
 *
 * @module
 */
import type {
  ActionArg,
  ActionStatement,
  BinaryOperator,
  ControlStatement,
  EachStatement,
  Expr,
  IfStatement,
  JumpStatement,
  ParallelStatement,
  PathExpr,
  PathSegment,
  PlanMetaEntry,
  PrintItem,
  ReturnEntry,
  ReturnStatement,
  Script,
  SetStatement,
  Statement,
  VarStatement,
  WhileStatement,
} from "./ast.ts";
import { QPlanSyntaxError } from "./errors.ts";
import { type Token, tokenize } from "./tokenizer.ts";
import { parseStepStatement, type StepParserHost } from "../step/step_parser.ts";

/** Blocks and parentheses may nest this deep; deeper input is a syntax error, never a stack overflow. */
export const MAX_NESTING = 200;

/** One statement may hold this many binary operators (longer chains would overflow the stack when evaluated). */
export const MAX_OPERATORS = 1000;

const COMPARISON: ReadonlySet<string> = new Set(["==", "!=", "<", ">", "<=", ">="]);
const LITERAL_WORDS: ReadonlySet<string> = new Set(["true", "false", "null"]);

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
  return new Parser(source, tokenize(source)).parseScript();
}

/** Parses a single expression (as used in `if`, `set`, `var`, `return`). */
export function parseExpression(source: string): Expr {
  const parser = new Parser(source, tokenize(source));
  const expr = parser.expression();
  parser.expectEnd();
  return expr;
}

class Parser implements StepParserHost {
  #pos = 0;
  #depth = 0;
  #operators = 0;
  /** True while parsing a condition outside brackets: there "{" opens the block, not an object. */
  #braceOpensBlock = false;
  #sites = 0;
  readonly #tokens: Token[];
  readonly #source: string;

  constructor(source: string, tokens: Token[]) {
    this.#source = source;
    this.#tokens = tokens;
  }

  // ---------------------------------------------------------------- primitives

  peek(k = 0): Token {
    const i = this.#pos + k;
    return this.#tokens[i < this.#tokens.length ? i : this.#tokens.length - 1];
  }

  next(): Token {
    const t = this.#tokens[this.#pos];
    if (this.#pos < this.#tokens.length - 1) this.#pos++;
    return t;
  }

  #prev(): Token {
    return this.#tokens[Math.max(0, this.#pos - 1)];
  }

  fail(problem: string, token: Token, expected: string): never {
    throw new QPlanSyntaxError(
      problem,
      { line: token.line, column: token.column },
      expected,
      describe(token),
      this.#source,
    );
  }

  #expected(expected: string, token: Token = this.peek()): never {
    this.fail(`expected ${expected}, found ${describe(token)}`, token, expected);
  }

  expectIdent(expected: string): Token {
    const t = this.peek();
    if (t.type !== "ident") this.#expected(expected, t);
    return this.next();
  }

  #isOp(value: string, k = 0): boolean {
    const t = this.peek(k);
    return t.type === "op" && t.value === value;
  }

  #isKw(kw: string, k = 0): boolean {
    return this.peek(k).kw === kw;
  }

  #expectOp(value: string, expected: string): Token {
    if (!this.#isOp(value)) this.#expected(expected);
    return this.next();
  }

  /** Fails unless every token has been consumed. */
  expectEnd(): void {
    const t = this.peek();
    if (t.type !== "eof") this.#expected("the end of the expression", t);
  }

  #enter(token: Token): void {
    if (++this.#depth > MAX_NESTING) {
      this.fail(
        `nesting is too deep (more than ${MAX_NESTING} levels)`,
        token,
        "fewer nested blocks or parentheses",
      );
    }
  }

  #leave(): void {
    this.#depth--;
  }

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
    if (first.type === "ident" && first.value.toLowerCase() === "plan" && this.#isOp("{", 1)) {
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
        if (this.#isOp("}")) {
          this.fail('unexpected "}" with no open block', this.peek(), "a statement");
        }
        body.push(this.#statement());
      }
      script.body = body;
    }
    script.sites = this.#sites;
    return script;
  }

  #parseMeta(into: PlanMetaEntry[]): void {
    while (this.#isOp("@")) {
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
      this.#endOfLine(`@${key.value}`);
    }
  }

  parseBlock(owner: string, opener: Token): Statement[] {
    if (!(opener.type === "op" && opener.value === "{")) {
      this.#expected(`"{" to open the ${owner} block`, opener);
    }
    this.next();
    return this.#statementsUntilClose(owner, opener);
  }

  #statementsUntilClose(owner: string, opener: Token): Statement[] {
    this.#enter(opener);
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
    this.#leave();
    return statements;
  }

  /** After a simple statement: the next token must start a new line, close a block, or end the script. */
  #endOfLine(what: string): void {
    const t = this.peek();
    if (t.type === "eof" || (t.type === "op" && t.value === "}")) return;
    const prev = this.#prev();
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

  // ---------------------------------------------------------------- statements

  #statement(): Statement {
    this.#operators = 0;
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
          this.#endOfLine(`"${t.value}"`);
          return node;
        }
        case "else":
          this.fail("'else' without a matching 'if'", t, "a statement");
          break;
        case undefined:
          return this.#action();
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
        this.#endOfLine('"..."');
        return { kind: "placeholder", text: "...", line: t.line, column: t.column };
      }
      if (
        t.value === "<" && this.peek(1).type === "ident" && this.#isOp(">", 2) &&
        this.peek(2).offset === this.peek(1).end
      ) {
        this.next();
        const word = this.next();
        this.next();
        this.#endOfLine(`"<${word.value}>"`);
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
    this.#expected(
      "a statement (a module name, step, if, while, each, parallel, var, set, return, jump, stop, skip, break or continue)",
      t,
    );
  }

  #action(): ActionStatement {
    const moduleToken = this.next();
    const node: ActionStatement = {
      kind: "action",
      module: moduleToken.value,
      options: [],
      args: [],
      site: this.#sites++,
      line: moduleToken.line,
      column: moduleToken.column,
    };
    if (moduleToken.value === "print") return this.#print(node, moduleToken);
    if (this.#isOp("=")) {
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
        this.#isOp("=", 1)
      ) break;
      optionTokens.push(this.next());
      if (this.#isKw("and") && this.peek().line === moduleToken.line) {
        const and = this.next();
        const o = this.peek();
        if (o.type !== "ident" || o.kw === "and" || this.#isOp("=", 1)) {
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
      if (this.#isKw("using")) {
        const using = this.next();
        const names: Token[] = [this.expectIdent("a variable name after USING")];
        while (this.#isOp(",")) {
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
    this.#endOfLine(`the ${node.module} action`);
    return node;
  }

  #args(into: ActionArg[]): void {
    for (;;) {
      const t = this.peek();
      if (t.type !== "ident" || !this.#isOp("=", 1)) return;
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
      const { value, bare } = this.#argValue();
      into.push({ key: t.value, value, bare, line: t.line, column: t.column });
    }
  }

  #argValue(): { value: Expr; bare: boolean } {
    const t = this.peek();
    if (t.type === "ident") {
      if (t.kw && LITERAL_WORDS.has(t.kw)) {
        this.next();
        return { value: literalWord(t), bare: false };
      }
      if (t.kw) this.#expected("a value (number, string, JSON, variable or (expression))", t);
      return { value: this.#path(), bare: true };
    }
    if (
      t.type === "number" || t.type === "string" || (t.type === "op" && "([{-".includes(t.value))
    ) {
      return { value: this.#unary(), bare: false };
    }
    this.#expected("a value (number, string, JSON, variable or (expression))", t);
  }

  #output(node: { output?: string }): void {
    if (!this.#isOp("->")) return;
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
      if (t.type === "ident" && this.#isOp("=", 1)) {
        this.next();
        this.next();
        const { value, bare } = this.#argValue();
        items.push({ label: t.value, value, bare, line: t.line, column: t.column });
        continue;
      }
      const { value, bare } = this.#argValue();
      items.push({ value, bare, line: t.line, column: t.column });
    }
    node.printItems = items;
    this.#output(node);
    this.#endOfLine("the print action");
    return node;
  }

  #var(): VarStatement {
    const kw = this.next();
    let value: Expr;
    if (this.peek().type === "ident" && this.#isOp("=", 1)) {
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
      if (this.#isOp("->") || this.peek().type === "eof") {
        this.#expected("a value after var (e.g. var 0 -> total)");
      }
      value = this.expression();
    }
    const node: VarStatement = { kind: "var", value, line: kw.line, column: kw.column };
    if (this.#isOp("->")) {
      this.next();
      node.name = this.expectIdent('a variable name after "->"').value;
    }
    this.#endOfLine("the var statement");
    return node;
  }

  #set(): SetStatement {
    const kw = this.next();
    const name = this.expectIdent("the name of the variable to set (set name = value)");
    if (this.#isOp(".") || this.#isOp("[")) {
      this.fail("set updates a whole variable, not a field", this.peek(), '"=" (set name = value)');
    }
    this.#expectOp("=", '"=" (set name = value)');
    const value = this.expression();
    this.#endOfLine("the set statement");
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
    if (this.#isKw("else")) {
      this.next();
      if (this.#isKw("if")) {
        this.#enter(this.peek());
        node.else = [this.#if()];
        this.#leave();
      } else {
        node.else = this.parseBlock("else", this.peek());
      }
    }
    return node;
  }

  #condition(owner: string): Expr {
    const t = this.peek();
    if (t.type === "op" && t.value === "{") {
      this.#expected(`a condition after ${owner}`, t);
    }
    const saved = this.#braceOpensBlock;
    this.#braceOpensBlock = true;
    try {
      return this.expression();
    } finally {
      this.#braceOpensBlock = saved;
    }
  }

  #nested<T>(parse: () => T): T {
    const saved = this.#braceOpensBlock;
    this.#braceOpensBlock = false;
    try {
      return parse();
    } finally {
      this.#braceOpensBlock = saved;
    }
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
    if (this.#isOp("(")) {
      this.next();
      item = this.expectIdent("the item variable: each (item, index) in list");
      if (this.#isOp(",")) {
        this.next();
        index = this.expectIdent("the index variable: each (item, index) in list");
      }
      this.#expectOp(")", '")" after the loop variables');
    } else {
      item = this.expectIdent("the item variable: each item in list");
    }
    if (!this.#isKw("in")) this.#expected('"in" (each item in list)');
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
        if (t.type !== "ident" || !this.#isOp("=", 1)) return;
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
        const { value } = this.#argValue();
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
      if (this.#isOp("=", 1)) {
        this.next();
        this.next();
        const value = this.expression();
        entries.push({ key: t.value, value, line: t.line, column: t.column });
        lastLine = this.#prev().endLine ?? this.#prev().line;
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
      if (this.#isOp(".", 1) || this.#isOp("[", 1)) {
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
      this.#expected("at least one value to return (return key=value or return name)");
    }
    this.#endOfLine("the return statement");
    return { kind: "return", entries, line: kw.line, column: kw.column };
  }

  #jump(): JumpStatement {
    const kw = this.next();
    const to = this.peek();
    if (!(to.type === "ident" && to.value.toLowerCase() === "to" && this.#isOp("=", 1))) {
      this.#expected('to="stepId" after jump', to);
    }
    this.next();
    this.next();
    const target = this.peek();
    if (target.type !== "string" && target.type !== "ident") {
      this.#expected('the target step id (jump to="stepId")', target);
    }
    this.next();
    this.#endOfLine("the jump statement");
    return { kind: "jump", target: target.value, line: kw.line, column: kw.column };
  }

  // ---------------------------------------------------------------- expressions

  #binary(op: string, left: Expr, right: Expr, at: Token): Expr {
    if (++this.#operators > MAX_OPERATORS) {
      this.fail(
        `the statement is too long (more than ${MAX_OPERATORS} operators)`,
        at,
        "a shorter expression (compute parts into variables with var … -> name)",
      );
    }
    return binary(op, left, right, at);
  }

  expression(): Expr {
    return this.#or();
  }

  #or(): Expr {
    let left = this.#and();
    while (this.#isKw("or")) {
      const op = this.next();
      left = this.#binary("or", left, this.#and(), op);
    }
    return left;
  }

  #and(): Expr {
    let left = this.#not();
    while (this.#isKw("and")) {
      const op = this.next();
      left = this.#binary("and", left, this.#not(), op);
    }
    return left;
  }

  #not(): Expr {
    if (this.#isKw("not")) {
      const op = this.next();
      this.#enter(op);
      const operand = this.#not();
      this.#leave();
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
    let left = this.#unary();
    for (;;) {
      const t = this.peek();
      if (t.type !== "op" || (t.value !== "*" && t.value !== "/")) return left;
      this.next();
      left = this.#binary(t.value, left, this.#unary(), t);
    }
  }

  #unary(): Expr {
    const t = this.peek();
    if (t.type === "op" && (t.value === "-" || t.value === "+")) {
      this.next();
      this.#enter(t);
      const operand = this.#unary();
      this.#leave();
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
          this.#expected("a value (number, string, variable, [list], {object} or (expression))", t);
        }
        return this.#path();
      case "op":
        if (t.value === "(") {
          this.next();
          this.#enter(t);
          const inner = this.#nested(() => this.expression());
          this.#leave();
          this.#expectOp(")", `")" to close the "(" at line ${t.line}, column ${t.column}`);
          return inner;
        }
        if (t.value === "[") return this.#nested(() => this.#array());
        if (t.value === "{" && !this.#braceOpensBlock) return this.#nested(() => this.#object());
        break;
    }
    this.#expected("a value (number, string, variable, [list], {object} or (expression))", t);
  }

  #path(): PathExpr {
    const root = this.next();
    const segments: PathSegment[] = [];
    let text = root.value;
    for (;;) {
      if (this.#isOp(".") && this.peek(1).type === "ident") {
        const dot = this.next();
        const name = this.next();
        segments.push({ kind: "prop", name: name.value, line: dot.line, column: dot.column });
        text += `.${name.value}`;
        continue;
      }
      if (this.#isOp("[") && this.peek().line === this.#prev().line) {
        const open = this.next();
        this.#enter(open);
        const index = this.#nested(() => this.expression());
        this.#leave();
        const close = this.#expectOp(
          "]",
          `"]" to close the "[" at line ${open.line}, column ${open.column}`,
        );
        segments.push({ kind: "index", index, line: open.line, column: open.column });
        text += this.#source.slice(open.offset, close.end);
        continue;
      }
      break;
    }
    return { kind: "path", root: root.value, segments, text, line: root.line, column: root.column };
  }

  #array(): Expr {
    const open = this.next();
    this.#enter(open);
    const items: Expr[] = [];
    while (!this.#isOp("]")) {
      if (this.peek().type === "eof") {
        this.#expected(`"]" to close the list opened at line ${open.line}, column ${open.column}`);
      }
      items.push(this.expression());
      if (this.#isOp(",")) {
        this.next();
        continue;
      }
      if (!this.#isOp("]")) {
        this.#expected(`"," or "]" in the list opened at line ${open.line}, column ${open.column}`);
      }
    }
    this.next();
    this.#leave();
    return { kind: "array", items, line: open.line, column: open.column };
  }

  #object(): Expr {
    const open = this.next();
    this.#enter(open);
    const entries: { key: string; value: Expr }[] = [];
    while (!this.#isOp("}")) {
      const k = this.peek();
      if (k.type !== "string" && k.type !== "ident" && k.type !== "number") {
        this.#expected(
          `a key ("name": value) or "}" in the object opened at line ${open.line}, column ${open.column}`,
          k,
        );
      }
      this.next();
      this.#expectOp(":", `":" after the key "${k.value}"`);
      entries.push({ key: k.value, value: this.expression() });
      if (this.#isOp(",")) {
        this.next();
        continue;
      }
      if (!this.#isOp("}")) {
        this.#expected(
          `"," or "}" in the object opened at line ${open.line}, column ${open.column}`,
        );
      }
    }
    this.next();
    this.#leave();
    return { kind: "object", entries, line: open.line, column: open.column };
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

function literalWord(t: Token): Expr {
  const value = t.kw === "true" ? true : t.kw === "false" ? false : null;
  return { kind: "literal", value, line: t.line, column: t.column };
}

function pathOf(t: Token): PathExpr {
  return {
    kind: "path",
    root: t.value,
    segments: [],
    text: t.value,
    line: t.line,
    column: t.column,
  };
}

/** How a token is named in error messages. */
function describe(t: Token): string {
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
