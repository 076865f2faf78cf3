import assert from "node:assert/strict";
import { collectRefs, parseRef, type RefLookup, resolveRefs } from "../../src/plan/refs.ts";
import type { StepflowError } from "../../src/errors.ts";

const values = new Map<string, unknown>([
  ["step_1", { a: { b: ["first", "second"] }, n: 3, list: [{ name: "x" }] }],
  ["step_2", "plain text"],
  ["step-3", [10, 20]],
]);
const lookup: RefLookup = (id) =>
  values.has(id) ? { found: true, value: values.get(id) } : { found: false };

Deno.test("parseRef reads ids, keys and indexes", () => {
  assert.deepEqual(parseRef("$step_1.a.b[0]"), {
    stepId: "step_1",
    path: ["a", "b", 0],
    text: "$step_1.a.b[0]",
  });
  assert.deepEqual(parseRef("$step-3[1]")?.path, [1]);
  assert.equal(parseRef("$5.00"), undefined);
  assert.equal(parseRef("price: $step_1"), undefined);
});

Deno.test("whole-string refs keep their type, anywhere inside the args", () => {
  const args = {
    whole: "$step_1",
    part: "$step_1.a.b[1]",
    num: "$step_1.n",
    nested: { deep: ["$step_2", { x: "$step-3[0]" }] },
    untouched: { k: "no refs", n: 1 },
  };
  const out = resolveRefs(args, lookup, "s");
  assert.deepEqual(out, {
    whole: values.get("step_1"),
    part: "second",
    num: 3,
    nested: { deep: ["plain text", { x: 10 }] },
    untouched: { k: "no refs", n: 1 },
  });
  assert.equal(out.untouched, args.untouched, "unchanged branches are not copied");
  assert.deepEqual(args.nested.deep[0], "$step_2", "the input is not modified");
});

Deno.test("${ref} inside text is interpolated; $$ escapes a literal $", () => {
  const out = resolveRefs(
    {
      text: "Count: ${step_1.n}, first: ${step_1.a.b[0]}, list: ${step-3}",
      home: "$$HOME",
      dollars: "$$${step_1.n}",
      literal: "cost $${not_a_ref} and $5",
    },
    lookup,
    "s",
  );
  assert.deepEqual(out, {
    text: "Count: 3, first: first, list: [10,20]",
    home: "$HOME",
    dollars: "$3",
    literal: "cost ${not_a_ref} and $5",
  });
});

Deno.test("unresolvable refs fail with the step, the ref and what is missing", () => {
  const message = (args: unknown) => {
    try {
      resolveRefs(args, lookup, "step_9");
      return "resolved";
    } catch (e) {
      assert.equal((e as StepflowError).code, "REF_UNRESOLVED");
      return (e as Error).message;
    }
  };
  assert.match(
    message({ x: "$nope" }),
    /Step "step_9": cannot resolve \$nope: step "nope" has no result/,
  );
  assert.match(message({ x: "$step_1.a.c" }), /\$step_1\.a has no key "c"; its keys are: b/);
  assert.match(
    message({ x: "$step_1.a.b[5]" }),
    /\$step_1\.a\.b has no index 5 \(it is a list of 2\)/,
  );
  assert.match(
    message({ x: "$step_2.length" }),
    /\$step_2 is the text "plain text", so it has no "length"/,
  );
  assert.match(message({ x: "$step_1.constructor" }), /has no key "constructor"/);
});

Deno.test("collectRefs finds whole and embedded refs with their arg paths", () => {
  const found = collectRefs({ a: "$x.y", b: ["t ${z} ${w[0]}"], c: "$$x", d: "$${x}" });
  assert.deepEqual(found.map((f) => [f.ref.stepId, f.argPath, f.whole]), [
    ["x", ["a"], true],
    ["z", ["b", 0], false],
    ["w", ["b", 0], false],
  ]);
});
