/**
 * Plan editing (docs/tool-plans.md, "Editing"): edit, reorder, skip, add and remove steps. Every
 * function returns a new plan with `version` + 1 and never modifies its input; an edit that would
 * break the plan is refused with a {@linkcode PlanEditError} that says why.
 *
 * @module
 */
import type { ErrorCodeOf } from "../error_codes.ts";
import { StepflowError } from "../errors.ts";
import { collectRefs } from "./refs.ts";
import { STEP_ID_PATTERN } from "./schema.ts";
import { stepFromNew } from "./new_step.ts";
import type {
  NewStep,
  OnErrorSetting,
  Plan,
  PlanProblem,
  PlanToolRegistry,
  Step,
} from "./types.ts";
import { checkSteps } from "./validate.ts";

/** Thrown when an edit is refused. */
export class PlanEditError extends StepflowError {
  /** The problems the edit would introduce, when validation refused it. */
  readonly problems: PlanProblem[];
  /**
   * Creates the error.
   *
   * @param code `PLAN_EDIT_UNKNOWN_STEP`, `PLAN_REORDER_DEPENDENCY`, `PLAN_EDIT_INVALID`, …
   * @param message what was refused and why
   * @param problems validation problems, when any
   */
  constructor(code: ErrorCodeOf<"plan">, message: string, problems: PlanProblem[] = []) {
    super(code, message, { details: { problems } });
    this.problems = problems;
  }
}

/** Options of the editing functions. */
export interface EditOptions {
  /** Also check tools and arguments of the changed plan. */
  tools?: PlanToolRegistry;
}

/** The fields {@linkcode editStep} may change. */
export interface StepChanges {
  /** New description. */
  description?: string;
  /** New tool. */
  tool?: string;
  /** New arguments (replaces them all). */
  args?: Record<string, unknown>;
  /** New dependencies. */
  dependsOn?: string[];
  /** New failure strategy. */
  onError?: OnErrorSetting;
  /** Ask for approval before running. */
  requiresApproval?: boolean;
}

/**
 * Changes a step's description, tool, args, dependencies, `onError` or approval flag. A step that
 * had run goes back to `pending` (without its result) so it runs again with the change.
 *
 * @example
 * ```ts
 * import { editStep } from "./edit.ts";
 * import { parsePlan } from "./schema.ts";
 * const plan = parsePlan({
 *   id: "p", taskId: "t", version: 1, createdAt: "2025-01-01T00:00:00Z",
 *   steps: [{ id: "a", description: "Read", tool: "read_file", args: { path: "a.txt" } }],
 * });
 * const edited = editStep(plan, "a", { args: { path: "b.txt" } });
 * console.log(edited.version, edited.steps[0].args); // 2 { path: "b.txt" }
 * ```
 */
export function editStep(
  plan: Plan,
  stepId: string,
  changes: StepChanges,
  options: EditOptions = {},
): Plan {
  const next = copy(plan);
  const step = find(next, stepId, "edit");
  if (changes.description !== undefined) step.description = changes.description;
  if (changes.tool !== undefined) step.tool = changes.tool;
  if (changes.args !== undefined) step.args = structuredClone(changes.args);
  if (changes.dependsOn !== undefined) step.dependsOn = [...changes.dependsOn];
  if (changes.onError !== undefined) step.onError = changes.onError;
  if (changes.requiresApproval !== undefined) step.requiresApproval = changes.requiresApproval;
  if (step.status !== "pending") {
    step.status = "pending";
    delete step.result;
  }
  return commit(plan, next, options, `edit step "${stepId}"`);
}

/**
 * Moves a step to `position` (1-based) in the display order. Refused when the step would come
 * before one of its dependencies, or after a step that depends on it.
 *
 * @throws PlanEditError `PLAN_REORDER_DEPENDENCY`
 */
export function reorderStep(
  plan: Plan,
  stepId: string,
  position: number,
  options: EditOptions = {},
): Plan {
  const next = copy(plan);
  const step = find(next, stepId, "move");
  if (!Number.isInteger(position) || position < 1 || position > next.steps.length) {
    throw new PlanEditError(
      "PLAN_EDIT_POSITION",
      `Cannot move step "${stepId}" to position ${position}: positions run from 1 to ${next.steps.length}.`,
    );
  }
  const from = next.steps.indexOf(step);
  next.steps.splice(from, 1);
  next.steps.splice(position - 1, 0, step);
  assertDependencyOrder(next.steps, step, `move step "${stepId}" to position ${position}`);
  return commit(plan, next, options, `move step "${stepId}"`);
}

/** Marks a step `skipped` (its dependents are skipped when the plan runs). Completed steps are refused. */
export function skipStep(plan: Plan, stepId: string, reason?: string): Plan {
  const next = copy(plan);
  const step = find(next, stepId, "skip");
  if (step.status === "completed") {
    throw new PlanEditError(
      "PLAN_EDIT_COMPLETED",
      `Cannot skip step "${stepId}": it has completed already.`,
    );
  }
  step.status = "skipped";
  step.result = {
    ok: false,
    error: `Skipped by user${reason ? `: ${reason}` : ""}`,
    duration: 0,
    timestamp: new Date().toISOString(),
  };
  return commit(plan, next, {}, `skip step "${stepId}"`);
}

/** Where {@linkcode addStep} puts the new step (default: at the end). */
export interface AddStepOptions extends EditOptions {
  /** Insert right after this step. */
  after?: string;
  /** Insert right before this step. */
  before?: string;
}

