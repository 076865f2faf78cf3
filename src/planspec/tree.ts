import {
  isContainerType,
  type PlanProgress,
  type PlanSpec,
  PlanStatus,
  type PlanStep,
} from "./types.ts";

/** Where a step sits: its sibling list, its index there, and its parent (undefined at the top). */
export interface StepLocation {
  /** The step. */
  step: PlanStep;
  /** The list that holds it (`plan.steps` or the parent's `children`). */
  siblings: PlanStep[];
  /** Its index in `siblings`. */
  index: number;
  /** Its parent step, undefined for a top-level step. */
  parent?: PlanStep;
}

/**
 * Finds a step by id. Ids are positional (`2.1` is the first child of the second step), so this is
 * a walk down one path, not a search; when a plan's ids do not match their positions it falls back
 * to a full search.
 *
 * @example
 * ```ts
 * import { findStep, parsePlan } from "./mod.ts";
 * const plan = parsePlan("Goal: g\n1. [subtask] A\n  1.1. [act] B\n");
 * console.log(findStep(plan, "1.1")?.step.description); // "B"
 * ```
 */
export function findStep(plan: PlanSpec, stepId: string): StepLocation | undefined {
  const parts = stepId.split(".");
  let siblings = plan.steps;
  let parent: PlanStep | undefined;
  for (let depth = 0; depth < parts.length; depth++) {
    const index = Number(parts[depth]) - 1;
    const step = siblings[index];
    if (!Number.isInteger(index) || step === undefined) break;
    if (depth === parts.length - 1) {
      if (step.stepId === stepId) return { step, siblings, index, parent };
      break;
    }
    parent = step;
    siblings = step.children;
  }
  return searchStep(plan.steps, stepId, undefined);
}

/** Document-order search, iterative (trees built in code may nest at any depth). */
function searchStep(
  top: PlanStep[],
  stepId: string,
  topParent: PlanStep | undefined,
): StepLocation | undefined {
  const stack: { siblings: PlanStep[]; index: number; parent: PlanStep | undefined }[] = [
    { siblings: top, index: 0, parent: topParent },
  ];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (frame.index >= frame.siblings.length) {
      stack.pop();
      continue;
    }
    const index = frame.index++;
    const step = frame.siblings[index];
    if (step.stepId === stepId) {
      return { step, siblings: frame.siblings, index, parent: frame.parent };
    }
    if (step.children.length > 0) stack.push({ siblings: step.children, index: 0, parent: step });
  }
  return undefined;
}

/**
 * Calls `visit` for every step in document order (parents before children).
 *
 * @example
 * ```ts
 * import { parsePlan, walkSteps } from "./mod.ts";
 * const ids: string[] = [];
 * walkSteps(parsePlan("Goal: g\n1. [subtask] A\n  1.1. [act] B\n").steps, (s) => void ids.push(s.stepId));
 * console.log(ids); // ["1", "1.1"]
 * ```
 */
export function walkSteps(
  steps: PlanStep[],
  visit: (step: PlanStep, parent: PlanStep | undefined, depth: number) => void,
  parent?: PlanStep,
  depth = 0,
): void {
  // Iterative pre-order: no recursion, whatever the depth.
  const stack: { list: PlanStep[]; i: number; parent: PlanStep | undefined; depth: number }[] = [
    { list: steps, i: 0, parent, depth },
  ];
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    if (frame.i >= frame.list.length) {
      stack.pop();
      continue;
    }
    const step = frame.list[frame.i++];
    visit(step, frame.parent, frame.depth);
    if (step.children.length > 0) {
      stack.push({ list: step.children, i: 0, parent: step, depth: frame.depth + 1 });
    }
  }
}

/**
 * Rewrites step ids from their positions (`P.1`, `P.2`, …), after steps were inserted, removed or
 * moved. `prefix` is the id of the parent of `steps` (`""` for top-level steps).
 */
export function renumberSteps(steps: PlanStep[], prefix = "", from = 0): void {
  const work: { list: PlanStep[]; prefix: string; from: number }[] = [{
    list: steps,
    prefix,
    from,
  }];
  while (work.length > 0) {
    const { list, prefix: at, from: start } = work.pop()!;
    for (let i = start; i < list.length; i++) {
      const id = at === "" ? String(i + 1) : `${at}.${i + 1}`;
      const step = list[i];
      step.stepId = id;
      if (step.children.length > 0) work.push({ list: step.children, prefix: id, from: 0 });
    }
  }
}

/** A deep copy of a step (the transient `expanded` flag is copied too). */
export function cloneStep(step: PlanStep): PlanStep {
  const copyOne = (s: PlanStep): PlanStep => ({
    ...s,
    inputs: [...s.inputs],
    outputs: [...s.outputs],
    detail: [...s.detail],
    children: [],
  });
  const root = copyOne(step);
  // Iterative: copies subtrees of any depth without recursion.
  const work: [PlanStep, PlanStep][] = [[step, root]];
  while (work.length > 0) {
    const [from, to] = work.pop()!;
    for (const child of from.children) {
      const copy = copyOne(child);
      to.children.push(copy);
      if (child.children.length > 0) work.push([child, copy]);
    }
  }
  return root;
}

/** A deep copy of a plan. */
export function clonePlan(plan: PlanSpec): PlanSpec {
  return {
    title: plan.title,
    goal: plan.goal,
    goalDetail: [...plan.goalDetail],
    constraints: [...plan.constraints],
    steps: plan.steps.map(cloneStep),
  };
}

