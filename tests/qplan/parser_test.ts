/**
 * Tokenizer and parser: every statement, expression and comment form of QPLAN.md, the plan
 * header, Unicode identifiers, positions on every node, and syntax errors with line and column.
 */
import assert from "node:assert/strict";
import {
  type ActionStatement,
  parseExpression,
  parseScript,
  QPlanSyntaxError,
  type Statement,
  tokenize,
} from "../../src/qplan/mod.ts";
import { scriptModules } from "../../src/qplan/script_modules.ts";

function syntaxError(source: string): QPlanSyntaxError {
  try {
    parseScript(source);
  } catch (error) {
    if (error instanceof QPlanSyntaxError) return error;
    throw error;
  }
  throw new Error(`no syntax error for: ${source}`);
}

function only<K extends Statement["kind"]>(
  source: string,
  kind: K,
): Extract<Statement, { kind: K }> {
  const script = parseScript(source);
  assert.equal(script.body.length, 1, source);
  assert.equal(script.body[0].kind, kind);
  return script.body[0] as Extract<Statement, { kind: K }>;
}

Deno.test("tokenizer: comments, both quotes, escaped quotes, numbers, operators, positions", () => {
  const tokens = tokenize(`# hash comment
x // line comment
/* block
   comment */ 'it''s' "a\\"b" 12.5e2 -> >= != ...`);
  assert.deepEqual(
    tokens.map((t) => [t.type, t.value, t.line, t.column]),
    [
      ["ident", "x", 2, 1],
      ["string", "it", 4, 15],
      ["string", "s", 4, 19],
      ["string", 'a"b', 4, 23],
      ["number", "12.5e2", 4, 30],
      ["op", "->", 4, 37],
      ["op", ">=", 4, 40],
      ["op", "!=", 4, 43],
      ["op", "...", 4, 46],
      ["eof", "", 4, 49],
    ],
  );
  // A backslash before anything but the quote stays (Windows paths).
  assert.equal(tokenize(String.raw`"C:\dir\n"`)[0].value, String.raw`C:\dir\n`);
  // Strings may span lines; the next token's line is counted correctly.
  const multi = tokenize(`"a\nb" x`);
  assert.deepEqual([multi[0].value, multi[0].endLine, multi[1].line], ["a\nb", 2, 2]);
});

Deno.test("tokenizer: keywords are case-insensitive, identifiers may be Unicode", () => {
  const tokens = tokenize("STEP Each NOT_EXISTS 합계 _x1 café");
  assert.deepEqual(tokens.slice(0, -1).map((t) => [t.value, t.kw ?? null]), [
    ["STEP", "step"],
    ["Each", "each"],
    ["NOT_EXISTS", "not_exists"],
    ["합계", null],
    ["_x1", null],
    ["café", null],
  ]);
});

