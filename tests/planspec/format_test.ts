import assert from "node:assert/strict";
import {
  createPlanSpec,
  createPlanStep,
  isConverged,
  parsePlan,
  PlanParseError,
  planProgress,
  PlanSerializeError,
  renderPlan,
  renderPlanTree,
  serializePlan,
} from "../../src/planspec/mod.ts";
import * as seed from "./seed_examples.ts";

const PLAN_EXAMPLES = {
  TEMPLATE_ANNOTATED: seed.TEMPLATE_ANNOTATED,
  DOCUMENT_STRUCTURE: seed.DOCUMENT_STRUCTURE,
  NODE_BODY: seed.NODE_BODY,
  TREE_STRUCTURE: seed.TREE_STRUCTURE,
  INLINE_ATTRIBUTES: seed.INLINE_ATTRIBUTES,
  FOLDING_EXAMPLE: seed.FOLDING_EXAMPLE,
  LOOP_OPTION_A: seed.LOOP_OPTION_A,
  LOOP_OPTION_B: seed.LOOP_OPTION_B,
  COMPLETE_EXAMPLE: seed.COMPLETE_EXAMPLE,
};

for (const [name, text] of Object.entries(PLAN_EXAMPLES)) {
  Deno.test(`seed example ${name} parses and round-trips`, () => {
    const plan = parsePlan(text);
    assert.ok(plan.steps.length > 0);
    assert.deepStrictEqual(parsePlan(serializePlan(plan)), plan);
    // Serializing is stable: a second pass gives the same text.
    assert.equal(serializePlan(parsePlan(serializePlan(plan))), serializePlan(plan));
  });
}

Deno.test("canonical seed examples serialize back to their exact text", () => {
  assert.equal(serializePlan(parsePlan(seed.COMPLETE_EXAMPLE)), seed.COMPLETE_EXAMPLE);
  for (const text of [seed.FOLDING_EXAMPLE, seed.NODE_BODY, seed.INLINE_ATTRIBUTES]) {
    assert.equal(serializePlan(parsePlan(text)), "## Steps\n" + text);
  }
});

Deno.test("the complete example: structure, statuses, inputs, detail and computed progress", () => {
  const plan = parsePlan(seed.COMPLETE_EXAMPLE);
  assert.equal(plan.title, "Auto Insurance Claim Rate Prediction");
  assert.match(plan.goal, /^Build claim prediction model/);
  assert.equal(plan.constraints.length, 3);
  assert.equal(plan.steps.length, 7);
  const s1 = plan.steps[0];
  assert.equal(s1.status, "done");
  assert.equal(s1.result, "Generation complete");
  assert.deepEqual(s1.outputs, ["synthetic_data"]);
  assert.equal(s1.detail.length, 4);
  assert.equal(
    s1.detail[1],
    "  region(5 categories), vehicle_type(3 categories), driver_gender, years_licensed,",
  );
  const s2 = plan.steps[1];
  assert.equal(s2.status, "active");
  assert.deepEqual(s2.inputs, ["synthetic_data"]);
  assert.deepEqual(s2.outputs, ["data_profile", "clean_suggestions", "feature_suggestions"]);
  assert.equal(s2.detail.length, 2, "the ← line is removed from detail");
  const s5 = plan.steps[4];
  assert.equal(s5.children.length, 4);
  assert.equal(s5.children[0].result, "Gini=0.38, AUC=0.69");
  const decide = s5.children[3];
  assert.equal(decide.stepType, "decide");
  assert.deepEqual(decide.children.map((c) => c.stepId), ["5.4.1", "5.4.2"]);
  assert.equal(decide.children[0].description, "Gini ≥ target");
  // The seed's "corresponding progress" line says total 14 / done 2 / pending 10: it miscounts.
  assert.deepEqual(planProgress(plan), {
    total: 17,
    done: 3,
    active: 2,
    blocked: 0,
    pending: 12,
    skipped: 0,
  });
  assert.equal(isConverged(plan), false);
});

