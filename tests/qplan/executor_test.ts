/**
 * The executor: expressions, variables, loops, parallel, futures, params, execution control
 * (pause / resume / abort / timeout), approvals, and the argument fast path.
 */
import assert from "node:assert/strict";
import { z } from "zod";
import { ToolRegistry } from "../../src/tools/registry.ts";
import { createArgChecker } from "../../src/qplan/core/arg_check.ts";
import {
  createQPlanRegistry,
  QPlanFuture,
  type QPlanToolRegistry,
  RunControl,
  runScript,
  type RunScriptOptions,
} from "../../src/qplan/mod.ts";
import { recorder, stepLines } from "./helpers.ts";
import { loopControl } from "../../src/qplan/core/executor.ts";
import { BREAK, CONTINUE, STOP } from "../../src/qplan/step/step_signals.ts";

function registryWith(...tools: Parameters<ToolRegistry["register"]>[0][]): QPlanToolRegistry {
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  return createQPlanRegistry({ registry, print: () => {} });
}

async function run(source: string, options: RunScriptOptions = {}) {
  const result = await runScript(source, {
    registry: createQPlanRegistry({ print: () => {} }),
    ...options,
  });
  return result;
}

Deno.test("expressions: + joins text, arithmetic precedence, comparisons, logic, EXISTS", async () => {
  const r = await run(`
var "x" + 1 + 2 -> joined
var 1 + 2 * 3 - (4 - 2) / 2 -> arithmetic
var "10" - 3 -> coerced
var [1, 2, 3] -> list
var list.length + list.count -> sizes
var {"a": {"b": [5, 6]}} -> obj
var obj.a.b[1] -> deep
var 2 > 1 and not (3 <= 2) or false -> logic
var "" EXISTS -> emptyExists
var missingVar NOT_EXISTS -> missing
var null EXISTS -> nullExists
var 0 EXISTS -> zeroExists
var 5 == "5" -> loose
var "abc" -> text
var text.length -> textLength
`);
  assert.equal(r.status, "completed", r.error?.message);
  assert.deepEqual(r.vars, {
    joined: "x12",
    arithmetic: 6,
    coerced: 7,
    list: [1, 2, 3],
    sizes: 6,
    obj: { a: { b: [5, 6] } },
    deep: 6,
    logic: true,
    emptyExists: false,
    missing: true,
    nullExists: false,
    zeroExists: true,
    loose: true,
    text: "abc",
    textLength: 3,
  });
});

Deno.test("an expression that cannot be computed fails with its line and column", async () => {
  const r = await run(`step id="s" {\n  var "a" - 1 -> x\n}`);
  assert.equal(r.status, "error");
  assert.deepEqual(r.error, {
    message: `operator '-' needs numbers, got "a" (line 2, step 's')`,
    line: 2,
    column: 11,
    stepId: "s",
    code: "QPLAN_RUNTIME",
  });
});

Deno.test("paths read own properties only", async () => {
  const r = await run(`var {"a": 1} -> o\nvar o.constructor -> c\nvar o.__proto__ -> p`);
  assert.equal(r.status, "completed");
  assert.equal(r.vars.c, undefined);
  assert.equal(r.vars.p, undefined);
});

Deno.test("each: item and index, break and continue, loop variables remain afterwards", async () => {
  const r = await run(`
var [1, 2, 3, 4, 5, 6] -> nums
var 0 -> sum
each (n, i) in nums {
  if n == 2 { continue }
  if n == 5 { break }
  set sum = sum + n
}
var 0 -> pairs
each a in [1, 2] {
  each b in [1, 2, 3] {
    if b == 2 { break }
    set pairs = pairs + 1
  }
}
var "" -> letters
each ch in "ab" { set letters = letters + ch + "." }`);
  assert.equal(r.status, "completed", r.error?.message);
  assert.equal(r.vars.sum, 1 + 3 + 4);
  assert.equal(r.vars.n, 5);
  assert.equal(r.vars.i, 4);
  assert.equal(r.vars.pairs, 2);
  assert.equal(r.vars.letters, "a.b.");
});

Deno.test("each over something that is not a list names it", async () => {
  const r = await run(`step id="s" {\n  var {"a": 1} -> obj\n  each x in obj { var x -> y }\n}`);
  assert.equal(r.status, "error");
  assert.equal(
    r.error?.message,
    "each needs a list, but 'obj' is an object (use json keys/values/entries for objects) (line 3, step 's')",
  );
});

