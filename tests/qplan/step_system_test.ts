/**
 * The step system: resolver (ids, order, paths), error policies, jumps, nested paths, return
 * forms, aliases, stop and skip — each with its exact event sequence and final ctx[runId].
 */
import assert from "node:assert/strict";
import { createQPlanRegistry, parseScript, resolveSteps, runScript } from "../../src/qplan/mod.ts";
import { parseStepErrorPolicy } from "../../src/qplan/step/step_parser.ts";
import { recorder, stepLines } from "./helpers.ts";

async function run(source: string, params: Record<string, unknown> = {}) {
  const rec = recorder();
  const result = await runScript(source, {
    events: rec.events,
    params,
    registry: createQPlanRegistry({ print: () => {} }),
  });
  return { result, log: stepLines(rec.log), full: rec.log, infos: rec.infos };
}

Deno.test("resolver: ids, pre-order numbers, paths, parents, generated ids avoid taken ones", () => {
  const script = parseScript(`
step id="a" desc="Alpha" {
  step "Inner" {
    step id="c" { var 1 -> x }
  }
}
step "Second" { var 2 -> y }
step id="step_4" { var 3 -> z }`);
  const res = resolveSteps(script);
  assert.deepEqual(
    res.steps.map((s) => [s.node.id, s.node.order, s.node.path, s.depth, s.parentId ?? null]),
    [
      ["a", 1, ["Alpha"], 0, null],
      ["step_2", 2, ["Alpha", "Inner"], 1, "a"],
      ["c", 3, ["Alpha", "Inner", "c"], 2, "step_2"],
      ["step_4_2", 4, ["Second"], 0, null],
      ["step_4", 5, ["step_4"], 0, null],
    ],
  );
  assert.equal(res.steps[2].node.parent?.id, "step_2");
  assert.deepEqual(res.roots.map((r) => r.node.id), ["a", "step_4_2", "step_4"]);
  assert.deepEqual(res.steps[0].outputs, []);
  assert.deepEqual(res.steps[2].outputs, ["x"]);
  // parent is not enumerable: the AST stays printable.
  assert.doesNotThrow(() => JSON.stringify(script));
});

Deno.test("onError parsing: fail, continue, retry=N, jump in three quotings; junk is undefined", () => {
  assert.deepEqual(parseStepErrorPolicy("fail"), { kind: "fail" });
  assert.deepEqual(parseStepErrorPolicy(" CONTINUE "), { kind: "continue" });
  assert.deepEqual(parseStepErrorPolicy("retry=3"), { kind: "retry", count: 3 });
  assert.deepEqual(parseStepErrorPolicy("retry = 0"), { kind: "retry", count: 0 });
  assert.deepEqual(parseStepErrorPolicy('jump="cleanup"'), { kind: "jump", target: "cleanup" });
  assert.deepEqual(parseStepErrorPolicy("jump='cleanup'"), { kind: "jump", target: "cleanup" });
  assert.deepEqual(parseStepErrorPolicy("jump=cleanup"), { kind: "jump", target: "cleanup" });
  assert.equal(parseStepErrorPolicy("retry"), undefined);
  assert.equal(parseStepErrorPolicy("jump="), undefined);
  assert.equal(parseStepErrorPolicy("sometimes"), undefined);
});

const FAILING = `math div a=1 b=0 -> bad`;

Deno.test("policy fail (default): error event, no end event, the plan ends with status error", async () => {
  const { result, log, full } = await run(`
step id="a" { var 1 -> one }
step id="b" {
  var 2 -> two
  ${FAILING}
  var 3 -> three
}
step id="c" { var 4 -> four }`);
  assert.equal(result.status, "error");
  assert.deepEqual(log, ["start:a", 'end:a {"one":1}', "start:b", "error:b"]);
  assert.equal(full.at(-2), "state:running->failed");
  assert.deepEqual(result.results, { a: { one: 1 } });
  assert.deepEqual(result.vars, { one: 1, two: 2 });
  assert.deepEqual(result.error, {
    message: "Module 'math' failed: math div: division by zero (b is 0) (line 5, step 'b')",
    line: 5,
    column: 3,
    stepId: "b",
    code: "QPLAN_RUNTIME",
  });
});

