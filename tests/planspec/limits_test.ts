/**
 * Limits of PlanSpec trees: nesting beyond MAX_PLAN_DEPTH (100) is a clean PLANSPEC_TOO_DEEP error
 * from every entry point — never "Maximum call stack size exceeded" — and `plan validate` /
 * `plan show` exit 2 on it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { planMain } from "../../src/cli/plan.ts";
import { runMain } from "../cli/helpers.ts";
import {
  applyCommand,
  clonePlan,
  createPlanCommand,
  createPlanSpec,
  findStep,
  isPlanName,
  MAX_PLAN_DEPTH,
  parsePlan,
  parseStepLines,
  planProgress,
  PlanStatus,
  type PlanStep,
  PlanTooDeepError,
  renderPlan,
  renderPlanTree,
  renumberSteps,
  serializePlan,
  snakeName,
  stepsToPlan,
  validatePlan,
  walkSteps,
} from "../../src/planspec/mod.ts";

/** A plan text nested `levels` deep: 1, 1.1, 1.1.1, … */
function deepText(levels: number): string {
  const lines = ["# Plan: deep", "Goal: nest", "## Steps"];
  let id = "";
  for (let d = 0; d < levels; d++) {
    id = d === 0 ? "1" : `${id}.1`;
    lines.push(
      `${"  ".repeat(Math.min(d, 4))}${id}. [${d === levels - 1 ? "act" : "subtask"}] level ${d}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** A tree built in code, `levels` deep (ids as the text format would number them). */
function deepSteps(levels: number): PlanStep[] {
  const top: PlanStep[] = [];
  let siblings = top;
  let id = "";
  for (let d = 0; d < levels; d++) {
    id = d === 0 ? "1" : `${id}.1`;
    const step: PlanStep = {
      stepId: id,
      stepName: "",
      stepType: d === levels - 1 ? "act" : "subtask",
      description: `level ${d}`,
      inputs: [],
      outputs: [],
      detail: [],
      result: "",
      status: PlanStatus.PENDING,
      doneCount: 0,
      totalCount: null,
      children: [],
    };
    siblings.push(step);
    siblings = step.children;
  }
  return top;
}

function tooDeep(fn: () => unknown): PlanTooDeepError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof PlanTooDeepError, `expected PlanTooDeepError, got ${caught}`);
  assert.equal(caught.code, "PLANSPEC_TOO_DEEP");
  return caught;
}

Deno.test("parse: 100 levels are fine; 101 and 4,000 levels fail cleanly on the first line too deep", () => {
  const ok = parsePlan(deepText(MAX_PLAN_DEPTH));
  assert.equal(validatePlan(ok).filter((m) => !m.startsWith("warn:")).length, 0);
  assert.equal(parsePlan(serializePlan(ok)).steps[0].children[0].stepId, "1.1");
  for (const levels of [MAX_PLAN_DEPTH + 1, 4_000]) {
    const error = tooDeep(() => parsePlan(deepText(levels)));
    assert.equal(error.details?.line, 3 + MAX_PLAN_DEPTH + 1);
    assert.match(error.message, /nested more than 100 levels deep; PlanSpec allows at most 100/);
  }
  // Children written by an LLM under a deep container count from that container's depth.
  const root = Array.from({ length: MAX_PLAN_DEPTH }, () => "1").join(".");
  tooDeep(() => parseStepLines(`${root}.1. [act] one level too many\n`, root));
});

Deno.test("trees built in code: serialize, validate, render and stepsToPlan refuse 5,000 levels cleanly", () => {
  const plan = createPlanSpec({ goal: "nest", steps: deepSteps(5_000) });
  tooDeep(() => serializePlan(plan));
  tooDeep(() => renderPlan(plan));
  tooDeep(() => renderPlanTree(plan));
  const messages = validatePlan(plan);
  assert.equal(messages.length, 1);
  assert.match(messages[0], /nested more than 100 levels deep/);
  type Hop = { stepName: string; stepType: "subtask"; description: string; children: Hop[] };
  const hops: Hop[] = [];
  let level = hops;
  for (let d = 0; d < 5_000; d++) {
    const hop: Hop = { stepName: `s${d}`, stepType: "subtask", description: "d", children: [] };
    level.push(hop);
    level = hop.children;
  }
  tooDeep(() => stepsToPlan(hops));
});

Deno.test("plan validate / plan show on a 4,000-level plan: one clean message, exit 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "planspec_limits_" });
  const file = join(dir, "deep.md");
  await Deno.writeTextFile(file, deepText(4_000));
  for (const command of ["validate", "show"]) {
    const out = await runMain(planMain, [command, file], { userDir: dir });
    const stderr = out.stderr;
    assert.equal(out.code, 2, `${command}: ${stderr}`);
    assert.match(
      stderr,
      /:104: error: step 1\.1\.1.* is nested more than 100 levels deep|line 104: step 1\.1/,
    );
    assert.doesNotMatch(stderr, /Maximum call stack| {4}at /);
  }
});

Deno.test("names: a 6.5-million-letter plan name or title is checked in linear time, no overflow", () => {
  const huge = "ж".repeat(6_500_000);
  assert.equal(isPlanName(huge), true);
  assert.equal(isPlanName(`${huge}/x`), false);
  assert.equal(snakeName(`Build ${huge} now`), "build");
  assert.equal(snakeName(`${huge}`).length, 48);
});

Deno.test("tree helpers walk 5,000 levels without recursion; ADD refuses to go past the limit", () => {
  const plan = createPlanSpec({ goal: "nest", steps: deepSteps(5_000) });
  let visited = 0;
  walkSteps(plan.steps, () => void visited++);
  assert.equal(visited, 5_000);
  assert.equal(planProgress(plan).total, 5_000);
  const copy = clonePlan(plan);
  assert.notEqual(copy.steps[0], plan.steps[0]);
  renumberSteps(copy.steps);
  const deepest = Array.from({ length: 5_000 }, () => "1").join(".");
  assert.equal(findStep(copy, deepest)?.step.description, "level 4999");

  const ok = parsePlan(deepText(MAX_PLAN_DEPTH));
  const parentId = Array.from({ length: MAX_PLAN_DEPTH - 1 }, () => "1").join(".");
  const error = applyCommand(
    ok,
    createPlanCommand({
      op: "ADD",
      stepId: `${parentId}.1.1`,
      stepType: "act",
      description: "too deep",
    }),
  );
  assert.match(error, /would be nested more than 100 levels deep/);
});
