import assert from "node:assert/strict";
import {
  askStructured,
  boundDepth,
  exceedsDepth,
  excerpt,
  judgeAnswer,
  MAX_OUTPUT_DEPTH,
  readSchemaAnswer,
  rejectAnswer,
  SCHEMA_MISMATCH,
} from "../../src/engine/ask_structured.ts";
import { z } from "zod";
import { ScriptedBackend } from "../../src/llm/scripted.ts";

/** `[[[…]]]` `depth` levels deep, built without recursion. */
function deepArray(depth: number): unknown[] {
  const root: unknown[] = [];
  let node = root;
  for (let i = 1; i < depth; i++) {
    const child: unknown[] = [];
    node.push(child);
    node = child;
  }
  return root;
}

Deno.test("exceedsDepth and boundDepth are iterative: a million levels do not overflow", () => {
  const deep = deepArray(1_000_000);
  assert.equal(exceedsDepth(deep, MAX_OUTPUT_DEPTH), true);
  assert.equal(exceedsDepth(deepArray(64), 64), false);
  assert.equal(exceedsDepth(deepArray(65), 64), true);
  assert.equal(exceedsDepth("text", 0), false);
  const bounded = boundDepth(deep, 3);
  assert.deepEqual(bounded, [[["[nested deeper than 3 levels: omitted]"]]]);
  const small = { a: [1, { b: 2 }] };
  assert.equal(boundDepth(small, 10), small, "within the limit: the value itself");
  // "__proto__" stays a data key in the copy.
  const proto = JSON.parse('{"__proto__": {"x": {"y": {}}}}');
  const copy = boundDepth(proto, 2) as Record<string, unknown>;
  assert.ok(Object.hasOwn(copy, "__proto__"));
  assert.equal(Object.getPrototypeOf(copy), Object.prototype);
});

Deno.test("judgeAnswer says what was wrong in words a model can act on", () => {
  const any = () => [];
  const reason = (text: string) => {
    const judged = judgeAnswer({ text }, any);
    return judged.ok ? "ok" : judged.rejection.reason;
  };
  assert.equal(reason(""), "your answer was empty");
  assert.equal(reason("Sure, done!"), "your answer contained no JSON object");
  assert.match(reason('{"a": 1,'), /^your answer is not valid JSON: /);
  assert.equal(reason('Here: {"a": 1}'), "ok");
  const deep = judgeAnswer({ text: "", structuredOutput: deepArray(100) }, any);
  assert.ok(!deep.ok && /deeper than 64 levels/.test(deep.rejection.reason));
  const many = judgeAnswer({ text: "{}" }, () => Array.from({ length: 50 }, (_, i) => `e${i}`));
  assert.ok(!many.ok);
  assert.equal(many.rejection.errors.length, 21);
  assert.equal(many.rejection.errors[20], "… and 30 more");
});

Deno.test("askStructured re-asks once with the reason, then gives up with the last answer", async () => {
  const backend = new ScriptedBackend(["no json", '{"n": "one"}', '{"n": 1}']);
  const reasks: string[] = [];
  const validate = (v: unknown) =>
    typeof (v as { n?: unknown }).n === "number" ? [] : ["/n: must be number"];
  const request = {
    kind: "step" as const,
    agent: "a",
    stepId: "s",
    iteration: 1,
    prompt: "Count.",
    cwd: ".",
  };
  const failed = await askStructured({
    request,
    call: (r) => backend.complete(r),
    validate,
    onReask: (info) => void reasks.push(`${info.attempt}:${info.reason}:${info.answer.text}`),
  });
  assert.equal(failed.ok, false);
  assert.deepEqual(reasks, ["1:your answer contained no JSON object:no json"]);
  assert.equal(
    backend.calls[1].prompt,
    "Count.\n\n---\nYour previous answer was rejected: your answer contained no JSON object.\n" +
      "Answer again with only a JSON object that matches the required JSON schema exactly.",
  );
  assert.ok(!failed.ok && failed.errors[0] === "/n: must be number");
  assert.deepEqual(failed.answer, excerpt('{"n": "one"}', 100));
  const ok = await askStructured({ request, call: (r) => backend.complete(r), validate });
  assert.ok(ok.ok && ok.reasks === 0);
});

Deno.test("judgeAnswer: past the extraction's bounds the re-ask says which bound, without a re-parse", () => {
  const deep = '{"a":'.repeat(200_000);
  const started = performance.now();
  const judged = judgeAnswer({ text: deep }, () => []);
  assert.ok(performance.now() - started < 2_000, "the 1 MB deep text is not parsed again");
  assert.equal(judged.ok, false);
  assert.match(
    !judged.ok ? judged.rejection.reason : "",
    /^the JSON is nested more than 10,000 levels deep; answer with a flatter object$/,
  );
  const plain = judgeAnswer({ text: "no json here" }, () => []);
  assert.equal(!plain.ok && plain.rejection.reason, "your answer contained no JSON object");
});

Deno.test("askStructured with read and expected: any answer format shares the loop and the re-ask prompt", async () => {
  const backend = new ScriptedBackend(["Goal missing", "Goal: g"]);
  const request = {
    kind: "step" as const,
    agent: "a",
    stepId: "s",
    iteration: 1,
    prompt: "Write a plan.",
    cwd: ".",
  };
  const asked = await askStructured({
    request,
    call: (r) => backend.complete(r),
    read: (response) =>
      response.text.startsWith("Goal:")
        ? { ok: true, value: response.text.slice(5).trim() }
        : { ok: false, rejection: rejectAnswer("your plan is not valid", ["line 1: no Goal:"]) },
    expected: "the whole corrected plan",
  });
  assert.ok(asked.ok && asked.value === "g" && asked.reasks === 1);
  assert.equal(
    backend.calls[1].prompt,
    "Write a plan.\n\n---\nYour previous answer was rejected: your plan is not valid.\n" +
      "- line 1: no Goal:\nAnswer again with only the whole corrected plan.",
  );
  assert.equal(backend.calls[1].kind, "reask");
});

Deno.test("readSchemaAnswer: parsed value, schema findings, then the caller's check", () => {
  const schema = z.object({ n: z.number(), tag: z.string().default("none") });
  const formatIssue = (i: { path: PropertyKey[]; message: string }) =>
    `${i.path.map(String).join(".")}: ${i.message}`;
  const ok = readSchemaAnswer({ text: '{"n": 1, "extra": true}' }, schema, { formatIssue });
  assert.deepEqual(ok, { ok: true, value: { n: 1, tag: "none" } });
  const bad = readSchemaAnswer({ text: '{"n": "one"}' }, schema, { formatIssue });
  assert.equal(!bad.ok && bad.rejection.reason, SCHEMA_MISMATCH);
  assert.match(!bad.ok ? bad.rejection.errors[0] : "", /^n: /);
  const checked = readSchemaAnswer({ structuredOutput: { n: 0 }, text: "" }, schema, {
    formatIssue,
    check: (v) => v.n > 0 ? [] : ["n must be positive"],
    checkReason: "your count could not be used",
  });
  assert.deepEqual(checked, {
    ok: false,
    rejection: { reason: "your count could not be used", errors: ["n must be positive"] },
  });
  const none = readSchemaAnswer({ text: "no json" }, schema, { formatIssue });
  assert.equal(!none.ok && none.rejection.reason, "your answer contained no JSON object");
});

Deno.test("rejectAnswer quotes at most 20 findings", () => {
  const many = rejectAnswer("r", Array.from({ length: 25 }, (_, i) => `e${i}`));
  assert.equal(many.errors.length, 21);
  assert.equal(many.errors[20], "… and 5 more");
});
