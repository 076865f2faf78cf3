/**
 * Every validation message of QPLAN.md (and the others the validator adds), with its line.
 */
import assert from "node:assert/strict";
import { createQPlanRegistry, renderIssues, validateScript } from "../../src/qplan/mod.ts";

function messages(source: string, params: string[] = []) {
  return validateScript(source, { params, registry: createQPlanRegistry() }).issues.map((
    i,
  ) => [i.severity, i.message, i.line]);
}

Deno.test("missing or invalid step id", () => {
  assert.deepEqual(messages(`step desc="No id" { var 1 -> x }`), [
    ["error", 'step requires id="<identifier>"', 1],
  ]);
  assert.deepEqual(messages(`step id="1abc" { var 1 -> x }`), [
    ["error", 'step requires id="<identifier>"', 1],
  ]);
  assert.deepEqual(messages(`step id="a-b" { var 1 -> x }`), [
    ["error", 'step requires id="<identifier>"', 1],
  ]);
  assert.deepEqual(messages(`step id="if" { var 1 -> x }`), [
    ["error", 'step requires id="<identifier>"', 1],
  ]);
  assert.deepEqual(messages(`step { var 1 -> x }`), [
    ["error", 'step requires id="<identifier>"', 1],
  ]);
  // The seed's basic form and Unicode ids are fine.
  assert.deepEqual(messages(`step "Basic" { var 1 -> x }\nstep id="읽기" { var 2 -> y }`), []);
});

Deno.test("duplicate ids name both lines", () => {
  assert.deepEqual(messages(`step id="a" { var 1 -> x }\n\nstep id="a" { var 2 -> y }`), [
    ["error", "Duplicate step id 'a' (lines 1 and 3)", 3],
  ]);
});

Deno.test("jump targets that do not exist (statement and onError policy)", () => {
  assert.deepEqual(messages(`step id="a" {\n  jump to="nowhere"\n}`), [
    ["error", "jump target 'nowhere' not found", 2],
  ]);
  assert.deepEqual(messages(`step id="a" onError="jump='gone'" { var 1 -> x }`), [
    ["error", "step 'a' has onError jump target 'gone' but no such step exists", 1],
  ]);
});

Deno.test("jumps that would enter a loop or a parallel block part-way", () => {
  assert.deepEqual(
    messages(
      `step id="a" { jump to="inside" }\nvar [1] -> xs\neach x in xs {\n  step id="inside" { var 1 -> y }\n}`,
    ),
    [["error", "jump to 'inside' would enter the each loop at line 3 part-way", 1]],
  );
  assert.deepEqual(
    messages(`parallel {\n  step id="p1" { jump to="p2" }\n  step id="p2" { var 1 -> y }\n}`),
    [["error", "jump to 'p2' would enter the parallel block at line 1 part-way", 2]],
  );
});

Deno.test("variables used before definition, naming the step", () => {
  assert.deepEqual(messages(`step id="s" {\n  return total=missing + 1\n}`), [
    ["error", "variable 'missing' (step 's') is not defined", 2],
  ]);
  assert.deepEqual(messages(`if later > 1 { var 1 -> x }\nvar 2 -> later`), [
    ["error", "variable 'later' is not defined", 1],
  ]);
  assert.deepEqual(messages(`step id="a" {\n  math add a=(b.x) b=1 -> y\n}`), [
    ["error", "variable 'b.x' (step 'a') is not defined", 2],
  ]);
  // A later step's id is not defined yet; an earlier one is.
  assert.deepEqual(messages(`step id="a" { return v=b.x }\nstep id="b" { return x=1 }`), [
    ["error", "variable 'b.x' (step 'a') is not defined", 1],
  ]);
  assert.deepEqual(messages(`step id="b" { return x=1 }\nstep id="a" { return v=b.x }`), []);
  // Params and @params count as defined.
  assert.deepEqual(messages(`step id="a" { return v=limit }`, ["limit"]), []);
  assert.deepEqual(messages(`@params "limit"\nstep id="a" { return v=limit }`), []);
  // Loop variables remain defined after the loop.
  assert.deepEqual(messages(`var [1] -> xs\neach (x, i) in xs { var x -> y }\nvar i -> last`), []);
  // EXISTS may test something never defined (a warning, not an error).
  assert.deepEqual(messages(`if maybe EXISTS { var 1 -> x }`), [
    ["warning", "variable 'maybe' is not defined", 1],
  ]);
});

Deno.test("var without -> name", () => {
  assert.deepEqual(messages(`var 5`), [["error", "var requires '-> outputVar'", 1]]);
});

Deno.test("set of a variable that does not exist", () => {
  assert.deepEqual(messages(`step id="a" {\n  set total = 1\n}`), [
    ["error", "set target 'total' does not exist", 2],
  ]);
});