Deno.test("while with a counter; break and continue", async () => {
  const r = await run(`
var 0 -> n
var 0 -> odd
while n < 10 {
  set n = n + 1
  if n == 8 { break }
  if n == 2 or n == 4 or n == 6 { continue }
  set odd = odd + 1
}`);
  assert.equal(r.status, "completed");
  assert.deepEqual([r.vars.n, r.vars.odd], [8, 4]);
});

Deno.test("break and continue in loops whose body waits (the async path of while and each)", async () => {
  const r = await run(`
var 0 -> n
var 0 -> odd
while n < 10 {
  sleep ms=0
  set n = n + 1
  if n == 8 { break }
  if n == 1 or n == 2 or n == 4 { continue }
  set odd = odd + 1
}
var 0 -> sum
each (v, i) in [1, 2, 3, 4, 5, 6] {
  sleep ms=0
  if v == 1 or v == 3 { continue }
  if v == 5 { break }
  set sum = sum + v
}
var 0 -> first
each v in [1, 2, 3] {
  sleep ms=0
  break
}
each v in [7, 8] {
  sleep ms=0
  set first = v
  continue
}`);
  assert.equal(r.status, "completed", r.error?.message);
  assert.deepEqual([r.vars.n, r.vars.odd], [8, 4]);
  assert.deepEqual([r.vars.sum, r.vars.i], [2 + 4, 4]);
  assert.equal(r.vars.first, 8);
});

Deno.test("loopControl: break ends the loop, continue goes on, anything else leaves it", () => {
  assert.equal(loopControl(BREAK), "break");
  assert.equal(loopControl(CONTINUE), "continue");
  const error = new Error("boom");
  assert.throws(() => loopControl(error), (thrown) => thrown === error);
  assert.throws(() => loopControl(STOP), (thrown) => thrown === STOP);
});

Deno.test("params are variables; @params names must be passed", async () => {
  const ok = await run(
    `@params "who, times"\nvar "hi " + who -> greeting\nvar times * 2 -> twice`,
    {
      params: { who: "Ann", times: 3 },
    },
  );
  assert.deepEqual([ok.status, ok.vars.greeting, ok.vars.twice], ["completed", "hi Ann", 6]);
  const missing = await run(`@params "who, times"\nvar 1 -> x`, { params: { who: "Ann" } });
  assert.equal(missing.status, "error");
  assert.equal(missing.error?.code, "QPLAN_PARAMS");
  assert.equal(missing.error?.line, 1);
  assert.match(missing.error!.message, /missing required param 'times'/);
});

Deno.test("scripts that do not parse or validate are reported, not thrown", async () => {
  const syntax = await run(`step id="a" {`);
  assert.equal(syntax.status, "error");
  assert.equal(syntax.error?.code, "QPLAN_SYNTAX");
  assert.deepEqual([syntax.error?.line, syntax.error?.column], [1, 14]);
  const invalid = await run(`step id="a" { jump to="b" }\nstep id="a" { var 1 -> x }`);
  assert.equal(invalid.status, "error");
  assert.equal(invalid.error?.code, "QPLAN_INVALID");
  assert.equal(
    invalid.error?.message,
    "line 1: jump target 'b' not found (and 1 more problem)",
  );
  assert.equal(invalid.issues.filter((i) => i.severity === "error").length, 2);
});

/**
 * A tool that sleeps `ms` and records how many calls overlap. With `after`, a call waits for the
 * call of that id to finish instead, `ms` bounding the wait (an event, not a race with the clock).
 */
function concurrencyProbe() {
  let running = 0;
  const stats = { max: 0, calls: [] as string[] };
  const finished = new Map<string, PromiseWithResolvers<void>>();
  const finishOf = (id: string) => {
    if (!finished.has(id)) finished.set(id, Promise.withResolvers<void>());
    return finished.get(id)!;
  };
  const tool = {
    name: "work",
    description: "test tool",
    inputSchema: z.strictObject({
      id: z.string(),
      ms: z.number(),
      fail: z.boolean().optional(),
      after: z.string().optional(),
    }),
    async execute(
      { id, ms, fail, after }: { id: string; ms: number; fail?: boolean; after?: string },
    ) {
      running++;
      stats.max = Math.max(stats.max, running);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise((r) => timer = setTimeout(r, ms)),
        ...(after === undefined ? [] : [finishOf(after).promise]),
      ]);
      clearTimeout(timer);
      running--;
      stats.calls.push(id);
      finishOf(id).resolve();
      if (fail) throw new Error(`work ${id} failed`);
      return id;
    },
  };
  return { tool, stats };
}

