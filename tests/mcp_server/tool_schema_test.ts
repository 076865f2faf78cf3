/**
 * The MCP tool schema generated from agent.json `parameters`, and the check of a client's
 * arguments against it (untrusted input: wrong types, inherited names, huge values).
 */
import assert from "node:assert/strict";
import type { ParameterDefinition } from "../../src/definition/schema.ts";
import { StepflowError } from "../../src/errors.ts";
import {
  checkAnswerValue,
  checkToolArguments,
  MAX_ANSWER_DEPTH,
  MAX_ANSWER_NODES,
  MAX_ARRAY_ARGUMENT,
  MAX_STRING_ARGUMENT,
  parametersInputSchema,
} from "../../src/mcp_server/tool_schema.ts";

const PARAMETERS: Record<string, ParameterDefinition> = {
  topic: { type: "string", description: "What it is about", required: true },
  depth: { type: "number", enum: [1, 2, 3], default: 2 },
  dryRun: { type: "boolean" },
  labels: { type: "array", items: "string", enum: ["bug", "docs"] },
  ids: { type: "array", items: "number" },
};

function problemOf(input: unknown, parameters = PARAMETERS): string {
  try {
    checkToolArguments("demo", parameters, input);
  } catch (error) {
    assert.ok(error instanceof StepflowError);
    assert.equal(error.code, "MCP_ARGUMENTS_INVALID");
    return error.message;
  }
  throw new Error("the arguments were accepted");
}

Deno.test("mcp tool schema: each parameter a property of its type, required without default", () => {
  const schema = parametersInputSchema(PARAMETERS);
  assert.deepEqual(schema.type, "object");
  assert.deepEqual(schema.additionalProperties, false);
  assert.deepEqual(schema.required, ["topic"]);
  assert.deepEqual(schema.properties.topic, {
    type: "string",
    description: "What it is about",
    maxLength: MAX_STRING_ARGUMENT,
  });
  assert.deepEqual(schema.properties.depth, { type: "number", default: 2, enum: [1, 2, 3] });
  assert.deepEqual(schema.properties.dryRun, { type: "boolean" });
  assert.deepEqual(schema.properties.labels, {
    type: "array",
    items: { type: "string", enum: ["bug", "docs"] },
    maxItems: MAX_ARRAY_ARGUMENT,
  });
  assert.deepEqual(schema.properties.ids.items, { type: "number" });
  assert.deepEqual(schema.properties.input_text.type, "string");
});

Deno.test("mcp tool schema: no parameters is an object schema with input_text only", () => {
  const schema = parametersInputSchema({});
  assert.deepEqual(Object.keys(schema.properties), ["input_text"]);
  assert.deepEqual(schema.required, undefined);
});

Deno.test("mcp tool schema: an agent's own input_text parameter replaces the built-in one", () => {
  const schema = parametersInputSchema({ input_text: { type: "number" } });
  assert.deepEqual(schema.properties.input_text, { type: "number" });
  assert.deepEqual(
    checkToolArguments("demo", { input_text: { type: "number" } }, { input_text: 4 }),
    {
      args: Object.assign(Object.create(null), { input_text: 4 }),
    },
  );
});

Deno.test("mcp arguments: typed values pass, defaults apply, input_text is set apart", () => {
  const { args, inputText } = checkToolArguments("demo", PARAMETERS, {
    topic: "rain",
    dryRun: false,
    labels: ["bug"],
    ids: [1, 2],
    input_text: "from the client",
  });
  assert.deepEqual({ ...args }, {
    topic: "rain",
    dryRun: false,
    labels: ["bug"],
    ids: [1, 2],
    depth: 2,
  });
  assert.deepEqual(inputText, "from the client");
  assert.deepEqual(Object.getPrototypeOf(args), null);
});

Deno.test("mcp arguments: every problem is listed, naming the argument", () => {
  const message = problemOf({ depth: 5, dryRun: "yes", labels: "bug", ids: [1, "x"] });
  assert.ok(message.includes("depth: must be one of 1, 2, 3, got number 5"), message);
  assert.ok(message.includes('dryRun: expects true or false, got "yes"'), message);
  assert.ok(message.includes('labels: expects a list, got "bug"'), message);
  assert.ok(message.includes('ids: element 1 expects a number, got "x"'), message);
  assert.ok(message.includes("topic: required, but not given"), message);
});

