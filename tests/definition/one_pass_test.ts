/**
 * One load reports every problem the files have: schema issues such as unknown
 * top-level keys never hide the flow rules.
 */
import assert from "node:assert/strict";
import { salvageParse } from "../../src/definition/salvage.ts";
import { StepsRegistrySchema } from "../../src/definition/schema.ts";
import { copyExample, loadFails } from "./fixtures.ts";

const R = "steps_registry.json";

Deno.test("one pass: 150 bad targets and 2 unknown top-level keys are 152 problems in one load", async () => {
  const agent = await copyExample("issue-solver", (r, a) => {
    r.stepz = {};
    a.behaviour = { completionType: "issue" };
    const template = r.steps["continuation.issue"];
    for (let i = 0; i < 150; i++) {
      const step = structuredClone(template);
      delete step.stepId;
      step.transitions.next = { target: `nowhere.s${i}` };
      r.steps[`extra.s${i}`] = step;
    }
  });
  const error = await loadFails(agent);
  assert.equal(error.problems.length, 152, error.problems.slice(0, 5).join("\n"));
  assert.match(error.problems[0], /^agent\.json: .*unknown key "behaviour"/);
  assert.ok(error.problems.some((p) => /^steps_registry\.json: .*unknown key "stepz"/.test(p)));
  assert.ok(
    error.problems.includes(
      `${R}: step "extra.s149": transitions.next.target "nowhere.s149" is not a step in ${R}. Fix the id, or add the step.`,
    ),
  );
});

Deno.test("one pass: unknown keys inside a step, a bad version and a flow rule are all reported", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.version = 2;
    r.steps["initial.issue"].stepKind = "gate";
    r.steps["initial.issue"].transitions.next = { target: "continuation.isue" };
  });
  const error = await loadFails(agent);
  assert.equal(error.problems.length, 3, error.problems.join("\n"));
  assert.match(error.problems.join("\n"), /version: expected string/);
  assert.match(error.problems.join("\n"), /unknown key "stepKind"/);
  assert.ok(
    error.problems.includes(
      `${R}: step "initial.issue": transitions.next.target "continuation.isue" is not a step in ${R}. Did you mean "continuation.issue"?`,
    ),
    error.problems.join("\n"),
  );
});

Deno.test("salvageParse drops unknown keys and malformed entries, keeps the rest", () => {
  const raw = {
    version: "1",
    typo: true,
    steps: {
      good: { name: "a", c2: "x", c3: "y", extra: 1 },
      bad: { name: 5 },
    },
  };
  const salvaged = salvageParse(StepsRegistrySchema, raw, { dropWhole: "steps" });
  assert.deepEqual(Object.keys(salvaged.data!.steps), ["good"]);
  assert.deepEqual(salvaged.dropped, ["bad"]);
  assert.equal("typo" in salvaged.data!, false);
  assert.equal((raw.steps.good as Record<string, unknown>).extra, 1, "the input is not changed");
});
