import assert from "node:assert/strict";
import {
  collapseStep,
  createPlanStep,
  expandStep,
  findStep,
  parsePlan,
  planToSteps,
  replaceChildren,
  serializePlan,
  type StepInfo,
  stepsToPlan,
  validatePlan,
} from "../../src/planspec/mod.ts";
import * as seed from "./seed_examples.ts";

Deno.test("findStep walks by position and reports the location", () => {
  const plan = parsePlan(seed.COMPLETE_EXAMPLE);
  const found = findStep(plan, "5.4.2")!;
  assert.equal(found.step.description.startsWith("Not reach"), true);
  assert.equal(found.index, 1);
  assert.equal(found.parent?.stepId, "5.4");
  assert.equal(findStep(plan, "5.9"), undefined);
  assert.equal(findStep(plan, "x"), undefined);
});

Deno.test("expandStep / collapseStep: explicit flags override the status rules", () => {
  const plan = parsePlan(seed.FOLDING_EXAMPLE);
  assert.equal(expandStep(plan, "1"), "");
  assert.equal(collapseStep(plan, "2"), "");
  assert.equal(expandStep(plan, "9"), "step 9 not found");
  const folded = serializePlan(plan, { fold: true });
  assert.match(folded, /> Fields: policy_no/);
  assert.doesNotMatch(folded, /> ← synthetic_data/);
  assert.match(folded, /^3\. \[subtask\] Clean data based on LLM profile → cleaned_data$/m);
});

Deno.test("replaceChildren copies, renumbers and activates; only containers accept children", () => {
  const plan = parsePlan("Goal: g\n1. [act] A\n2. [subtask] B\n  2.1. [act] old\n");
  const fresh = [
    createPlanStep({ stepId: "1", stepType: "act", description: "new one" }),
    createPlanStep({
      stepId: "2",
      stepType: "subtask",
      description: "new two",
      children: [createPlanStep({ stepId: "2.1", stepType: "reason", description: "deep" })],
    }),
  ];
  assert.equal(replaceChildren(plan, "2", fresh), "");
  const b = plan.steps[1];
  assert.equal(b.status, "active");
  assert.deepEqual(b.children.map((c) => c.stepId), ["2.1", "2.2"]);
  assert.equal(b.children[1].children[0].stepId, "2.2.1");
  assert.notEqual(b.children[0], fresh[0], "copied, not shared");
  assert.equal(fresh[0].stepId, "1", "the input list is untouched");
  assert.deepEqual(parsePlan(serializePlan(plan)).steps[1].children.length, 2);
  assert.equal(
    replaceChildren(plan, "1", fresh),
    "step 1: type 'act' cannot have children (only subtask/decide)",
  );
  assert.equal(replaceChildren(plan, "7", fresh), "step 7 not found");
});

Deno.test("planToSteps maps types, carries data flow, names unnamed steps, appends flow:exit", () => {
  const steps = planToSteps(parsePlan(seed.COMPLETE_EXAMPLE));
  assert.equal(steps.length, 8);
  assert.deepEqual(steps.at(-1), {
    stepName: "exit",
    stepType: "flow",
    flowAction: "exit",
    flowStatus: "EXIT_OK",
  });
  assert.deepEqual(steps[1], {
    stepName: "step_2",
    stepType: "LLM",
    task: parsePlan(seed.COMPLETE_EXAMPLE).steps[1].description,
    verifier: "",
    inputs: ["synthetic_data"],
    outputs: ["data_profile", "clean_suggestions", "feature_suggestions"],
  });
  assert.equal(steps[0].stepType, "code");
  assert.equal(steps[0].description, parsePlan(seed.COMPLETE_EXAMPLE).steps[0].description);
  assert.equal(steps[2].stepType, "subtask");
  assert.equal(steps[2].expandMode, "static");
  const decide = steps[4].children![3];
  assert.equal(decide.stepName, "step_5_4");
  assert.equal(decide.stepType, "branch");
  assert.equal(decide.condition, "Check if Gini reaches target threshold");
  assert.deepEqual(decide.children!.map((c) => c.stepName), ["step_5_4_1", "step_5_4_2"]);
  const named = planToSteps(parsePlan("Goal: g\n1. a1b2c3d4 [reason] Think\n"));
  assert.equal(named[0].stepName, "a1b2c3d4");
});

Deno.test("planToSteps refuses invalid types", () => {
  assert.throws(
    () => planToSteps(parsePlan("Goal: g\n1. [LLM] Think\n")),
    /step 1: cannot convert type 'LLM' to HopSpec/,
  );
});

Deno.test("stepsToPlan maps every HopSpec type, drops flow steps, keeps the core structure", () => {
  const hop: StepInfo[] = [
    { stepName: "ask", stepType: "LLM", task: "Summarize the input", outputs: ["summary"] },
    { stepName: "calc", stepType: "code", description: "Compute totals", inputs: ["summary"] },
    { stepName: "fetch", stepType: "call", task: "Fetch rates", callTarget: "rates_api" },
    {
      stepName: "each",
      stepType: "loop",
      description: "Process rows",
      traversalCollection: "rows",
      elementVariable: "row",
      children: [{ stepName: "one", stepType: "code", description: "Process one row" }],
    },
    {
      stepName: "check",
      stepType: "branch",
      condition: "total > 0",
      children: [
        { stepName: "yes", stepType: "code", description: "Report" },
        { stepName: "stop", stepType: "flow", flowAction: "exit" },
      ],
    },
    { stepName: "sub", stepType: "subtask", description: "Wrap up", children: [] },
    { stepName: "end", stepType: "flow", flowAction: "exit", flowStatus: "EXIT_OK" },
  ];
  const plan = stepsToPlan(hop, { title: "T", goal: "G", constraints: ["c"] });
  assert.equal(plan.title, "T");
  assert.deepEqual(plan.constraints, ["c"]);
  assert.deepEqual(
    plan.steps.map((s) => [s.stepId, s.stepName, s.stepType, s.description]),
    [
      ["1", "ask", "reason", "Summarize the input"],
      ["2", "calc", "act", "Compute totals"],
      ["3", "fetch", "act", "Fetch rates"],
      ["4", "each", "subtask", "Process rows; for each row in rows"],
      ["5", "check", "decide", "total > 0"],
      ["6", "sub", "subtask", "Wrap up"],
    ],
  );
  assert.deepEqual(plan.steps[0].outputs, ["summary"]);
  assert.deepEqual(plan.steps[1].inputs, ["summary"]);
  assert.deepEqual(plan.steps[4].children.map((c) => c.stepId), ["5.1"]);
  assert.equal(plan.steps[3].children[0].stepId, "4.1");
  // The result is a valid plan text-wise.
  assert.deepStrictEqual(parsePlan(serializePlan(plan)), plan);
  assert.deepEqual(validatePlan(plan), ["warn: step 6 (sub): type 'subtask' has no children"]);
  assert.throws(
    () => stepsToPlan([{ stepName: "x", stepType: "weird" as "LLM" }]),
    /unknown type 'weird'/,
  );
});

Deno.test("plan → HopSpec → plan preserves the core structure", () => {
  const plan = parsePlan(seed.COMPLETE_EXAMPLE);
  const back = stepsToPlan(planToSteps(plan), { title: plan.title, goal: plan.goal });
  const shape = (steps: typeof plan.steps): unknown =>
    steps.map((s) => [s.stepId, s.stepType, s.description, s.inputs, s.outputs, shape(s.children)]);
  assert.deepEqual(shape(back.steps), shape(plan.steps));
});