Deno.test("the annotated template parses: [type] without a space, status markers, trailing annotations on headings", () => {
  const plan = parsePlan(seed.TEMPLATE_ANNOTATED);
  assert.equal(plan.constraints.length, 2);
  assert.equal(plan.goalDetail.length, 1);
  const branches = plan.steps[2].children[2].children;
  assert.equal(branches[0].stepType, "act");
  assert.equal(branches[0].description, "Reach the target threshold");
  assert.deepEqual(branches[0].outputs, ["output final model"]);
  assert.equal(plan.steps[2].status, "active");
  assert.equal(plan.steps[2].children[0].result, "Gini=0.35");
});

Deno.test("progress forms: | Progress: N/M and | Progress: N, with and without a result", () => {
  const plan = parsePlan(seed.INLINE_ATTRIBUTES);
  assert.equal(plan.steps[0].result, "Extracted 12 atomic claims");
  assert.deepEqual([plan.steps[1].doneCount, plan.steps[1].totalCount], [3, 5]);
  assert.equal(plan.steps[1].result, "");
  assert.equal(plan.steps[2].result, "All 10 checks passed");
  assert.deepEqual([plan.steps[2].doneCount, plan.steps[2].totalCount], [10, 10]);
  const open = parsePlan("Goal: g\n1. [subtask] Loop → out | Progress: 4\n");
  assert.deepEqual([open.steps[0].doneCount, open.steps[0].totalCount], [4, null]);
  assert.equal(serializePlan(open), "Goal: g\n## Steps\n1. [subtask] Loop → out | Progress: 4\n");
  const before = parsePlan("Goal: g\n1. [act] A | Progress: 1/2 | half done\n");
  assert.equal(before.steps[0].result, "half done");
  assert.equal(before.steps[0].doneCount, 1);
});

Deno.test("named steps, ASCII arrows, **Goal**: and ## Constraints", () => {
  const text = [
    "**Goal**: Ship the release",
    "## Constraints",
    "- no breaking changes",
    "## Steps",
    "1. [x] a1b2c3d4 [act] Build the artifacts -> artifact, checksum | built",
    "2. b5 [reason] Review",
    "  > <- artifact",
  ].join("\n");
  const plan = parsePlan(text);
  assert.equal(plan.goal, "Ship the release");
  assert.deepEqual(plan.constraints, ["no breaking changes"]);
  assert.equal(plan.steps[0].stepName, "a1b2c3d4");
  assert.deepEqual(plan.steps[0].outputs, ["artifact", "checksum"]);
  assert.equal(plan.steps[1].stepName, "b5");
  assert.deepEqual(plan.steps[1].inputs, ["artifact"]);
  // Output uses the canonical forms.
  assert.equal(
    serializePlan(plan),
    [
      "Goal: Ship the release",
      "Constraints:",
      "- no breaking changes",
      "## Steps",
      "1. [x] a1b2c3d4 [act] Build the artifacts → artifact, checksum | built",
      "2. b5 [reason] Review",
      "  > ← artifact",
      "",
    ].join("\n"),
  );
});

Deno.test("every status marker, [X] as done, and pending marker omitted on output", () => {
  const plan = parsePlan(
    "Goal: g\n1. [ ] [act] a\n2. [x] [act] b\n3. [X] [act] c\n4. [>] [act] d\n5. [!] [act] e\n6. [~] [act] f\n7. [act] g\n",
  );
  assert.deepEqual(plan.steps.map((s) => s.status), [
    "pending",
    "done",
    "done",
    "active",
    "blocked",
    "skipped",
    "pending",
  ]);
  const out = serializePlan(plan);
  assert.match(out, /^1\. \[act\] a$/m);
  assert.match(out, /^3\. \[x\] \[act\] c$/m);
});

