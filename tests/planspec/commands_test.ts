import assert from "node:assert/strict";
import {
  applyCommand,
  applyCommands,
  createPlanCommand,
  formatPlanCommand,
  parsePlan,
  parsePlanCommands,
  serializePlan,
} from "../../src/planspec/mod.ts";
import * as seed from "./seed_examples.ts";

const BASE = `Goal: g
## Steps
1. [x] [act] Load → raw | loaded
2. [subtask] Clean → cleaned
  2.1. [reason] Profile → profile
    > ← raw
    > per column
  2.2. [act] Apply → cleaned
3. [act] Report → report
`;

function ignoredOf(text: string): string[] {
  const reasons: string[] = [];
  parsePlanCommands(text, { onIgnored: (n, _line, reason) => reasons.push(`${n}: ${reason}`) });
  return reasons;
}

Deno.test("parsePlanCommands: the seed's LLM-layer examples", () => {
  const cmds = parsePlanCommands(seed.LLM_COMMANDS);
  assert.deepEqual(cmds.map((c) => `${c.op} ${c.stepId}`), [
    "ADD 2.3",
    "REVISE 3.1",
    "REPLAN 4",
    "REPLAN ALL",
  ]);
  const [add, revise, replan, all] = cmds;
  assert.equal(add.stepType, "reason");
  assert.equal(add.description, "Verify cleaned data has no nulls and row count ≥ original 95%");
  assert.deepEqual(add.inputs, ["cleaned_data", "raw_data"]);
  assert.deepEqual(add.detail, ["Check null rate < 0.1%, row retention rate >= 95%"]);
  assert.equal(
    revise.description,
    "Analyze feature correlation matrix, identify redundant features",
  );
  assert.deepEqual(revise.outputs, ["feature_analysis"]);
  assert.deepEqual(revise.inputs, ["feature_matrix"]);
  assert.deepEqual(revise.detail, ["Output redundant feature list and suggested removal reasons"]);
  assert.equal(
    replan.result,
    "Model iteration strategy ineffective, need to re-decompose sub-steps",
  );
  assert.equal(all.result, "Goal understanding deviation, need to re-plan from scratch");
});

Deno.test("parsePlanCommands: the seed's engine-layer examples (placeholders are not step ids)", () => {
  const reasons = ignoredOf(seed.ENGINE_COMMANDS);
  assert.equal(parsePlanCommands(seed.ENGINE_COMMANDS).length, 0);
  assert.equal(reasons.length, 3);
  assert.match(reasons[0], /DONE: "<step_id>" is not a step id/);
  const cmds = parsePlanCommands(
    "PLAN_CMD: DONE 2.1 | 12 rows\nPLAN_CMD: BLOCKED 3 | no key\nPLAN_CMD: SKIP 4\n",
  );
  assert.deepEqual(cmds.map((c) => [c.op, c.stepId, c.result]), [
    ["DONE", "2.1", "12 rows"],
    ["BLOCKED", "3", "no key"],
    ["SKIP", "4", ""],
  ]);
});

Deno.test("parsePlanCommands: only PLAN_CMD: lines, unknown verbs and malformed commands skipped", () => {
  const text = [
    "I think step 2 failed because of X.",
    "ADD 2.3 [reason] not a command (no prefix)",
    "PLAN_CMD: DELETE 2",
    "PLAN_CMD: ADD [act] no id",
    "PLAN_CMD: ADD 2.3 no type",
    "PLAN_CMD: REVISE x.y [act] bad id",
    "PLAN_CMD: SKIP",
    "PLAN_CMD: EXPAND 3",
    "  PLAN_CMD: collapse 2.1  ",
    "> a stray body line after a non-ADD command is ignored",
  ].join("\n");
  const cmds = parsePlanCommands(text);
  assert.deepEqual(cmds.map((c) => `${c.op} ${c.stepId}`), ["EXPAND 3", "COLLAPSE 2.1"]);
  assert.equal(cmds[1].detail.length, 0);
  const reasons = ignoredOf(text);
  assert.deepEqual(reasons.map((r) => r.split(":")[0]), ["3", "4", "5", "6", "7"]);
  assert.match(reasons[0], /unknown operation "DELETE"/);
  assert.match(reasons[1], /ADD needs a step id and a \[type\]/);
  assert.match(reasons[4], /SKIP needs a step id/);
});