Deno.test("tokenizer errors: line, column, what was expected", () => {
  const cases: [string, number, number, RegExp][] = [
    ['x\n  "open', 2, 3, /unterminated string; expected a closing "/],
    ["x /* never closed", 1, 3, /unterminated block comment; expected "\*\/" to close the comment/],
    ["step id=$x", 1, 9, /unexpected character '\$'/],
    [
      "if a ! b",
      1,
      6,
      /unexpected character '!'; expected "!=" \(QPlan writes negation as "not"\)/,
    ],
    ["x 😀", 1, 3, /unexpected character '😀'/],
  ];
  for (const [source, line, column, message] of cases) {
    const e = syntaxError(source);
    assert.deepEqual([e.line, e.column], [line, column], source);
    assert.match(e.message, message);
  }
});

Deno.test("actions: options become op, AND chains, args of every value kind, output", () => {
  const source =
    `http get AND cache url="https://x" n=-2 f=1.5 t=true z=null list=[1, "a"] obj={"k": [x]} v=read.data i=items[0] e=(n + 1) -> page`;
  const a = only(source, "action");
  assert.equal(a.module, "http");
  assert.deepEqual(a.options, ["get", "cache"]);
  assert.equal(a.output, "page");
  assert.deepEqual(a.args.map((x) => [x.key, x.value.kind, x.bare]), [
    ["op", "literal", false],
    ["options", "array", false],
    ["url", "literal", false],
    ["n", "literal", false],
    ["f", "literal", false],
    ["t", "literal", false],
    ["z", "literal", false],
    ["list", "array", false],
    ["obj", "object", false],
    ["v", "path", true],
    ["i", "path", true],
    ["e", "binary", false],
  ]);
  const col = (text: string) => source.indexOf(text) + 1;
  assert.deepEqual(a.args[3].value, { kind: "literal", value: -2, line: 1, column: col("-2") });
  assert.deepEqual(a.args[9].value, {
    kind: "path",
    root: "read",
    segments: [{ kind: "prop", name: "data", line: 1, column: col(".data") }],
    text: "read.data",
    line: 1,
    column: col("read.data"),
  });
  // op= and an option mean the same.
  const explicit = only(`math op="add" a=1 b=2 -> x`, "action");
  const short = only(`math add a=1 b=2 -> x`, "action");
  assert.deepEqual(explicit.args.map((x) => [x.key, (x.value as { value: unknown }).value]), [
    ["op", "add"],
    ["a", 1],
    ["b", 2],
  ]);
  assert.deepEqual(short.args.map((x) => [x.key, (x.value as { value: unknown }).value]), [
    ["op", "add"],
    ["a", 1],
    ["b", 2],
  ]);
  // Keywords may be options (json set, string join); AND still chains.
  assert.deepEqual(only(`json set data=o path="a" value=1 -> y`, "action").options, ["set"]);
  assert.deepEqual(only(`x in AND each`, "action").options, ["in", "each"]);
  // Options only on the module's own line; args may continue on the next lines.
  const script = parseScript(`time\nprint "x"\nmath add a=1\n  b=2 -> y`);
  assert.deepEqual(script.body.map((s) => s.kind === "action" ? s.module : s.kind), [
    "time",
    "print",
    "math",
  ]);
  assert.equal((script.body[2] as ActionStatement).args.length, 3);
});

Deno.test("actions: an MCP tool name keeps the '-' written against it; anywhere else '-' is minus", () => {
  const a = only("mcp__everything__get-sum a=1 b=-2 -> s", "action");
  assert.equal(a.module, "mcp__everything__get-sum");
  assert.deepEqual(a.args.map((x) => x.key), ["a", "b"]);
  assert.equal(a.output, "s");
  assert.equal(only("mcp__x__get-2fa-v2 -> t", "action").module, "mcp__x__get-2fa-v2");
  // Spaced, it is an operator: an error after an action, as before.
  assert.match(syntaxError("mcp__a__b - c").message, /unexpected "-" after the mcp__a__b action/);
  // Only MCP names: other modules are as they were.
  assert.match(syntaxError("math-add a=1").message, /unexpected "-" after the math action/);
  const body = parseScript('step id="s" {\n  mcp__fs__read-file path="a" -> t\n}').body;
  const step = body[0] as Extract<Statement, { kind: "step" }>;
  const read = step.children[0] as ActionStatement;
  assert.deepEqual([read.module, read.line, read.column], ["mcp__fs__read-file", 2, 3]);
});

Deno.test("scriptModules: every module a script calls, in every kind of block, each once", () => {
  const source = [
    "mcp__a__top -> x",
    'step id="s" {',
    "  if x { mcp__b__then } else { mcp__c__else }",
    "  while false { mcp__d__loop }",
    "  each v in [1] { parallel { mcp__e__par } }",
    '  step id="t" { mcp__a__top -> y }',
    "}",
  ].join("\n");
  assert.deepEqual(scriptModules(source).sort(), [
    "mcp__a__top",
    "mcp__b__then",
    "mcp__c__else",
    "mcp__d__loop",
    "mcp__e__par",
  ]);
  assert.deepEqual(scriptModules("step {"), []);
});

Deno.test('special forms: ai "prompt" USING a, b and print "text", k=v, var', () => {
  const ai = only(`ai "Summarize" USING text, notes model="m" -> summary`, "action");
  assert.deepEqual(ai.using, ["text", "notes"]);
  assert.deepEqual(ai.args.map((a) => a.key), ["prompt", "context", "model"]);
  assert.equal(ai.output, "summary");
  const print = only(`print "Total:", total, avg=mean 3 (a + 1)`, "action");
  assert.deepEqual(
    print.printItems!.map((i) => [i.label ?? null, i.value.kind, i.bare]),
    [
      [null, "literal", false],
      [null, "path", true],
      ["avg", "path", true],
      [null, "literal", false],
      [null, "binary", false],
    ],
  );
});

Deno.test("var, set, if/else if/else, while, each (both forms), parallel (options before and after)", () => {
  const v = only(`var [1, 2] -> items`, "var");
  assert.equal(v.name, "items");
  assert.equal(only(`var value=5 -> five`, "var").name, "five");
  assert.equal(only(`var 5`, "var").name, undefined);
  const s = only(`set total = total + n * 2`, "set");
  assert.equal(s.value.kind, "binary");
  const i = only(
    `if a > 1 { var 1 -> x } else if a EXISTS { var 2 -> x } else { var 3 -> x }`,
    "if",
  );
  assert.equal(i.else?.[0].kind, "if");
  const w = only(`while n < 3 {\n  set n = n + 1\n  break\n}`, "while");
  assert.deepEqual(w.body.map((b) => b.kind), ["set", "break"]);
  const e1 = only(`each x in items { continue }`, "each");
  assert.deepEqual([e1.item, e1.index], ["x", undefined]);
  const e2 = only(`each (v, i) in load.rows { var v -> last }`, "each");
  assert.deepEqual([e2.item, e2.index, e2.iterable.kind], ["v", "i", "path"]);
  const p1 = only(`parallel concurrency=2 ignoreErrors=true {\n  sleep ms=1\n}`, "parallel");
  assert.equal(p1.ignoreErrors, true);
  assert.deepEqual(p1.concurrency, { kind: "literal", value: 2, line: 1, column: 22 });
  const p2 = only(`parallel {\n  sleep ms=1\n} concurrency=3 ignoreErrors=false`, "parallel");
  assert.equal(p2.ignoreErrors, false);
  assert.equal((p2.concurrency as { value: number }).value, 3);
});

Deno.test("steps: basic and extended forms, alias, nested, return forms, jump, control words", () => {
  const script = parseScript(`
step "Basic" {
  step id="x" desc="Extended" type="task" onError="retry=2" -> alias {
    return a b, total=(a + b)
  }
  jump to="x"
  jump to=x
  stop
  skip
}`);
  const basic = script.body[0];
  assert.equal(basic.kind, "step");
  if (basic.kind !== "step") return;
  assert.deepEqual([basic.id, basic.autoId, basic.desc], ["", true, "Basic"]);
  const inner = basic.children[0];
  assert.equal(inner.kind, "step");
  if (inner.kind !== "step") return;
  assert.deepEqual(
    [inner.id, inner.desc, inner.type, inner.errorPolicy, inner.alias, inner.line, inner.column],
    ["x", "Extended", "task", { kind: "retry", count: 2 }, "alias", 3, 3],
  );
  const ret = inner.children[0];
  assert.equal(ret.kind, "return");
  if (ret.kind === "return") assert.deepEqual(ret.entries.map((e) => e.key), ["a", "b", "total"]);
  assert.deepEqual(
    basic.children.slice(1).map((s) => s.kind === "jump" ? `jump ${s.target}` : s.kind),
    [
      "jump x",
      "jump x",
      "stop",
      "skip",
    ],
  );
});

Deno.test("plan header: plan { … } block or @ lines; unquoted values run to the end of the line", () => {
  const block = parseScript(`plan {
  @title "Onboarding Plan"
  @summary Create accounts and schedule training
  @version 0.1
  @params "keyword,item"
  step id="setup" { var 1 -> x }
}`);
  assert.equal(block.planBlock, true);
  assert.deepEqual(block.meta.map((m) => [m.key, m.value, m.line]), [
    ["title", "Onboarding Plan", 2],
    ["summary", "Create accounts and schedule training", 3],
    ["version", "0.1", 4],
    ["params", "keyword,item", 5],
  ]);
  assert.equal(block.body.length, 1);
  const lines = parseScript(`@title Quick # not a comment here\n@since "2025-01-01"\nvar 1 -> x`);
  assert.deepEqual(lines.meta.map((m) => [m.key, m.value]), [
    ["title", "Quick # not a comment here"],
    ["since", "2025-01-01"],
  ]);
  assert.equal(lines.planBlock, false);
});

Deno.test("expressions: precedence, comparisons, logic, EXISTS, paths with indexes", () => {
  const e = parseExpression(`not a > 1 + 2 * 3 and b EXISTS or c NOT_EXISTS`);
  // ((not (a > (1 + (2 * 3)))) and (b EXISTS)) or (c NOT_EXISTS)
  assert.equal(e.kind, "binary");
  if (e.kind !== "binary") return;
  assert.equal(e.op, "or");
  assert.equal(e.left.kind, "binary");
  assert.equal(e.right.kind, "exists");
  const p = parseExpression(`rows[i + 1].name`);
  assert.equal(p.kind, "path");
  if (p.kind === "path") {
    assert.equal(p.text, "rows[i + 1].name");
    assert.deepEqual(p.segments.map((s) => s.kind), ["index", "prop"]);
  }
});

Deno.test("placeholders: ... and <word> parse as statements that do nothing", () => {
  const script = parseScript(`step "x" {\n  ...\n}\nstep "y" { <statements> }`);
  const kinds = script.body.map((s) => s.kind === "step" ? s.children.map((c) => c.kind) : []);
  assert.deepEqual(kinds, [["placeholder"], ["placeholder"]]);
});

Deno.test("every node has a line and column", () => {
  const script = parseScript(`@title "T"
step id="a" {
  var [1, {"k": x}] -> y
  if y.count > 0 and not done { print "n", y }
}`);
  const missing: string[] = [];
  const visit = (node: unknown, path: string) => {
    if (Array.isArray(node)) return node.forEach((n, i) => visit(n, `${path}[${i}]`));
    if (node === null || typeof node !== "object") return;
    const o = node as Record<string, unknown>;
    if ("kind" in o && (typeof o.line !== "number" || typeof o.column !== "number")) {
      missing.push(path);
    }
    for (const [k, v] of Object.entries(o)) if (k !== "parent") visit(v, `${path}.${k}`);
  };
  visit(script, "script");
  assert.deepEqual(missing, []);
});

Deno.test("syntax errors: line, caret column and what was expected", () => {
  const cases: [string, number, number, string][] = [
    ['step id="a" {\n  var 1 -> x', 2, 13, '"}" to close the step block opened at line 1'],
    [
      'step id="a"\n  var 1 -> x',
      2,
      3,
      'id="…", desc="…", type="…", onError="…", "-> alias" or "{"',
    ],
    ["math add a= -> x", 1, 13, "a value (number, string, JSON, variable or (expression))"],
    ["if x = 1 { }", 1, 6, '"==" (or another comparison operator)'],
    ["if { }", 1, 4, "a condition after if"],
    ["each x items { }", 1, 8, '"in" (each item in list)'],
    ["jump step1", 1, 6, 'to="stepId" after jump'],
    ["var -> x", 1, 5, "a value after var (e.g. var 0 -> total)"],
    ["math add a=1 b=2 c", 1, 18, "the end of the line (one statement per line)"],
    ["math add a=x + 1", 1, 14, "the end of the line (one statement per line)"],
    ["} ", 1, 1, "a statement"],
    ["else { }", 1, 1, "a statement"],
    ['var 1 -> x\n@title "late"', 2, 1, "a statement"],
    ["parallel limit=2 { }", 1, 10, 'concurrency=N, ignoreErrors=true or "{"'],
    ["return", 1, 7, "at least one value to return (return key=value or return name)"],
    ["var [1, 2 -> x", 1, 11, '"," or "]" in the list opened at line 1, column 5'],
    ['var {"a" 1} -> x', 1, 10, '":" after the key "a"'],
    ["set a.b = 1", 1, 6, '"=" (set name = value)'],
    ["x = 1", 1, 3, "a statement: set x = … updates a variable, var … -> x creates one"],
    ["math add a=1 ->", 1, 16, 'a variable name after "->"'],
    ['print "x" -> 5', 1, 14, 'a variable name after "->"'],
  ];
  for (const [source, line, column, expected] of cases) {
    const e = syntaxError(source);
    assert.deepEqual([e.line, e.column, e.expected], [line, column, expected], source);
    assert.equal(e.code, "QPLAN_SYNTAX");
  }
});

Deno.test("a syntax error renders the line with a caret under the column", () => {
  const e = syntaxError(`step id="a" {\n  math add a=1 b=2 -> \n}`);
  assert.equal(
    e.render(),
    [
      'Syntax error at line 3, column 1: expected a variable name after "->", found "}"',
      "  3 | }",
      "    | ^",
    ].join("\n"),
  );
  const tab = syntaxError(`step id="a" {\n\tvar 1 -> x y\n}`);
  assert.equal(
    tab.render().split("\n").slice(1).join("\n"),
    "  2 | \tvar 1 -> x y\n    | \t           ^",
  );
});

Deno.test("nesting deeper than the limit is a syntax error, not a stack overflow", () => {
  const deep = `var ${"(".repeat(500)}1${")".repeat(500)} -> x`;
  assert.match(syntaxError(deep).message, /nesting is too deep/);
  const blocks = `${"if true { ".repeat(300)}${"} ".repeat(300)}`;
  assert.match(syntaxError(blocks).message, /nesting is too deep/);
  // Long operator chains are refused too (evaluating them would need a deep stack).
  const chain = `var ${Array(20_000).fill("1").join(" + ")} -> x`;
  assert.match(
    syntaxError(chain).message,
    /the statement is too long \(more than 1000 operators\)/,
  );
  assert.equal(parseScript(`var ${Array(1000).fill("1").join(" + ")} -> x`).body.length, 1);
});