/**
 * Adds a step (id `step_N` assigned when omitted). Refused when it would come before one of its
 * dependencies, or when the result does not validate.
 *
 * @example
 * ```ts
 * import { addStep } from "./edit.ts";
 * import { parsePlan } from "./schema.ts";
 * const plan = parsePlan({
 *   id: "p", taskId: "t", version: 1, createdAt: "2025-01-01T00:00:00Z",
 *   steps: [{ id: "step_1", description: "Write", tool: "write_file", args: { path: "a", content: "x" } }],
 * });
 * const next = addStep(plan, {
 *   description: "Verify", tool: "read_file", args: { path: "a" }, dependsOn: ["step_1"],
 * });
 * console.log(next.steps.map((s) => s.id)); // ["step_1", "step_2"]
 * ```
 */
export function addStep(plan: Plan, newStep: NewStep, options: AddStepOptions = {}): Plan {
  const next = copy(plan);
  const id = newStep.id ?? freshId(next.steps);
  if (!STEP_ID_PATTERN.test(id)) {
    throw new PlanEditError(
      "PLAN_EDIT_INVALID",
      `Cannot add step "${id}": step ids start with a letter or _ and contain only letters, digits, _ and -.`,
    );
  }
  if (next.steps.some((s) => s.id === id)) {
    throw new PlanEditError(
      "PLAN_EDIT_INVALID",
      `Cannot add step "${id}": that id exists already.`,
    );
  }
  const step = stepFromNew({ ...newStep, id }, 0);
  let at = next.steps.length;
  if (options.after !== undefined) {
    at = next.steps.indexOf(find(next, options.after, "add after")) + 1;
  } else if (options.before !== undefined) {
    at = next.steps.indexOf(find(next, options.before, "add before"));
  }
  next.steps.splice(at, 0, step);
  assertDependencyOrder(next.steps, step, `add step "${id}" at position ${at + 1}`);
  return commit(plan, next, options, `add step "${id}"`);
}

/** Removes a step. Refused while another step depends on it or references its result. */
export function removeStep(plan: Plan, stepId: string, options: EditOptions = {}): Plan {
  const next = copy(plan);
  const step = find(next, stepId, "remove");
  const users = next.steps.filter((s) =>
    s !== step &&
    (s.dependsOn.includes(stepId) || collectRefs(s.args).some((r) => r.ref.stepId === stepId))
  ).map((s) => s.id);
  if (users.length > 0) {
    throw new PlanEditError(
      "PLAN_EDIT_IN_USE",
      `Cannot remove step "${stepId}": ${users.map((u) => `"${u}"`).join(", ")} depend${
        users.length === 1 ? "s" : ""
      } on it. Change or remove ${users.length === 1 ? "that step" : "those steps"} first.`,
    );
  }
  next.steps.splice(next.steps.indexOf(step), 1);
  return commit(plan, next, options, `remove step "${stepId}"`);
}

function assertDependencyOrder(steps: Step[], step: Step, action: string): void {
  const position = new Map(steps.map((s, i) => [s.id, i]));
  const at = position.get(step.id)!;
  for (const dep of step.dependsOn) {
    const p = position.get(dep);
    if (p !== undefined && p > at) {
      throw new PlanEditError(
        "PLAN_REORDER_DEPENDENCY",
        `Cannot ${action}: it depends on "${dep}", which would come after it.`,
      );
    }
  }
  for (let i = 0; i < at; i++) {
    if (steps[i].dependsOn.includes(step.id)) {
      throw new PlanEditError(
        "PLAN_REORDER_DEPENDENCY",
        `Cannot ${action}: "${steps[i].id}" depends on it and would come before it.`,
      );
    }
  }
}

function copy(plan: Plan): Plan {
  const next = structuredClone(plan);
  next.steps.sort((a, b) => a.order - b.order);
  return next;
}

function find(plan: Plan, stepId: string, action: string): Step {
  const step = plan.steps.find((s) => s.id === stepId);
  if (!step) {
    throw new PlanEditError(
      "PLAN_EDIT_UNKNOWN_STEP",
      `Cannot ${action} step "${stepId}": the plan has no such step. Steps: ${
        plan.steps.map((s) => s.id).join(", ") || "(none)"
      }.`,
    );
  }
  return step;
}

function commit(before: Plan, next: Plan, options: EditOptions, action: string): Plan {
  next.steps.forEach((s, i) => (s.order = i + 1));
  const known = new Set(checkSteps(before.steps, options.tools).map((p) => p.message));
  const introduced = checkSteps(next.steps, options.tools).filter((p) => !known.has(p.message));
  if (introduced.length > 0) {
    throw new PlanEditError(
      "PLAN_EDIT_INVALID",
      `Cannot ${action}: the plan would become invalid:\n  ${
        introduced.map((p) => p.message).join("\n  ")
      }`,
      introduced,
    );
  }
  next.version = before.version + 1;
  next.updatedAt = new Date().toISOString();
  return next;
}

function freshId(steps: readonly Step[]): string {
  let max = 0;
  for (const s of steps) {
    const m = /^step_(\d+)$/.exec(s.id);
    if (m) max = Math.max(max, Number(m[1]));
  }
  let n = max + 1;
  const ids = new Set(steps.map((s) => s.id));
  while (ids.has(`step_${n}`)) n++;
  return `step_${n}`;
}