Deno.test("parsePlanCommands: bare REPLAN is skipped, REPLAN ALL is case-insensitive", () => {
  const text =
    "PLAN_CMD: REPLAN\nPLAN_CMD: REPLAN | reason only\nPLAN_CMD: REPLAN all | x\nPLAN_CMD: REPLAN All\n";
  const cmds = parsePlanCommands(text);
  assert.deepEqual(cmds.map((c) => c.stepId), ["ALL", "ALL"]);
  const reasons = ignoredOf(text);
  assert.equal(reasons.length, 2);
  assert.match(reasons[0], /bare REPLAN ignored/);
  // Applying a global REPLAN is the engine's job: apply_command does nothing and reports no error.
  const plan = parsePlan(BASE);
  assert.equal(applyCommand(plan, cmds[0]), "");
  assert.equal(serializePlan(plan), BASE);
});

Deno.test("ADD inserts at the position and renumbers later siblings and their subtrees", () => {
  const plan = parsePlan(BASE);
  const errors = applyCommands(
    plan,
    parsePlanCommands(
      "PLAN_CMD: ADD 2 [reason] Check the raw data → checked\n> ← raw\n> row count > 0\nPLAN_CMD: ADD 3.3 [act] Verify → verdict",
    ),
  );
  assert.deepEqual(errors, []);
  assert.equal(
    serializePlan(plan),
    `Goal: g
## Steps
1. [x] [act] Load → raw | loaded
2. [reason] Check the raw data → checked
  > ← raw
  > row count > 0
3. [subtask] Clean → cleaned
  3.1. [reason] Profile → profile
    > ← raw
    > per column
  3.2. [act] Apply → cleaned
  3.3. [act] Verify → verdict
4. [act] Report → report
`,
  );
});

Deno.test("ADD errors: bad parent, leaf parent, position out of range, invalid type", () => {
  const plan = parsePlan(BASE);
  const add = (stepId: string, stepType = "act") =>
    applyCommand(plan, createPlanCommand({ op: "ADD", stepId, stepType, description: "x" }));
  assert.equal(add("9.1"), "ADD 9.1: parent step 9 not found");
  assert.match(add("3.1"), /^ADD 3\.1: parent step 3 is type 'act', which cannot have children/);
  assert.match(
    add("2.5"),
    /position 5 is out of range: step 2 has 2 step\(s\), so use 2\.1 to 2\.3/,
  );
  assert.match(add("5"), /position 5 is out of range: the plan has 3 step\(s\), so use 1 to 4/);
  assert.match(add("2.1", "LLM"), /invalid type 'LLM'/);
  assert.equal(serializePlan(plan), BASE, "failed commands change nothing");
  assert.equal(add("4"), "");
  assert.equal(plan.steps[3].stepId, "4");
});

Deno.test("ADD into a finished container reopens it", () => {
  const plan = parsePlan("Goal: g\n1. [x] [subtask] S\n  1.1. [x] [act] A\n");
  assert.equal(
    applyCommand(plan, createPlanCommand({ op: "ADD", stepId: "1.2", stepType: "act" })),
    "",
  );
  assert.equal(plan.steps[0].status, "active");
});