Deno.test("parallel: statements overlap up to concurrency; all outputs are kept", async () => {
  const { tool, stats } = concurrencyProbe();
  // `a` holds one slot until `d` has finished: the other slot takes b, c and d meanwhile. A pool
  // run in batches of two would hold d back until a ends (after 10 s), and a would not end last.
  const r = await runScript(
    `parallel concurrency=2 {
  work id="a" ms=10000 after="d" -> a
  work id="b" ms=1 -> b
  work id="c" ms=1 -> c
  work id="d" ms=1 -> d
}`,
    { registry: registryWith(tool) },
  );
  assert.equal(r.status, "completed");
  assert.equal(stats.max, 2);
  assert.deepEqual([r.vars.a, r.vars.b, r.vars.c, r.vars.d], ["a", "b", "c", "d"]);
  assert.equal(stats.calls[stats.calls.length - 1], "a");
});

Deno.test("parallel ignoreErrors=true drops failing statements and keeps the others' outputs", async () => {
  const { tool } = concurrencyProbe();
  const r = await runScript(
    `step id="p" {
  parallel {
    work id="ok1" ms=1 -> x
    work id="bad" ms=1 fail=true -> y
    work id="ok2" ms=3 -> z
  } ignoreErrors=true
}`,
    { registry: registryWith(tool) },
  );
  assert.equal(r.status, "completed");
  assert.deepEqual(r.results.p, { x: "ok1", z: "ok2" });
  assert.equal(r.vars.y, undefined);
  assert.deepEqual(r.failures.map((f) => [f.stepId, f.handledBy, f.line]), [[
    "p",
    "ignoreErrors",
    4,
  ]]);
});

Deno.test("parallel without ignoreErrors: the others finish, then the first error fails the step", async () => {
  const { tool, stats } = concurrencyProbe();
  const r = await runScript(
    `step id="p" {
  parallel {
    work id="slow" ms=15 -> x
    work id="bad" ms=1 fail=true -> y
  }
}`,
    { registry: registryWith(tool) },
  );
  assert.equal(r.status, "error");
  assert.match(r.error!.message, /Module 'work' failed: work bad failed \(line 4, step 'p'\)/);
  assert.deepEqual(stats.calls.sort(), ["bad", "slow"]);
  assert.equal(r.vars.x, "slow");
});

Deno.test("parallel concurrency must be a whole number of at least 1", async () => {
  const r = await run(`step id="s" {\n  parallel concurrency=0 { var 1 -> x }\n}`);
  assert.equal(r.status, "error");
  assert.match(
    r.error!.message,
    /parallel concurrency must be a whole number of at least 1, got 0/,
  );
});

Deno.test("future and join: promises stored, values returned in the order named", async () => {
  const r = await run(`
step id="f" {
  future task="slow" delay=20 value="S" -> f1
  future task="fast" delay=1 -> f2
  future value=[1, 2] -> f3
  join futures="f1, f2,f3" -> all
  return all=all
}`);
  assert.equal(r.status, "completed", r.error?.message);
  assert.deepEqual(r.results.f, { all: ["S", "done:fast", [1, 2]] });
  assert.ok(r.vars.f1 instanceof Promise);
});

Deno.test("join names what is wrong; a future that is never joined ends with the run", async () => {
  const r = await run(`step id="j" {\n  var 5 -> notFuture\n  join futures="notFuture" -> x\n}`);
  assert.equal(r.status, "error");
  assert.match(r.error!.message, /join: 'notFuture' is not a future \(it holds 5\)/);
  // Never joined: the timer is cancelled when the run ends (the test sanitizer would fail otherwise).
  const left = await run(`future delay=60000 -> never`);
  assert.equal(left.status, "completed");
});

Deno.test("custom tools may return a QPlanFuture", async () => {
  const tool = {
    name: "later",
    description: "returns a future",
    inputSchema: z.strictObject({ v: z.number() }),
    execute: ({ v }: { v: number }) => new QPlanFuture(Promise.resolve(v * 10)),
  };
  const r = await runScript(`later v=4 -> f\njoin futures=f -> out`, {
    registry: registryWith(tool),
  });
  assert.deepEqual(r.vars.out, [40]);
});

