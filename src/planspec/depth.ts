/**
 * The nesting limit of PlanSpec trees. Every reader, writer and walker of a plan recurses once per
 * level; past a fixed depth that would end in "Maximum call stack size exceeded". The limit is
 * enforced where trees come in — `parsePlan` / `parseStepLines` (a line error), `stepsToPlan`,
 * `serializePlan`, `validatePlan` and the renderers (for trees built in code) — so everything
 * behind them can stay simple.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";

/** How many levels of steps a plan may nest: `1` is level 1, `1.1.1` level 3. */
export const MAX_PLAN_DEPTH = 100;

/**
 * A plan nested deeper than {@linkcode MAX_PLAN_DEPTH} levels (code `PLANSPEC_TOO_DEEP`).
 *
 * @example
 * ```ts
 * import { parsePlan, PlanTooDeepError } from "./mod.ts";
 * let text = "Goal: g\n## Steps\n", id = "";
 * for (let d = 0; d < 101; d++) text += `${(id = id ? `${id}.1` : "1")}. [subtask] level ${d}\n`;
 * try { parsePlan(text); } catch (e) { console.log(e instanceof PlanTooDeepError); } // true
 * ```
 */
export class PlanTooDeepError extends StepflowError {
  /**
   * Creates the error.
   *
   * @param stepId the first step below the limit
   * @param line its 1-based line, when the plan came from text
   */
  constructor(stepId: string, line?: number) {
    super(
      "PLANSPEC_TOO_DEEP",
      `${line === undefined ? "" : `line ${line}: `}step ${
        shortId(stepId)
      } is nested more than ${MAX_PLAN_DEPTH} levels deep; PlanSpec allows at most ${MAX_PLAN_DEPTH}. Flatten the plan: split the deep part into sibling steps or a separate plan.`,
      { details: { stepId, limit: MAX_PLAN_DEPTH, ...(line === undefined ? {} : { line }) } },
    );
  }
}

/**
 * Throws {@linkcode PlanTooDeepError} when a tree of steps nests deeper than
 * {@linkcode MAX_PLAN_DEPTH} levels. Iterative: any depth is checked without recursion.
 *
 * @param steps the top-level steps
 * @param childrenOf the children of a node (default `node.children`)
 * @param idOf a name for a node in the message (default `node.stepId`)
 */
export function assertPlanDepth<T>(
  steps: readonly T[] | undefined,
  childrenOf: (node: T) => readonly T[] | undefined = (node) =>
    (node as { children?: readonly T[] }).children,
  idOf: (node: T) => string = (node) => String((node as { stepId?: unknown }).stepId ?? "?"),
): void {
  const stack: { nodes: readonly T[]; depth: number }[] = [];
  if (steps && steps.length > 0) stack.push({ nodes: steps, depth: 1 });
  while (stack.length > 0) {
    const { nodes, depth } = stack.pop()!;
    for (const node of nodes) {
      if (depth > MAX_PLAN_DEPTH) throw new PlanTooDeepError(idOf(node));
      const children = childrenOf(node);
      if (Array.isArray(children) && children.length > 0) {
        stack.push({ nodes: children, depth: depth + 1 });
      }
    }
  }
}

function shortId(stepId: string): string {
  return stepId.length <= 40 ? stepId : `${stepId.slice(0, 20)}…${stepId.slice(-12)}`;
}