Deno.test("policy continue: end with undefined result, later outputs unset, plan goes on", async () => {
  const { result, log } = await run(`
step id="b" onError="continue" {
  var 2 -> two
  ${FAILING}
  var 3 -> three
}
step id="c" { var 4 -> four }`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, ["start:b", "error:b", "end:b", "start:c", 'end:c {"four":4}']);
  assert.deepEqual(result.results, { c: { four: 4 } });
  assert.deepEqual(result.vars, { two: 2, four: 4 });
  assert.equal(result.failures[0].handledBy, "continue");
});

Deno.test("policy retry=N: N retries, onStepStart on every attempt; success on a later attempt", async () => {
  const { result, log } = await run(`
var 0 -> tries
step id="flaky" onError="retry=3" {
  set tries = tries + 1
  if tries < 3 {
    ${FAILING}
  }
  return tries=tries
}`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:flaky",
    "error:flaky",
    "retry:flaky:1",
    "start:flaky",
    "error:flaky",
    "retry:flaky:2",
    "start:flaky",
    'end:flaky {"tries":3}',
  ]);
  assert.deepEqual(result.results, { flaky: { tries: 3 } });
});

Deno.test("policy retry=0 behaves like fail", async () => {
  const { result, log } = await run(`step id="x" onError="retry=0" { ${FAILING} }`);
  assert.equal(result.status, "error");
  assert.deepEqual(log, ["start:x", "error:x"]);
});

Deno.test("policy jump: error, jump event, execution resumes at the target; steps between are skipped", async () => {
  const { result, log } = await run(`
step id="a" onError="jump='cleanup'" {
  var 1 -> before
  ${FAILING}
}
step id="skipped" { var 2 -> never }
step id="cleanup" { var 3 -> cleaned }
step id="after" { var 4 -> last }`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:a",
    "error:a",
    "jump:a->cleanup",
    "start:cleanup",
    'end:cleanup {"cleaned":3}',
    "start:after",
    'end:after {"last":4}',
  ]);
  assert.deepEqual(result.results, { cleanup: { cleaned: 3 }, after: { last: 4 } });
  assert.equal(result.vars.never, undefined);
});

Deno.test("jump statement: the jumping step gets onStepJump and no onStepEnd", async () => {
  const { result, log } = await run(`
step id="a" {
  var 1 -> x
  jump to="c"
  var 2 -> y
}
step id="b" { var 3 -> z }
step id="c" { var 4 -> w }`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, ["start:a", "jump:a->c", "start:c", 'end:c {"w":4}']);
  assert.deepEqual(result.vars, { x: 1, w: 4 });
});

Deno.test("backward jump makes a loop; a counter ends it", async () => {
  const { result, log } = await run(`
var 0 -> n
step id="again" {
  set n = n + 1
}
step id="check" {
  if n < 3 {
    jump to="again"
  }
}`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:again",
    "end:again",
    "start:check",
    "jump:check->again",
    "start:again",
    "end:again",
    "start:check",
    "jump:check->again",
    "start:again",
    "end:again",
    "start:check",
    "end:check",
  ]);
  assert.equal(result.vars.n, 3);
});

Deno.test("jump into a nested step: the parent starts, earlier siblings are skipped", async () => {
  const { result, log } = await run(`
step id="first" { jump to="deep" }
step id="outer" {
  step id="sib" { var 1 -> skipped }
  step id="deep" { var 2 -> reached }
  step id="next" { var 3 -> after }
}`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:first",
    "jump:first->deep",
    "start:outer",
    "start:deep",
    'end:deep {"reached":2}',
    "start:next",
    'end:next {"after":3}',
    // Only nested steps: the last action's raw value (QPLAN.md), not next's result object.
    "end:outer 3",
  ]);
  assert.deepEqual(Object.keys(result.results), ["deep", "next", "outer"]);
});

