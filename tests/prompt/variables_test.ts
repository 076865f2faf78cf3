import assert from "node:assert/strict";
import {
  listRequiredVariables,
  listVariables,
  MissingVariablesError,
  substituteVariables,
} from "../../src/prompt/variables.ts";

Deno.test("every variable form is substituted", () => {
  const text = substituteVariables(
    "{uv-topic} | {uv-max_files} | {input_text} | {iteration} | {step_id} | {handoff.approach}",
    {
      uv: { topic: "auth", max_files: 3 },
      inputText: "from stdin",
      iteration: 2,
      stepId: "initial.issue",
      handoff: { approach: "inject a clock" },
    },
  );
  assert.equal(text, "auth | 3 | from stdin | 2 | initial.issue | inject a clock");
});

Deno.test("objects and lists are inserted as JSON; input_text falls back to args.input_text", () => {
  assert.equal(
    substituteVariables("{handoff.files} {handoff.issue} {input_text}", {
      uv: { input_text: "piped" },
      handoff: { files: ["a.ts", "b.ts"], issue: { id: 42 } },
    }),
    '["a.ts","b.ts"] {"id":42} piped',
  );
});

Deno.test("other brace text — JSON examples, unknown names, spaced braces — is left exactly as written", () => {
  const template = [
    '```json\n{ "result": "ok", "message": "All tests pass" }\n```',
    '{"next_action": {"action": "next"}}',
    "{topic} {uv topic} { uv-topic } {UV-topic} {handoff} {handoff.} {iteration } {{}}",
    "function f() { return {a: 1}; }",
  ].join("\n");
  assert.equal(substituteVariables(template, { uv: {} }), template);
  assert.deepEqual(listVariables(template), []);
});

Deno.test("a missing variable is an error listing every missing name, with how to supply it", () => {
  assert.throws(
    () =>
      substituteVariables(
        "{uv-topic} {uv-topic} {input_text} {handoff.approach} {uv-scope} {step_id} {iteration}",
        { uv: { topic: null } },
        { file: "/a/prompts/steps/x/y/f_default.md", stepId: "s_a8f3" },
      ),
    (error: unknown) => {
      assert.ok(error instanceof MissingVariablesError);
      assert.equal(error.code, "PROMPT_VARIABLES_MISSING");
      assert.deepEqual(error.missing, [
        "uv-topic",
        "input_text",
        "handoff.approach",
        "uv-scope",
        "step_id",
        "iteration",
      ]);
      assert.equal(
        error.message,
        [
          'Prompt /a/prompts/steps/x/y/f_default.md (step "s_a8f3") uses 6 variable(s) with no value:',
          "  {uv-topic} ← pass --topic <value> (or args.topic)",
          "  {input_text} ← pipe text on stdin (or args.input_text)",
          '  {handoff.approach} ← no earlier step handed off "approach" (check handoffFields, or write {handoff.approach?} to allow an empty value)',
          "  {uv-scope} ← pass --scope <value> (or args.scope)",
          "  {step_id}",
          "  {iteration}",
        ].join("\n"),
      );
      return true;
    },
  );
});

Deno.test("listVariables: names in order of first use", () => {
  assert.deepEqual(listVariables("{iteration} {uv-a} {uv-a} {handoff.x.y} {uv-b}"), [
    "iteration",
    "uv-a",
    "handoff.x.y",
    "uv-b",
  ]);
});

Deno.test("values are inserted literally ($ patterns are not special)", () => {
  assert.equal(
    substituteVariables("cost: {uv-price}", { uv: { price: "$& $1 $$" } }),
    "cost: $& $1 $$",
  );
});

Deno.test("optional variables: {x?} is empty and {x?=text} is text when unset; set values win", () => {
  const template =
    "[{handoff.verdict?}] [{handoff.verdict?=none yet}] [{uv-scope?=all}] {uv-topic}";
  assert.equal(
    substituteVariables(template, { uv: { topic: "t" } }),
    "[] [none yet] [all] t",
  );
  assert.equal(
    substituteVariables(template, { uv: { topic: "t", scope: "src" }, handoff: { verdict: "ok" } }),
    "[ok] [ok] [src] t",
  );
  assert.deepEqual(listRequiredVariables(template), ["uv-topic"]);
  assert.deepEqual(listVariables(template), ["handoff.verdict", "uv-scope", "uv-topic"]);
  // JSON examples stay as written.
  assert.equal(substituteVariables('{"a?": 1} {handoff.x?=}', { uv: {} }), '{"a?": 1} ');
});

Deno.test("lookups are own keys only: {uv-constructor}, {handoff.__proto__} have no value", () => {
  for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
    assert.throws(
      () => substituteVariables(`{uv-${name}} {handoff.${name}}`, { uv: {}, handoff: {} }),
      (error: unknown) => {
        assert.ok(error instanceof MissingVariablesError);
        assert.deepEqual(error.missing, [`uv-${name}`, `handoff.${name}`]);
        return true;
      },
      name,
    );
    assert.equal(substituteVariables(`{handoff.${name}?=none}`, { uv: {}, handoff: {} }), "none");
  }
});

Deno.test("a missing {uv-x} that no CLI flag can set says what can set it", () => {
  assert.throws(
    () =>
      substituteVariables("{uv-iterations} {uv-topic}", {
        uv: {},
        parameters: { topic: { type: "string" } },
      }),
    (error: unknown) => {
      assert.ok(error instanceof MissingVariablesError);
      const lines = error.message.split("\n");
      assert.equal(
        lines[1],
        '  {uv-iterations} ← "iterations" is not a parameter of the agent, so no CLI flag sets it: declare it in agent.json "parameters" (then pass --iterations <value>), pass args.iterations through the API, or write {uv-iterations?} to allow an empty value',
      );
      assert.equal(lines[2], "  {uv-topic} ← pass --topic <value> (or args.topic)");
      return true;
    },
  );
});