Deno.test("pause before the next statement, resume later; events in order", async () => {
  const control = new RunControl();
  const rec = recorder({ results: false });
  let resumedAt = 0;
  const marks: number[] = [];
  const mark = {
    name: "mark",
    description: "records the time",
    inputSchema: z.strictObject({}),
    execute: () => void marks.push(performance.now()),
  };
  const r = await runScript(`step id="a" { mark }\nstep id="b" { mark }`, {
    registry: registryWith(mark),
    control,
    events: [rec.events, {
      onStepEnd: (info) => {
        if (info.stepId !== "a") return;
        control.pause();
        assert.equal(control.state, "paused");
        setTimeout(() => {
          resumedAt = performance.now();
          control.resume();
        }, 30);
      },
    }],
  });
  assert.equal(r.status, "completed");
  assert.ok(marks[1] >= resumedAt, "the statement after the pause waited for resume");
  assert.deepEqual(rec.log, [
    "state:idle->running",
    "plan:start:2",
    "start:a",
    "end:a",
    "state:running->paused",
    "pause",
    "state:paused->running",
    "resume",
    "start:b",
    "end:b",
    "state:running->completed",
    "plan:end:completed",
  ]);
  assert.equal(control.state, "completed");
});

Deno.test("abort: the tool in flight is cancelled, status aborted, onAbort and the state change", async () => {
  const control = new RunControl();
  const rec = recorder({ results: false });
  const started = performance.now();
  setTimeout(() => control.abort("user pressed stop"), 20);
  const r = await run(`step id="s" {\n  sleep ms=10000\n  var 1 -> never\n}`, {
    control,
    events: rec.events,
  });
  assert.ok(performance.now() - started < 2000);
  assert.equal(r.status, "aborted");
  assert.deepEqual(r.error, {
    message: "QPlan run aborted: user pressed stop",
    code: "QPLAN_ABORTED",
  });
  assert.deepEqual(rec.log, [
    "state:idle->running",
    "plan:start:1",
    "start:s",
    "state:running->aborted",
    "abort",
    "plan:end:aborted",
  ]);
  assert.equal(r.vars.never, undefined);
});

Deno.test("abort through the caller's signal; an already-aborted signal runs nothing", async () => {
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error("shutdown")), 10);
  const r = await run(`sleep ms=10000`, { signal: ac.signal });
  assert.equal(r.status, "aborted");
  assert.equal(r.error?.message, "QPlan run aborted: shutdown");
  const rec = recorder();
  const early = await run(`step id="a" { var 1 -> x }`, {
    signal: AbortSignal.abort(),
    events: rec.events,
  });
  assert.equal(early.status, "aborted");
  assert.deepEqual(stepLines(rec.log), ["abort"]);
});

Deno.test("timeout: onTimeout, state timeout, status aborted with QPLAN_TIMEOUT", async () => {
  const rec = recorder({ results: false });
  const r = await run(`step id="s" { sleep ms=10000 }`, { timeoutMs: 25, events: rec.events });
  assert.equal(r.status, "aborted");
  assert.deepEqual(r.error, { message: "QPlan run timed out after 25 ms", code: "QPLAN_TIMEOUT" });
  assert.deepEqual(rec.log.slice(-3), ["state:running->timeout", "timeout", "plan:end:aborted"]);
});

Deno.test("an abort or timeout is never retried, continued or jumped over by a policy", async () => {
  for (const policy of ["retry=5", "continue", "jump=after"]) {
    const rec = recorder({ results: false });
    const r = await run(
      `step id="s" onError="${policy}" { sleep ms=10000 }\nstep id="after" { var 1 -> x }`,
      {
        timeoutMs: 20,
        events: rec.events,
      },
    );
    assert.equal(r.status, "aborted", policy);
    assert.deepEqual(stepLines(rec.log), ["start:s", "timeout"], policy);
    assert.deepEqual(r.failures, []);
  }
});

Deno.test("a busy synchronous loop still yields: the timeout ends it", async () => {
  const started = performance.now();
  const r = await run(`var 0 -> n\nwhile true {\n  set n = n + 1\n}`, { timeoutMs: 60 });
  assert.equal(r.status, "aborted");
  assert.equal(r.error?.code, "QPLAN_TIMEOUT");
  assert.ok((r.vars.n as number) > 1000);
  assert.ok(performance.now() - started < 3000);
  const empty = await run(`while true { }`, { timeoutMs: 30 });
  assert.equal(empty.status, "aborted");
});