Deno.test("jump out of a nested step: every step left gets onStepJump", async () => {
  const { log } = await run(`
step id="outer" {
  step id="inner" { jump to="out" }
  step id="never" { var 1 -> x }
}
step id="out" { var 2 -> y }`);
  assert.deepEqual(log, [
    "start:outer",
    "start:inner",
    "jump:inner->out",
    "jump:outer->out",
    "start:out",
    'end:out {"y":2}',
  ]);
});

Deno.test("jump to a step inside an if branch enters the branch without testing the condition", async () => {
  const { result, log } = await run(`
step id="a" { jump to="hidden" }
if false {
  step id="hidden" { var 1 -> found }
}
step id="z" { var 2 -> end }`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:a",
    "jump:a->hidden",
    "start:hidden",
    'end:hidden {"found":1}',
    "start:z",
    'end:z {"end":2}',
  ]);
});

Deno.test("jump to a sibling step inside a loop body continues the same iteration there", async () => {
  const { result, log } = await run(`
var [1, 2] -> items
var 0 -> sum
each item in items {
  step id="s1" { jump to="s3" }
  step id="s2" { set sum = sum + 100 }
  step id="s3" { set sum = sum + item }
}`);
  assert.equal(result.status, "completed");
  assert.equal(result.vars.sum, 3);
  assert.deepEqual(log, [
    "start:s1",
    "jump:s1->s3",
    "start:s3",
    "end:s3",
    "start:s1",
    "jump:s1->s3",
    "start:s3",
    "end:s3",
  ]);
});

Deno.test("return forms: key=expr, shorthand names, commas, mixed", async () => {
  const { result } = await run(`
step id="r" {
  var 1 -> gear
  var [1, 2] -> accounts
  math add a=gear b=2 -> sum
  return gear, accounts, total=sum doubled=(sum * 2)
}`);
  assert.deepEqual(result.results, {
    r: { gear: 1, accounts: [1, 2], total: 3, doubled: 6 },
  });
});

Deno.test("without return: outputs of the step's own actions (nested excluded); else the last value", async () => {
  const { result } = await run(`
step id="outer" {
  var 1 -> mine
  step id="inner" { var 2 -> theirs }
}
step id="plain" {
  print "no outputs"
}
step id="parent" {
  step id="child" { return v=7 }
}`);
  assert.deepEqual(result.results.outer, { mine: 1 });
  assert.deepEqual(result.results.inner, { theirs: 2 });
  assert.equal(result.results.plain, "no outputs");
  assert.deepEqual(result.results.child, { v: 7 });
  // `return` is not an action: a parent whose nested step only returns has no result of its own.
  assert.equal(Object.hasOwn(result.results, "parent"), false);
});

Deno.test("without return, only nested steps: the last action's raw value, not the nested result", async () => {
  const { result, log } = await run(`
step id="child2" {
  step id="grand" { var 2 -> g }
}
step id="deep" {
  step id="mid" {
    var 1 -> a
    step id="leaf" { math add a=a b=9 -> sum }
  }
}`);
  assert.equal(result.status, "completed");
  assert.deepEqual(result.results.grand, { g: 2 });
  assert.equal(result.results.child2, 2);
  // mid has an output of its own; deep takes the raw value of the last action run inside it.
  assert.deepEqual(result.results.mid, { a: 1 });
  assert.equal(result.results.deep, 10);
  assert.ok(log.includes("end:child2 2"), log.join("\n"));
});

Deno.test("alias: the result is stored under the alias and mirrored under the step id", async () => {
  const { result, log } = await run(`
step id="load" desc="Load" -> data {
  var [3, 4] -> rows
  return rows=rows count=rows.count
}
step id="use" {
  math add a=data.count b=load.count -> total
  return total=total
}`);
  assert.equal(result.status, "completed");
  assert.deepEqual(result.results, {
    data: { rows: [3, 4], count: 2 },
    load: { rows: [3, 4], count: 2 },
    use: { total: 4 },
  });
  assert.equal(result.results.data, result.results.load);
  assert.deepEqual(log[1], 'end:load {"rows":[3,4],"count":2}');
});

