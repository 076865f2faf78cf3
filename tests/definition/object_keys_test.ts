/**
 * Names from files that are also Object's members: completion types, step ids,
 * targets and keys named `constructor`, `toString`, `__proto__`, … are ordinary names.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parseJsonc } from "../../src/definition/jsonc.ts";
import { copyExample, load, loadFails, writeText } from "./fixtures.ts";

const R = "steps_registry.json";
const NAMES = ["constructor", "toString", "hasOwnProperty", "valueOf"];

Deno.test("object keys: a completionType named like Object's members has no entry mapping", async () => {
  for (const name of NAMES) {
    const agent = await copyExample("issue-solver", (_r, a) => {
      a.behavior.completionType = name;
    });
    const error = await loadFails(agent);
    assert.equal(
      error.problems[0],
      `[StepFlow] No entry step configured for completionType "${name}".\nDefine either "entryStepMapping.${name}" or "entryStep" in ${R}.`,
    );
  }
});

Deno.test("object keys: targets named like Object's members are unknown steps", async () => {
  for (const name of NAMES) {
    const agent = await copyExample("issue-solver", (r) => {
      r.steps["initial.issue"].transitions.next.target = name;
    });
    const error = await loadFails(agent);
    assert.deepEqual(error.problems, [
      `${R}: step "initial.issue": transitions.next.target "${name}" is not a step in ${R}. Fix the id, or add the step.`,
    ]);
  }
});

Deno.test("object keys: a step named constructor is an ordinary step (typos in it get a suggestion)", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    const step = structuredClone(r.steps["continuation.issue"]);
    delete step.stepId;
    step.transitions.next.target = "constructor";
    step.transitions.repeat.target = "constructor";
    r.steps.constructor = step;
    r.steps["initial.issue"].transitions.next.target = "constructor";
  });
  const def = await load(agent);
  assert.ok(Object.hasOwn(def.steps, "constructor"));
  assert.equal(def.steps["constructor" as string].kind, "gate");

  const typo = await copyExample("issue-solver", (r) => {
    const step = structuredClone(r.steps["continuation.issue"]);
    delete step.stepId;
    step.structuredGat = step.structuredGate;
    r.steps.constructor = step;
  });
  const error = await loadFails(typo);
  assert.ok(
    error.problems.some((p) =>
      p.includes('steps.constructor: unknown key "structuredGat" (did you mean "structuredGate"?)')
    ),
    error.problems.join("\n"),
  );
});

Deno.test('object keys: a "__proto__" key in a file is refused with its position', async () => {
  assert.throws(
    () => parseJsonc('{\n  "steps": {\n    "__proto__": { "name": "x" }\n  }\n}', "r.json"),
    /^JsonParseError: r\.json:3:5: invalid JSON: the key "__proto__" is not allowed/,
  );
  assert.deepEqual(parseJsonc('{ "constructor": 1, "a": "__proto__" }', "x.json"), {
    constructor: 1,
    a: "__proto__",
  });
  const agent = await copyExample("issue-solver");
  const file = join(agent.dir, "steps_registry.json");
  const text = await Deno.readTextFile(file);
  await writeText(file, text.replace('"steps": {', '"steps": {\n    "__proto__": {},'));
  const error = await loadFails(agent);
  assert.match(error.problems[0], /^steps_registry\.json:\d+:5: invalid JSON: the key "__proto__"/);
});
