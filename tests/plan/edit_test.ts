import assert from "node:assert/strict";
import {
  addStep,
  editStep,
  PlanEditError,
  removeStep,
  reorderStep,
  skipStep,
} from "../../src/plan/edit.ts";
import { makePlan, testTools } from "./helpers.ts";

const plan = makePlan([
  { id: "step_1", description: "Read", tool: "work", args: { name: "1" } },
  { id: "step_2", description: "Change", tool: "work", args: { name: "2" }, dependsOn: ["step_1"] },
  { id: "step_3", description: "Backup", tool: "work", args: { name: "3" } },
]);

const refused = (fn: () => unknown, code: string, pattern: RegExp) =>
  assert.throws(fn, (e: PlanEditError) => {
    assert.ok(e instanceof PlanEditError);
    assert.equal(e.code, code);
    assert.match(e.message, pattern);
    return true;
  });

Deno.test("editStep changes fields, bumps the version and leaves the input alone", () => {
  const edited = editStep(plan, "step_2", {
    description: "Change it",
    args: { name: "two" },
    onError: "retry=2",
  });
  assert.equal(edited.version, 2);
  assert.ok(edited.updatedAt);
  assert.deepEqual(edited.steps[1].args, { name: "two" });
  assert.equal(edited.steps[1].onError, "retry=2");
  assert.equal(plan.version, 1);
  assert.deepEqual(plan.steps[1].args, { name: "2" });
});

Deno.test("editing a step that ran puts it back to pending", () => {
  const ran = structuredClone(plan);
  ran.steps[0].status = "completed";
  ran.steps[0].result = { ok: true, value: "1", duration: 1, timestamp: "t" };
  const edited = editStep(ran, "step_1", { args: { name: "one" } });
  assert.equal(edited.steps[0].status, "pending");
  assert.equal(edited.steps[0].result, undefined);
});

Deno.test("edits that would break the plan are refused with the problems", () => {
  refused(
    () => editStep(plan, "step_1", { dependsOn: ["step_2"] }),
    "PLAN_EDIT_INVALID",
    /circular dependencies: step_1 → step_2 → step_1/,
  );
  refused(
    () => editStep(plan, "nope", {}),
    "PLAN_EDIT_UNKNOWN_STEP",
    /no such step\. Steps: step_1, step_2, step_3/,
  );
  const { tools } = testTools();
  refused(
    () => editStep(plan, "step_1", { tool: "missing" }, { tools }),
    "PLAN_EDIT_INVALID",
    /Unknown tool: missing/,
  );
});

Deno.test("reorderStep moves steps but never before a dependency or after a dependent", () => {
  const moved = reorderStep(plan, "step_3", 1);
  assert.deepEqual(moved.steps.map((s) => [s.id, s.order]), [["step_3", 1], ["step_1", 2], [
    "step_2",
    3,
  ]]);
  assert.equal(moved.version, 2);
  refused(
    () => reorderStep(plan, "step_2", 1),
    "PLAN_REORDER_DEPENDENCY",
    /move step "step_2" to position 1: it depends on "step_1", which would come after it/,
  );
  refused(
    () => reorderStep(plan, "step_1", 3),
    "PLAN_REORDER_DEPENDENCY",
    /"step_2" depends on it and would come before it/,
  );
  refused(() => reorderStep(plan, "step_1", 9), "PLAN_EDIT_POSITION", /positions run from 1 to 3/);
});

Deno.test("skipStep marks the step skipped with a reason; completed steps cannot be skipped", () => {
  const skipped = skipStep(plan, "step_3", "not needed");
  assert.equal(skipped.steps[2].status, "skipped");
  assert.equal(skipped.steps[2].result?.error, "Skipped by user: not needed");
  assert.equal(skipped.version, 2);
  const done = structuredClone(plan);
  done.steps[0].status = "completed";
  refused(() => skipStep(done, "step_1"), "PLAN_EDIT_COMPLETED", /completed already/);
});

Deno.test("addStep assigns an id, inserts where asked and checks the dependency order", () => {
  const added = addStep(plan, {
    description: "Verify",
    tool: "work",
    args: { name: "v" },
    dependsOn: ["step_2"],
  }, { after: "step_2" });
  assert.deepEqual(added.steps.map((s) => s.id), ["step_1", "step_2", "step_4", "step_3"]);
  assert.deepEqual(added.steps.map((s) => s.order), [1, 2, 3, 4]);
  assert.equal(added.steps[2].status, "pending");
  assert.equal(added.version, 2);
  refused(
    () =>
      addStep(plan, {
        id: "early",
        description: "E",
        tool: "work",
        args: { name: "e" },
        dependsOn: ["step_3"],
      }, { before: "step_1" }),
    "PLAN_REORDER_DEPENDENCY",
    /add step "early" at position 1: it depends on "step_3", which would come after it/,
  );
  refused(
    () => addStep(plan, { id: "step_1", description: "dup", tool: "work" }),
    "PLAN_EDIT_INVALID",
    /exists already/,
  );
  refused(
    () =>
      addStep(plan, {
        description: "bad",
        tool: "work",
        args: { name: "x" },
        dependsOn: ["ghost"],
      }),
    "PLAN_EDIT_INVALID",
    /Unknown dependency: ghost/,
  );
});

Deno.test("removeStep refuses while others depend on the step", () => {
  refused(() => removeStep(plan, "step_1"), "PLAN_EDIT_IN_USE", /"step_2" depends on it/);
  const removed = removeStep(plan, "step_3");
  assert.deepEqual(removed.steps.map((s) => s.id), ["step_1", "step_2"]);
  assert.equal(removed.version, 2);
});