Deno.test("tools that require approval: refused without approve, asked with it", async () => {
  const calls: string[] = [];
  const risky = {
    name: "risky",
    description: "needs approval",
    requiresApproval: true,
    inputSchema: z.strictObject({ what: z.string() }),
    execute: ({ what }: { what: string }) => void calls.push(what),
  };
  const source = `step id="s" {\n  risky what="x"\n}`;
  const none = await runScript(source, { registry: registryWith(risky) });
  assert.equal(none.status, "error");
  assert.match(none.error!.message, /Module 'risky' requires approval/);
  const denied = await runScript(source, { registry: registryWith(risky), approve: () => false });
  assert.match(denied.error!.message, /Module 'risky' was not approved/);
  const asked: unknown[] = [];
  const allowed = await runScript(source, {
    registry: registryWith(risky),
    approve: (req) => {
      asked.push(req);
      return true;
    },
  });
  assert.equal(allowed.status, "completed");
  assert.deepEqual(asked, [{ tool: "risky", args: { what: "x" }, stepId: "s", line: 2 }]);
  assert.deepEqual(calls, ["x"]);
});

Deno.test("needsApproval(args) decides per call; its reason reaches approve", async () => {
  const written: string[] = [];
  const careful = {
    name: "careful",
    description: "asks only for some arguments",
    inputSchema: z.strictObject({ path: z.string() }),
    needsApproval: ({ path }: { path: string }) =>
      path === "keep.txt" ? "it would overwrite keep.txt" : false,
    execute: ({ path }: { path: string }) => void written.push(path),
  };
  const source = `careful path="new.txt"\ncareful path="keep.txt"`;
  const refused = await runScript(source, { registry: registryWith(careful) });
  assert.equal(refused.status, "error");
  assert.match(
    refused.error!.message,
    /Module 'careful' requires approval \(it would overwrite keep.txt\)/,
  );
  assert.deepEqual(written, ["new.txt"]);
  const reasons: (string | undefined)[] = [];
  const ok = await runScript(source, {
    registry: registryWith(careful),
    approve: (req) => {
      reasons.push(req.reason);
      return true;
    },
  });
  assert.equal(ok.status, "completed");
  assert.deepEqual(reasons, ["it would overwrite keep.txt"]);
  assert.deepEqual(written, ["new.txt", "new.txt", "keep.txt"]);
});

Deno.test("invalid arguments are reported with the zod issue and the line", async () => {
  const r = await run(`step id="s" {\n  math op="pow" a=1 b=2 -> x\n}`);
  assert.equal(r.status, "error");
  assert.match(r.error!.message, /^Module 'math' got invalid arguments: op: Invalid option/);
  assert.equal(r.error?.line, 2);
  const extra = await run(`math add a=1 b=2 c=3 -> x`);
  assert.match(extra.error!.message, /Unrecognized key: "c"/);
});

Deno.test("fast path: a shape is cached only after zod accepted it unchanged; other shapes re-check", () => {
  const schema = z.strictObject({ op: z.enum(["add"]), a: z.number(), b: z.unknown().optional() });
  let parses = 0;
  const counting = {
    safeParse: (v: unknown) => {
      parses++;
      return schema.safeParse(v);
    },
    _zod: (schema as unknown as { _zod: unknown })._zod,
  };
  const checker = createArgChecker(counting, ["a", "b"]);
  assert.equal(checker.cacheable, true);
  assert.equal(checker.check({ op: "add", a: 1, b: 2 }).ok, true);
  assert.equal(checker.check({ op: "add", a: 5, b: 9 }).ok, true);
  assert.equal(parses, 1, "the second call with the same types skipped zod");
  assert.equal(checker.check({ op: "add", a: "x", b: 2 }).ok, false);
  assert.equal(checker.check({ op: "add", a: Number.NaN, b: 2 }).ok, false);
  assert.equal(parses, 3);
  // A refinement on a dynamic argument disables the cache for that site.
  const refined = createArgChecker(z.strictObject({ ms: z.number().min(0) }), ["ms"]);
  assert.equal(refined.cacheable, false);
  assert.equal(refined.check({ ms: 1 }).ok, true);
  assert.equal(refined.check({ ms: -1 }).ok, false);
  // fastPath=false always parses.
  assert.equal(createArgChecker(schema, ["a"], false).cacheable, false);
});

Deno.test("fast path on and off give the same results", async () => {
  const source =
    `var [1, 2, 3, 4] -> nums\nvar 0 -> total\neach n in nums {\n  math add a=total b=n -> total\n}`;
  const on = await run(source);
  const off = await run(source, { fastPath: false });
  assert.deepEqual([on.vars.total, off.vars.total], [10, 10]);
});