Deno.test("empty text gives an empty plan; indentation is ignored; CRLF is accepted", () => {
  assert.deepStrictEqual(parsePlan(""), createPlanSpec());
  assert.deepStrictEqual(parsePlan("  \n\n"), createPlanSpec());
  const flat = parsePlan("Goal: g\r\n1. [subtask] A\r\n1.1. [act] B\r\n        1.2. [act] C\r\n");
  assert.deepEqual(flat.steps[0].children.map((c) => c.description), ["B", "C"]);
});

Deno.test("descriptions with arrows and results with pipes survive a round trip", () => {
  const plan = createPlanSpec({
    goal: "g",
    steps: [
      createPlanStep({ stepId: "1", stepType: "act", description: "map a -> b then → c" }),
      createPlanStep({
        stepId: "2",
        stepType: "act",
        description: "x → y",
        outputs: ["z"],
        result: "a | b | Progress: 3",
      }),
      createPlanStep({ stepId: "3", stepType: "x", description: "type looks like a marker" }),
    ],
  });
  const text = serializePlan(plan);
  assert.deepStrictEqual(parsePlan(text), plan);
  assert.match(text, /^3\. \[ \] \[x\] type looks like a marker$/m);
});

Deno.test("parse errors name the line number and quote the text", () => {
  const cases: [string, number, RegExp][] = [
    ["Goal: g\n## Steps\n1. Do it\n", 3, /step 1 has no \[type\]/],
    ["Goal: g\n1. [act] A\n3. [act] C\n", 3, /out of sequence: expected 2/],
    ["Goal: g\n1. [act] A\n2.1. [act] B\n", 3, /no parent step 2/],
    ["Goal: g\n1. [act] A\nsome prose\n", 3, /unexpected text among the steps/],
    ["Goal: g\nGoal: h\n", 2, /second 'Goal:'/],
    ["# Plan: t\n- orphan\n", 2, /must follow 'Constraints:'/],
    ["> floating\n", 1, /must follow 'Goal:'/],
    ["Goal: g\n1. [act A\n", 2, /unclosed \[type\]/],
    ["Goal: g\n## Steps extra\n", 2, /unexpected text after '## Steps'/],
  ];
  for (const [text, line, reason] of cases) {
    assert.throws(() => parsePlan(text), (error: unknown) => {
      assert.ok(error instanceof PlanParseError, `${text}: ${error}`);
      assert.equal(error.line, line, text);
      assert.equal(error.code, "PLANSPEC_PARSE");
      assert.match(error.message, new RegExp(`^line ${line}: `));
      assert.match(error.message, reason);
      assert.ok(error.message.includes(JSON.stringify(error.text.trim())), error.message);
      return true;
    });
  }
});

Deno.test("serializePlan refuses values the text format cannot hold", () => {
  const bad = [
    createPlanStep({ stepId: "1", stepType: "act", description: "a | b" }),
    createPlanStep({ stepId: "1", stepType: "act", description: "two\nlines" }),
    createPlanStep({ stepId: "1", stepType: "act", outputs: ["a,b"] }),
    createPlanStep({ stepId: "1", stepType: "act", detail: ["← looks like inputs"] }),
    createPlanStep({ stepId: "1", stepType: "act", stepName: "two words" }),
    createPlanStep({ stepId: "1", stepType: "a]ct" }),
    createPlanStep({ stepId: "2", stepType: "act" }),
    createPlanStep({ stepId: "1", stepType: "act", doneCount: -1 }),
  ];
  for (const step of bad) {
    assert.throws(
      () => serializePlan(createPlanSpec({ goal: "g", steps: [step] })),
      PlanSerializeError,
      JSON.stringify(step),
    );
  }
});

