import assert from "node:assert/strict";
import {
  answerForm,
  AnswerFormError,
  assembleAnswer,
  intentFieldProblem,
} from "../../src/definition/answer_form.ts";

Deno.test("answer form: each leaf is asked by its kind; nested objects are walked", () => {
  const form = answerForm({
    type: "object",
    required: ["next_action", "ok"],
    properties: {
      next_action: {
        type: "object",
        required: ["action"],
        properties: { action: { enum: ["next", "abort"] }, reason: { type: "string" } },
      },
      ok: { type: "boolean", default: true },
      count: { type: "integer" },
      ratio: { type: "number" },
      files: { type: "array", items: { type: "string" } },
      anything: {},
      fixed: { const: "v1" },
    },
  });
  assert.deepEqual(
    form.fields.map((f) => `${f.name}:${f.kind}:${f.required}`),
    [
      "next_action.action:choice:true",
      "next_action.reason:string:false",
      "ok:boolean:true",
      "count:integer:false",
      "ratio:number:false",
      "files:json:false",
      "anything:json:false",
      "fixed:choice:false",
    ],
  );
  assert.deepEqual(form.fields[0].choices, ["next", "abort"]);
  assert.equal(form.fields[2].default, true);
  assert.equal(intentFieldProblem(form, "next_action.action"), undefined);
  assert.match(intentFieldProblem(form, "ok")!, /asked as boolean/);
  assert.match(intentFieldProblem(form, "missing")!, /not a field of the answer schema/);
});

Deno.test("answer form: schemas a form cannot lay out are refused with the reason", () => {
  const many = Object.fromEntries([...Array(51)].map((_, i) => [`f${i}`, {}]));
  const refused: Array<[unknown, RegExp]> = [
    [{ type: "string" }, /must be an object with "properties"/],
    [{ anyOf: [] }, /uses "anyOf"/],
    [{ type: "object", properties: {} }, /no properties to ask/],
    [{ type: "object", properties: many }, /more than 50 fields/],
    [null, /not a schema object/],
  ];
  for (const [schema, message] of refused) {
    assert.throws(() => answerForm(schema), (e: unknown) => {
      assert.ok(e instanceof AnswerFormError);
      assert.match((e as Error).message, message);
      return true;
    });
  }
});

Deno.test("answer form: values assemble into the answer object; names are data", () => {
  const form = answerForm({
    type: "object",
    properties: {
      a: { type: "object", properties: { b: { type: "string" }, c: { type: "number" } } },
      constructor: { type: "string" },
    },
  });
  const answer = assembleAnswer(
    form,
    new Map<string, unknown>([["a.b", "x"], ["constructor", "y"], ["a.c", undefined]]),
  );
  assert.deepEqual(JSON.parse(JSON.stringify(answer)), { a: { b: "x" }, constructor: "y" });
  assert.ok(Object.hasOwn(answer, "constructor"));
});