Deno.test("unknown, duplicate and malformed plan meta", () => {
  assert.deepEqual(messages(`@title "T"\n@author "me"\nvar 1 -> x`), [
    ["error", "unknown plan meta '@author'", 2],
  ]);
  assert.deepEqual(messages(`plan {\n  @title "A"\n  @title "B"\n  var 1 -> x\n}`), [
    ["error", "plan meta '@title' is given twice (lines 2 and 3)", 3],
  ]);
  assert.deepEqual(messages(`@params "a,,1b"\nvar 1 -> x`), [
    ["error", "@params contains an empty entry", 1],
    ["error", "@params contains invalid identifier '1b'", 1],
  ]);
});

Deno.test("misplaced return, skip, break, continue", () => {
  assert.deepEqual(messages(`return x=1`), [["error", "return is only allowed inside a step", 1]]);
  assert.deepEqual(messages(`skip`), [["error", "skip is only allowed inside a step", 1]]);
  assert.deepEqual(messages(`step id="a" {\n  break\n}`), [
    ["error", "break is only allowed inside an each or while loop (of the same step)", 2],
  ]);
  assert.deepEqual(
    messages(`var [1] -> xs\neach x in xs {\n  step id="a" {\n    continue\n  }\n}`),
    [["error", "continue is only allowed inside an each or while loop (of the same step)", 4]],
  );
});

Deno.test("step attributes: unknown, repeated; invalid onError; alias clashing with an id", () => {
  assert.deepEqual(messages(`step id="a" retries="3" { var 1 -> x }`), [
    ["error", "unknown step attribute 'retries' on step 'a'", 1],
  ]);
  assert.deepEqual(messages(`step id="a" id="b" { var 1 -> x }`), [
    ["error", "step attribute 'id' is given twice on step 'b'", 1],
  ]);
  assert.deepEqual(messages(`step id="a" onError="sometimes" { var 1 -> x }`), [
    ["error", `step 'a' has invalid onError "sometimes"`, 1],
  ]);
  assert.deepEqual(messages(`step id="a" onErorr="fail" { var 1 -> x }`), [
    ["error", "unknown step attribute 'onErorr' on step 'a' (did you mean 'onError'?)", 1],
  ]);
  assert.deepEqual(messages(`step id="a" onError="jmp=\\"a\\"" { var 1 -> x }`), [
    ["error", `step 'a' has invalid onError "jmp="a"" (did you mean "jump="a""?)`, 1],
  ]);
  assert.deepEqual(messages(`@titel "x"\nvar 1 -> x`), [
    ["error", "unknown plan meta '@titel' (did you mean '@title'?)", 1],
  ]);
  assert.deepEqual(messages(`step id="a" { var 1 -> x }\nstep id="b" -> a { var 2 -> y }`), [
    ["error", "step 'b' stores its result as 'a', which is the id of the step at line 1", 2],
  ]);
});

Deno.test("reserved words as names; unknown modules; bare words; placeholders", () => {
  assert.deepEqual(messages(`var 1 -> step`), [
    ["error", "'step' is a QPlan keyword and cannot be used as a name", 1],
  ]);
  assert.deepEqual(messages(`fetch url="x" -> page`), [["error", "unknown module 'fetch'", 1]]);
  assert.deepEqual(messages(`prnt "x"\njmp to="a"`), [
    ["error", "unknown module 'prnt' (did you mean 'print'?)", 1],
    ["error", "unknown module 'jmp' (did you mean the 'jump' statement?)", 2],
  ]);
  assert.deepEqual(messages(`time format=iso -> now`), [
    ["warning", `'iso' is not a variable here; format=iso passes the text "iso"`, 1],
  ]);
  assert.deepEqual(messages(`step id="a" {\n  ...\n}`), [
    ["warning", "placeholder '...' does nothing", 2],
  ]);
});

Deno.test("syntax errors come back as one issue with line, column and what was expected", () => {
  const v = validateScript(`step id="a" {\n  math add a=1 ->\n}`);
  assert.equal(v.ok, false);
  assert.deepEqual(v.issues, [{
    severity: "error",
    code: "syntax",
    message: 'Syntax error at line 3, column 1: expected a variable name after "->", found "}"',
    line: 3,
    column: 1,
    hint: 'expected a variable name after "->"',
  }]);
});

Deno.test("renderIssues shows the line with a caret and the hint", () => {
  const source = `step id="a" {\n  set total = 1\n}`;
  assert.equal(
    renderIssues(source, validateScript(source).issues),
    [
      "error at line 2, column 3: set target 'total' does not exist",
      "  2 |   set total = 1",
      "    |   ^",
      "  hint: Create it first (var … -> total); set only updates existing variables.",
    ].join("\n"),
  );
});
