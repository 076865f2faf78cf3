/**
 * The statuses of a PlanSpec step tree during a run: which step runs next (document order), how a
 * container's status follows from its children's, and which steps are blocked.
 *
 * @module
 */
import { ancestorIds, findStep, walkSteps } from "./tree.ts";
import { type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

const DONE_LIKE = new Set<string>([PlanStatus.DONE, PlanStatus.SKIPPED]);

/** The next step to execute in document order: a pending or active leaf, or an undecided decide. */
export function findNext(steps: PlanStep[]): PlanStep | undefined {
  for (const step of steps) {
    if (DONE_LIKE.has(step.status) || step.status === PlanStatus.BLOCKED) continue;
    if (step.children.length === 0) return step;
    if (step.stepType === "decide" && !isDecided(step)) return step;
    const inner = findNext(step.children);
    if (inner) return inner;
  }
  return undefined;
}

/** A decide step has chosen once a branch left `pending` or its result records the choice. */
function isDecided(step: PlanStep): boolean {
  return step.result.startsWith("chose ") ||
    step.children.some((c) => c.status !== PlanStatus.PENDING);
}

/**
 * Derives container statuses from their children (post-order): all children finished → done (or
 * blocked when one is blocked, skipped when all are); some started → active. A `subtask`'s
 * `| Progress` counts its done children. Explicitly skipped containers stay skipped.
 */
export function settle(steps: PlanStep[]): void {
  for (const step of steps) {
    if (step.children.length === 0) continue;
    settle(step.children);
    if (step.status === PlanStatus.SKIPPED) continue;
    let open = 0;
    let started = 0;
    let done = 0;
    let blocked = 0;
    for (const child of step.children) {
      if (child.status === PlanStatus.PENDING) open++;
      else if (child.status === PlanStatus.ACTIVE) {
        open++;
        started++;
      } else {
        started++;
        if (child.status === PlanStatus.DONE) done++;
        else if (child.status === PlanStatus.BLOCKED) blocked++;
      }
    }
    if (step.stepType === "subtask") {
      step.doneCount = done;
      step.totalCount = step.children.length;
    }
    if (open === 0) {
      step.status = blocked > 0
        ? PlanStatus.BLOCKED
        : done > 0
        ? PlanStatus.DONE
        : PlanStatus.SKIPPED;
      if (blocked > 0 && step.stepType === "subtask") {
        step.result = `${blocked} sub-step(s) blocked`;
      } else if (step.stepType === "subtask" && step.result.endsWith("sub-step(s) blocked")) {
        step.result = "";
      }
    } else if (started > 0) {
      step.status = PlanStatus.ACTIVE;
    }
  }
}

/** Marks a step active, and its pending ancestors with it. */
export function markActive(plan: PlanSpec, step: PlanStep): void {
  step.status = PlanStatus.ACTIVE;
  for (const id of ancestorIds(step.stepId)) {
    const ancestor = findStep(plan, id)?.step;
    if (ancestor?.status === PlanStatus.PENDING) ancestor.status = PlanStatus.ACTIVE;
  }
}

/** The blocked steps, with the result that says why. */
export function blockedSteps(plan: PlanSpec): { stepId: string; result: string }[] {
  const out: { stepId: string; result: string }[] = [];
  walkSteps(plan.steps, (s) => {
    if (s.status === PlanStatus.BLOCKED) out.push({ stepId: s.stepId, result: s.result });
  });
  return out;
}