Deno.test("fold=true follows the folding rules and the expanded flags", () => {
  const plan = parsePlan(seed.FOLDING_EXAMPLE);
  assert.equal(
    serializePlan(plan, { fold: true }),
    [
      "## Steps",
      "1. [x] [act] Generate synthetic policy data → synthetic_data | Generated 10K rows",
      "2. [>] [reason] Analyze data quality → data_profile, suggestions",
      "  > ← synthetic_data",
      "  > Analysis dimensions: missing rate, distribution type, outlier proportion",
      "3. [subtask] Clean data based on LLM profile → cleaned_data",
      "",
    ].join("\n"),
  );
  // fold=false ignores the flags; the flags are not serialized.
  plan.steps[0].expanded = true;
  plan.steps[1].expanded = false;
  assert.equal(serializePlan(plan), "## Steps\n" + seed.FOLDING_EXAMPLE);
  const folded = serializePlan(plan, { fold: true });
  assert.match(folded, /> claim_flag positive rate ~15%/);
  assert.doesNotMatch(folded, /Analysis dimensions/);
  // A collapsed container hides its children; default rules always show them.
  const tree = parsePlan("Goal: g\n1. [>] [subtask] A\n  > why\n  1.1. [act] B\n    > how\n");
  assert.equal(
    serializePlan(tree, { fold: true }),
    "Goal: g\n## Steps\n1. [>] [subtask] A\n  > why\n  1.1. [act] B\n",
  );
  tree.steps[0].expanded = false;
  assert.equal(serializePlan(tree, { fold: true }), "Goal: g\n## Steps\n1. [>] [subtask] A\n");
});

Deno.test("the folded /showplan rendering of the seed's folding example matches the seed", () => {
  assert.equal(
    renderPlanTree(parsePlan(seed.FOLDING_EXAMPLE)) + "\n",
    seed.FOLDING_EXAMPLE_RENDERED,
  );
});

Deno.test("renderPlan: banner, goal, constraints, progress, tree glyphs and footer", () => {
  const out = renderPlan(parsePlan(seed.COMPLETE_EXAMPLE));
  const lines = out.split("\n");
  assert.equal(lines[0], "═══ PlanSpec: Auto Insurance Claim Rate Prediction ═══");
  assert.ok(lines.includes("Constraints:"));
  assert.ok(
    lines.includes("  - polars for DataFrame processing, XGBoost for binary classification"),
  );
  assert.ok(lines.includes("Progress: 3/17 (17%)"));
  assert.ok(
    lines.includes(
      "├─ 3.1  [ ]  [REASON]   Determine specific cleaning rules (missing imputation strategy, outlier truncation thresholds, type corrections) → cleaning_plan",
    ),
  );
  assert.ok(lines.includes("└─ 5.4  [ ]  [DECIDE]   Check if Gini reaches target threshold"));
  assert.ok(
    lines.includes("   ├─ 5.4.1  [ ]  [ACT]      Gini ≥ target → exit iteration to report"),
  );
  // The active 5.3 is expanded under the tree's vertical line; the pending 3.1 is folded.
  assert.ok(lines.includes("│                       > ← cv_metrics, feature_importance"));
  assert.ok(!out.includes("> ← data_profile, clean_suggestions"));
  assert.ok(lines.includes("───"));
  assert.ok(lines.includes("Steps: 17 | reason: 4 | act: 9 | decide: 1 | subtask: 3"));
  assert.equal(lines.at(-2), "Progress: 3/17 (17%) | active: 2");
  assert.ok(!out.includes("\x1b["), "no colour unless asked");
  assert.ok(renderPlan(parsePlan(seed.COMPLETE_EXAMPLE), { color: true }).includes("\x1b[32m[x]"));
  const full = renderPlan(parsePlan(seed.COMPLETE_EXAMPLE), { fold: false });
  assert.ok(full.includes("> ← data_profile, clean_suggestions"));
});

Deno.test("isConverged: blocked counts as processed, pending and active do not", () => {
  assert.equal(
    isConverged(parsePlan("Goal: g\n1. [x] [act] a\n2. [!] [act] b\n3. [~] [act] c\n")),
    true,
  );
  assert.equal(isConverged(parsePlan("Goal: g\n1. [x] [act] a\n2. [act] b\n")), false);
  assert.equal(isConverged(parsePlan("Goal: g\n1. [x] [subtask] a\n  1.1. [>] [act] b\n")), false);
});
