/** The one onError grammar (src/on_error.ts) and each engine's subset of it. */
import assert from "node:assert/strict";
import {
  FLOW_ON_ERROR,
  onErrorTextPattern,
  parseOnErrorPolicy,
  PLAN_ON_ERROR,
  QPLAN_ON_ERROR,
} from "../src/on_error.ts";

Deno.test("step flows: fail, continue, retry=N, jump=<id> and the object forms; no recover", () => {
  const parse = (v: unknown) => parseOnErrorPolicy(v, FLOW_ON_ERROR);
  assert.deepEqual(parse(undefined), { kind: "fail" });
  assert.deepEqual(parse("continue"), { kind: "continue" });
  assert.deepEqual(parse("retry=3"), { kind: "retry", count: 3 });
  assert.deepEqual(parse('jump="a b"'), { kind: "jump", target: "a b" });
  assert.deepEqual(parse("jump='x'"), { kind: "jump", target: "x" });
  assert.deepEqual(parse("jump=x"), { kind: "jump", target: "x" });
  assert.deepEqual(parse({ retry: 2 }), { kind: "retry", count: 2 });
  assert.deepEqual(parse({ jump: "x" }), { kind: "jump", target: "x" });
  for (
    const bad of ["recover", "Retry=3", "retry = 3", 'jump=""', " fail", { recover: 2 }, null, 3]
  ) {
    assert.equal(parse(bad), undefined, JSON.stringify(bad));
  }
});

Deno.test("tool plans: recover and { retry, backoffMs }; no jump", () => {
  const parse = (v: unknown) => parseOnErrorPolicy(v, PLAN_ON_ERROR);
  assert.deepEqual(parse("fail"), { kind: "fail" });
  assert.deepEqual(parse("recover"), { kind: "recover" });
  assert.deepEqual(parse({ recover: 2 }), { kind: "recover", maxAttempts: 2 });
  assert.deepEqual(parse({ retry: 2, backoffMs: 5 }), { kind: "retry", count: 2, backoffMs: 5 });
  assert.deepEqual(parse("retry=0"), { kind: "retry", count: 0 });
  for (const bad of ["jump=x", { jump: "x" }, "RECOVER", { retry: "2" }]) {
    assert.equal(parse(bad), undefined, JSON.stringify(bad));
  }
});

Deno.test("QPlan: the relaxed script syntax, no objects, no recover", () => {
  const parse = (v: unknown) => parseOnErrorPolicy(v, QPLAN_ON_ERROR);
  assert.deepEqual(parse(" CONTINUE "), { kind: "continue" });
  assert.deepEqual(parse("Retry = '3'"), { kind: "retry", count: 3 });
  assert.deepEqual(parse('jump=" x "'), { kind: "jump", target: "x" });
  for (const bad of ['jump=" "', "recover", { retry: 1 }, "retry"]) {
    assert.equal(parse(bad), undefined, JSON.stringify(bad));
  }
});

Deno.test("the text patterns of the schemas come from the same forms", () => {
  assert.equal(
    onErrorTextPattern(FLOW_ON_ERROR).source,
    `^(fail|continue|retry=\\d+|jump=("[^"]+"|'[^']+'|[^"'\\s]+))$`,
  );
  assert.equal(onErrorTextPattern(PLAN_ON_ERROR).source, "^(fail|continue|recover|retry=\\d+)$");
  for (const text of ["fail", "continue", "retry=3", 'jump="x"', "jump='x'", "jump=x", "recover"]) {
    for (const dialect of [FLOW_ON_ERROR, PLAN_ON_ERROR]) {
      assert.equal(
        onErrorTextPattern(dialect).test(text),
        parseOnErrorPolicy(text, dialect) !== undefined,
        `${text} in ${dialect.forms.join(",")}`,
      );
    }
  }
});