Deno.test("mcp arguments: inherited and unknown names are refused, with the nearest one", () => {
  for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
    const input = JSON.parse(`{"topic":"x","${name}":1}`);
    assert.ok(problemOf(input).includes(`"${name}" is not a parameter of agent "demo"`), name);
  }
  assert.ok(problemOf({ topic: "x", topics: "y" }).includes('(did you mean "topic"?)'));
});

Deno.test("mcp arguments: non-finite numbers, null, objects and non-object arguments are refused", () => {
  assert.ok(problemOf({ topic: "x", depth: null }).includes("depth: expects a number, got null"));
  assert.ok(problemOf({ topic: { deep: [] } }).includes("topic: expects a string, got an object"));
  assert.ok(problemOf([1, 2]).includes("the arguments must be an object, got a list"));
  assert.ok(problemOf("text").includes("the arguments must be an object"));
  assert.deepEqual({ ...checkToolArguments("demo", {}, undefined).args }, {});
});

Deno.test("mcp arguments: huge strings and lists and deep values are refused without recursion", () => {
  const long = "x".repeat(MAX_STRING_ARGUMENT + 1);
  assert.ok(problemOf({ topic: long }).includes(`is ${long.length} characters long`));
  assert.ok(problemOf({ topic: "x", input_text: long }).includes("input_text: is"));
  const many = Array.from({ length: MAX_ARRAY_ARGUMENT + 1 }, () => 1);
  assert.ok(problemOf({ topic: "x", ids: many }).includes("elements; at most"));
  let deep: unknown = [];
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.ok(
    problemOf({ topic: "x", ids: deep }).includes("ids: element 0 expects a number, got a list"),
  );
  // A message never quotes a huge value.
  assert.ok(problemOf({ topic: long }).length < 500);
});

function answerProblem(value: unknown): string | undefined {
  try {
    checkAnswerValue(value);
    return undefined;
  } catch (error) {
    assert.ok(error instanceof StepflowError);
    assert.equal(error.code, "MCP_ARGUMENTS_INVALID");
    return error.message;
  }
}

Deno.test("checkAnswerValue: any bounded JSON passes; deep, huge, non-JSON values are refused with where", () => {
  assert.equal(answerProblem({ decision: "next", note: "go", list: [1, true, null] }), undefined);
  assert.equal(answerProblem("yes"), undefined);
  assert.equal(answerProblem(JSON.parse('{"constructor":{"__proto__":1}}')), undefined);
  let deep: unknown = "leaf";
  for (let i = 0; i < MAX_ANSWER_DEPTH; i++) deep = [deep];
  assert.equal(answerProblem(deep), undefined);
  assert.match(answerProblem([deep])!, /nested deeper than 64 levels/);
  let deeper: unknown = 1;
  for (let i = 0; i < 200_000; i++) deeper = { a: deeper }; // no recursion: no stack overflow
  assert.match(answerProblem(deeper)!, /^Invalid arguments for answer_run: value(\.a)+: nested/);
  assert.match(
    answerProblem({ note: "x".repeat(MAX_STRING_ARGUMENT + 1) })!,
    /value\.note: is 1048577 characters long/,
  );
  assert.match(
    answerProblem({ list: new Array(MAX_ARRAY_ARGUMENT + 1).fill(0) })!,
    /value\.list: has 10001 elements/,
  );
  const wide = Object.fromEntries(
    Array.from({ length: 20 }, (_, i) => [`k${i}`, new Array(MAX_ANSWER_NODES / 10).fill(0)]),
  );
  assert.match(answerProblem(wide)!, /holds more than 100000 values/);
  assert.match(answerProblem(undefined)!, /value: expects JSON, got undefined/);
  assert.match(answerProblem({ n: Infinity })!, /value\.n: expects a finite number/);
});