/**
 * The ids of a step's ancestors, outermost first: `ancestorIds("2.1.3")` is `["2", "2.1"]`
 * (ids are positional, so a step's id holds its path).
 *
 * @example
 * ```ts
 * import { ancestorIds } from "./tree.ts";
 * console.log(ancestorIds("2.1.3")); // ["2", "2.1"]
 * ```
 */
export function ancestorIds(stepId: string): string[] {
  const ids: string[] = [];
  for (let dot = stepId.indexOf("."); dot >= 0; dot = stepId.indexOf(".", dot + 1)) {
    ids.push(stepId.slice(0, dot));
  }
  return ids;
}

/** `step 1 (foo)` for a named step, `step 1` otherwise: how messages name a step. */
export function stepLabel(step: PlanStep): string {
  return step.stepName === "" ? `step ${step.stepId}` : `step ${step.stepId} (${step.stepName})`;
}

/**
 * Forces a step's node body and children to show in folded output (`expanded = true`). A view
 * operation: the plan's data is unchanged and the flag is never serialized.
 *
 * @returns `""` on success, otherwise an error message
 *
 * @example
 * ```ts
 * import { expandStep, parsePlan, serializePlan } from "./mod.ts";
 * const plan = parsePlan("Goal: g\n1. [x] [act] A\n  > detail\n");
 * expandStep(plan, "1");
 * console.log(serializePlan(plan, { fold: true }).includes("> detail")); // true
 * ```
 */
export function expandStep(plan: PlanSpec, stepId: string): string {
  return setExpanded(plan, stepId, true);
}

/**
 * Forces a step's node body and children to hide in folded output (`expanded = false`).
 *
 * @returns `""` on success, otherwise an error message
 */
export function collapseStep(plan: PlanSpec, stepId: string): string {
  return setExpanded(plan, stepId, false);
}

function setExpanded(plan: PlanSpec, stepId: string, expanded: boolean): string {
  const found = findStep(plan, stepId);
  if (!found) return `step ${stepId} not found`;
  found.step.expanded = expanded;
  return "";
}

/**
 * Replaces the children of a `subtask` or `decide` step (phase 2 of a subtree `REPLAN`). The new
 * steps are copied (no shared references) and renumbered under the container, whose status becomes
 * `active`.
 *
 * @returns `""` on success, otherwise an error message
 *
 * @example
 * ```ts
 * import { createPlanStep, parsePlan, replaceChildren } from "./mod.ts";
 * const plan = parsePlan("Goal: g\n1. [subtask] A\n");
 * replaceChildren(plan, "1", [createPlanStep({ stepId: "x", stepType: "act", description: "B" })]);
 * console.log(plan.steps[0].children[0].stepId, plan.steps[0].status); // "1.1" "active"
 * ```
 */
export function replaceChildren(
  plan: PlanSpec,
  stepId: string,
  newChildren: PlanStep[],
): string {
  const found = findStep(plan, stepId);
  if (!found) return `step ${stepId} not found`;
  const step = found.step;
  if (!isContainerType(step.stepType)) {
    return `${stepLabel(step)}: type '${step.stepType}' cannot have children (only subtask/decide)`;
  }
  step.children = newChildren.map(cloneStep);
  renumberSteps(step.children, step.stepId);
  step.status = PlanStatus.ACTIVE;
  return "";
}

/**
 * Counts steps by status over the whole tree (children included).
 *
 * @example
 * ```ts
 * import { parsePlan, planProgress } from "./mod.ts";
 * const p = planProgress(parsePlan("Goal: g\n1. [x] [act] A\n2. [act] B\n"));
 * console.log(p); // { total: 2, done: 1, active: 0, blocked: 0, pending: 1, skipped: 0 }
 * ```
 */
export function planProgress(plan: PlanSpec): PlanProgress {
  const progress: PlanProgress = {
    total: 0,
    done: 0,
    active: 0,
    blocked: 0,
    pending: 0,
    skipped: 0,
  };
  count(plan.steps, progress);
  return progress;
}

function count(steps: PlanStep[], progress: PlanProgress): void {
  walkSteps(steps, (step) => {
    progress.total++;
    progress[step.status]++;
  });
}

/**
 * A plan's progress as people read it: settled steps — done or skipped, such as the branch a
 * `decide` step did not take — of all steps, `5/5 (100%)`. A finished plan reads as complete
 * whatever it skipped (the skipped count is shown beside it where it matters).
 *
 * @example
 * ```ts
 * import { parsePlan, planProgress } from "./mod.ts";
 * import { progressText } from "./tree.ts";
 * progressText(planProgress(parsePlan("Goal: g\n1. [x] [act] A\n2. [~] [act] B\n3. [act] C\n")));
 * // "2/3 (66%)"
 * ```
 */
export function progressText(p: PlanProgress): string {
  const settled = p.done + p.skipped;
  return `${settled}/${p.total} (${p.total === 0 ? 0 : Math.floor((settled * 100) / p.total)}%)`;
}

/**
 * Status convergence: no step is `pending` or `active`. Blocked steps count as processed (re-planning
 * was attempted but did not resolve them), so a plan with blocked steps can be converged.
 */
export function isConverged(plan: PlanSpec): boolean {
  const p = planProgress(plan);
  return p.pending === 0 && p.active === 0;
}

/** True when every step is `done` or `skipped`: nothing pending, active or blocked. */
export function isComplete(plan: PlanSpec): boolean {
  const p = planProgress(plan);
  return p.pending === 0 && p.active === 0 && p.blocked === 0;
}
