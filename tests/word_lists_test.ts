/**
 * Lists of words declared once: the public constant, the type and the schema that checks a model's
 * answer or a plan file agree, and each package entry point exports the list beside its type.
 */
import assert from "node:assert/strict";
import { StepStatusSchema } from "../src/plan/schema.ts";
import { STEP_STATUSES } from "../src/plan/mod.ts";
import { REFLECTION_DECISIONS, STEP_STATUS_CODES } from "../src/planspec/mod.ts";
import { ReflectionSchema } from "../src/planspec/runner_schemas.ts";
import { RUN_STATUS_KINDS, RUN_STATUSES, SHOWN_STATUSES } from "../src/store/mod.ts";

Deno.test("word lists: each reflection decision is accepted, any other word refused", () => {
  assert.deepEqual(REFLECTION_DECISIONS, ["RETRY", "ACCEPT", "INTERACT", "PLAN_CMD"]);
  for (const decision of REFLECTION_DECISIONS) {
    assert.equal(ReflectionSchema.safeParse({ decision, reason: "r" }).success, true, decision);
  }
  assert.equal(ReflectionSchema.safeParse({ decision: "SKIP", reason: "r" }).success, false);
});

Deno.test("word lists: step status codes and plan step statuses are the documented words", () => {
  assert.deepEqual(STEP_STATUS_CODES, ["OK", "FAIL", "UNCERTAIN", "LACK_OF_INFO"]);
  assert.equal(STEP_STATUSES.join(" "), "pending blocked ready running completed failed skipped");
  for (const status of STEP_STATUSES) assert.equal(StepStatusSchema.parse(status), status);
  assert.equal(StepStatusSchema.safeParse("done").success, false);
});

Deno.test("word lists: the store entry point exports the run-state lists", () => {
  assert.deepEqual(RUN_STATUSES, Object.keys(RUN_STATUS_KINDS));
  assert.deepEqual(SHOWN_STATUSES.slice(1, -1), RUN_STATUSES);
});