Deno.test("REVISE replaces the summary line; > lines replace the body, none keeps it", () => {
  const plan = parsePlan(
    BASE.replace("2.1. [reason]", "2.1. [!] [reason]").replace(
      "Profile → profile",
      "Profile → profile | crashed",
    ),
  );
  applyCommands(
    plan,
    parsePlanCommands("PLAN_CMD: REVISE 2.1 [act] Profile with a sample → profile, sample"),
  );
  let s = plan.steps[1].children[0];
  assert.deepEqual(
    [s.stepType, s.description, s.outputs, s.inputs, s.detail, s.status, s.result],
    ["act", "Profile with a sample", ["profile", "sample"], ["raw"], ["per column"], "pending", ""],
  );
  applyCommands(
    plan,
    parsePlanCommands("PLAN_CMD: REVISE 2.1 [reason] Profile\n> ← cleaned\n> only nulls"),
  );
  s = plan.steps[1].children[0];
  assert.deepEqual([s.inputs, s.detail, s.outputs], [["cleaned"], ["only nulls"], []]);
  assert.equal(
    applyCommand(plan, createPlanCommand({ op: "REVISE", stepId: "2", stepType: "act" })),
    "REVISE 2: step 2 has children, so it cannot become type 'act'; REPLAN it or keep a subtask/decide type",
  );
  assert.equal(
    applyCommand(plan, createPlanCommand({ op: "REVISE", stepId: "7", stepType: "act" })),
    "REVISE 7: step 7 not found",
  );
});

Deno.test("REPLAN <id> clears a container's children and resets it; leaves are refused", () => {
  const plan = parsePlan(BASE.replace("2. [subtask]", "2. [>] [subtask]"));
  assert.equal(applyCommand(plan, parsePlanCommands("PLAN_CMD: REPLAN 2 | wrong approach")[0]), "");
  assert.equal(plan.steps[1].children.length, 0);
  assert.equal(plan.steps[1].status, "pending");
  assert.match(
    applyCommand(plan, parsePlanCommands("PLAN_CMD: REPLAN 3 | x")[0]),
    /REPLAN 3: step 3 is type 'act': REPLAN <id> only applies to subtask\/decide containers/,
  );
});

Deno.test("DONE / BLOCKED / SKIP set status and result; SKIP cascades to unfinished descendants", () => {
  const plan = parsePlan(BASE.replace("2.1. [reason]", "2.1. [x] [reason]"));
  assert.deepEqual(
    applyCommands(
      plan,
      parsePlanCommands(
        "PLAN_CMD: DONE 3 | written\nPLAN_CMD: SKIP 2 | not needed\nPLAN_CMD: BLOCKED 1 | disk full\nPLAN_CMD: DONE 8",
      ),
    ),
    ["DONE 8: step 8 not found"],
  );
  assert.deepEqual(
    [plan.steps[0].status, plan.steps[0].result],
    ["blocked", "disk full"],
  );
  assert.deepEqual(
    [plan.steps[1].status, plan.steps[1].children[0].status, plan.steps[1].children[1].status],
    ["skipped", "done", "skipped"],
  );
  assert.deepEqual([plan.steps[2].status, plan.steps[2].result], ["done", "written"]);
});

Deno.test("EXPAND / COLLAPSE set the view flag only", () => {
  const plan = parsePlan(BASE);
  assert.deepEqual(
    applyCommands(
      plan,
      parsePlanCommands("PLAN_CMD: EXPAND 1\nPLAN_CMD: COLLAPSE 2\nPLAN_CMD: EXPAND 5"),
    ),
    [
      "EXPAND 5: step 5 not found",
    ],
  );
  assert.equal(plan.steps[0].expanded, true);
  assert.equal(plan.steps[1].expanded, false);
  assert.equal(serializePlan(plan), BASE);
  assert.equal(
    serializePlan(plan, { fold: true }),
    "Goal: g\n## Steps\n1. [x] [act] Load → raw | loaded\n2. [subtask] Clean → cleaned\n3. [act] Report → report\n",
  );
});

Deno.test("formatPlanCommand writes commands that parse back to the same command", () => {
  const text = [
    "PLAN_CMD: ADD 2.3 [reason] Verify → verdict",
    "> ← cleaned",
    "> strict",
    "PLAN_CMD: REPLAN ALL | start over",
    "PLAN_CMD: SKIP 4",
  ].join("\n");
  const cmds = parsePlanCommands(text);
  assert.equal(cmds.map(formatPlanCommand).join("\n"), text);
  assert.deepStrictEqual(parsePlanCommands(cmds.map(formatPlanCommand).join("\n")), cmds);
});
