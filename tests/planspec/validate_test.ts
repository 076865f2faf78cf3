import assert from "node:assert/strict";
import {
  createPlanSpec,
  createPlanStep,
  parsePlan,
  planErrors,
  validatePlan,
} from "../../src/planspec/mod.ts";
import * as seed from "./seed_examples.ts";

Deno.test("a valid plan has no messages (the complete example)", () => {
  assert.deepEqual(validatePlan(parsePlan(seed.COMPLETE_EXAMPLE)), []);
});

Deno.test("rule 1: at least one step", () => {
  assert.deepEqual(validatePlan(createPlanSpec({ goal: "g" })), ["plan has no steps"]);
});

Deno.test("rule 2: type must be reason/act/decide/subtask (at every level)", () => {
  const plan = parsePlan("Goal: g\n1. foo [LLM] Ask\n2. [subtask] S\n  2.1. [code] Run\n");
  assert.deepEqual(validatePlan(plan), [
    "step 1 (foo): invalid type 'LLM'",
    "step 2.1: invalid type 'code'",
  ]);
});

Deno.test("rule 3: step names are globally unique, unnamed steps skipped", () => {
  const plan = parsePlan(
    "Goal: g\n1. analyze [reason] A\n2. [subtask] S\n  2.1. bar [act] B\n  2.2. analyze [act] C\n3. [act] D\n4. [act] E\n",
  );
  assert.deepEqual(validatePlan(plan), [
    "step 2.2 (analyze): duplicate name, first seen at step 1",
  ]);
});

Deno.test("rule 4: only subtask/decide can have children (nested too)", () => {
  const plan = createPlanSpec({
    goal: "g",
    steps: [
      createPlanStep({
        stepId: "1",
        stepName: "foo",
        stepType: "reason",
        children: [createPlanStep({ stepId: "1.1", stepType: "act" })],
      }),
      createPlanStep({
        stepId: "2",
        stepType: "subtask",
        children: [
          createPlanStep({
            stepId: "2.1",
            stepType: "act",
            children: [createPlanStep({ stepId: "2.1.1", stepType: "act" })],
          }),
        ],
      }),
    ],
  });
  assert.deepEqual(validatePlan(plan), [
    "step 1 (foo): type 'reason' cannot have children",
    "step 2.1: type 'act' cannot have children",
  ]);
});

Deno.test("rule 5: goal non-empty", () => {
  assert.deepEqual(validatePlan(parsePlan("1. [act] A\n")), ["plan has no goal"]);
  assert.deepEqual(validatePlan(parsePlan("Goal:   \n1. [act] A\n")), ["plan has no goal"]);
});

Deno.test("rule 6: childless subtask/decide is a warning with the warn: prefix", () => {
  const messages = validatePlan(
    parsePlan("Goal: g\n1. foo [subtask] S\n2. [decide] D\n3. [subtask] T\n  3.1. [decide] E\n"),
  );
  assert.deepEqual(messages, [
    "warn: step 1 (foo): type 'subtask' has no children",
    "warn: step 2: type 'decide' has no children",
    "warn: step 3.1: type 'decide' has no children",
  ]);
  assert.deepEqual(planErrors(messages), [], "warnings do not make a plan invalid");
});

Deno.test("all rules at once: errors first, warnings last", () => {
  const messages = validatePlan(parsePlan("1. x [bad] A\n2. x [subtask] B\n"));
  assert.deepEqual(messages, [
    "step 1 (x): invalid type 'bad'",
    "step 2 (x): duplicate name, first seen at step 1",
    "plan has no goal",
    "warn: step 2 (x): type 'subtask' has no children",
  ]);
  assert.equal(planErrors(messages).length, 3);
});