Deno.test("skip ends the current step only; stop ends the plan with status stopped", async () => {
  const { result, log, full } = await run(`
step id="a" {
  var 1 -> x
  skip
  var 2 -> y
}
step id="b" {
  step id="b1" {
    stop
  }
  var 3 -> z
}
step id="c" { var 4 -> w }`);
  assert.equal(result.status, "stopped");
  assert.equal(result.error, undefined);
  assert.deepEqual(log, ["start:a", "end:a", "start:b", "start:b1", "end:b1", "end:b"]);
  assert.equal(full.at(-1), "plan:end:stopped");
  assert.deepEqual(result.vars, { x: 1 });
  assert.deepEqual(result.results, {});
});

Deno.test("a child's failure meets its own policy first, then the parent's", async () => {
  const { result, log } = await run(`
step id="parent" onError="jump=recover" {
  step id="child" onError="retry=1" {
    ${FAILING}
  }
}
step id="recover" { var "ok" -> state }`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:parent",
    "start:child",
    "error:child",
    "retry:child:1",
    "start:child",
    "error:child",
    "error:parent",
    "jump:parent->recover",
    "start:recover",
    'end:recover {"state":"ok"}',
  ]);
});

Deno.test("stepInfo carries runId, type, depth, parentStepId and the policy", async () => {
  const { infos } = await run(`
step id="p" type="group" desc="Parent" onError="continue" {
  step id="k" type="task" onError="retry=2" { var 1 -> x }
}`);
  assert.deepEqual(infos.map((i) => ({ ...i, runId: typeof i.runId })), [
    {
      runId: "string",
      stepId: "p",
      desc: "Parent",
      type: "group",
      order: 1,
      path: ["Parent"],
      depth: 0,
      errorPolicy: { kind: "continue" },
    },
    {
      runId: "string",
      stepId: "k",
      desc: "k",
      type: "task",
      order: 2,
      path: ["Parent", "k"],
      depth: 1,
      parentStepId: "p",
      errorPolicy: { kind: "retry", count: 2 },
    },
  ]);
});

Deno.test("steps in loops: one start/end per iteration; ctx[runId] keeps the last result", async () => {
  const { result, log } = await run(`
var ["a", "b", "c"] -> names
each (name, i) in names {
  if name == "b" { continue }
  step id="visit" desc="Visit" {
    return name i
  }
}`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:visit",
    'end:visit {"name":"a","i":0}',
    "start:visit",
    'end:visit {"name":"c","i":2}',
  ]);
  assert.deepEqual(result.results, { visit: { name: "c", i: 2 } });
});

Deno.test("steps in parallel: they overlap; each result is stored", async () => {
  const { result, log } = await run(`
step id="both" {
  parallel {
    step id="slow" { sleep ms=30 -> s }
    step id="fast" { sleep ms=1 -> f }
  }
}`);
  assert.equal(result.status, "completed");
  assert.deepEqual(log, [
    "start:both",
    "start:slow",
    "start:fast",
    'end:fast {"f":1}',
    'end:slow {"s":30}',
    "end:both 30",
  ]);
  assert.deepEqual(result.results, {
    fast: { f: 1 },
    slow: { s: 30 },
    // No outputs of its own: the raw value of the last action that finished (slow's sleep).
    both: 30,
  });
});

Deno.test("futures across steps: started in one step, joined in another", async () => {
  const { result, log } = await run(`
step id="start" {
  future task="a" delay=5 value=1 -> fa
  future task="b" delay=1 value=2 -> fb
}
step id="collect" {
  join futures="fa,fb" -> values
  math sum arr=values -> total
  return values total
}`);
  assert.equal(result.status, "completed");
  assert.equal(log[0], "start:start");
  assert.match(log[1], /^end:start \{"fa":\{\},"fb":\{\}\}$/);
  assert.deepEqual(log.slice(2), ["start:collect", 'end:collect {"values":[1,2],"total":3}']);
  assert.deepEqual(result.results.collect, { values: [1, 2], total: 3 });
  assert.ok((result.results.start as Record<string, unknown>).fa instanceof Promise);
});
