/**
 * Plan validation (`validatePlan`, docs/tool-plans.md), reporting every problem instead of the
 * first one.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { buildGraph, dependsTransitively, findCycles, type PlanGraph } from "./graph.ts";
import { collectRefs, type FoundRef } from "./refs.ts";
import { fillStepOrders, formatIssue, formatPath, PlanSchema } from "./schema.ts";
import type { Plan, PlanProblem, PlanToolRegistry, PlanValidation, Step } from "./types.ts";

/**
 * Checks a plan and returns every problem:
 *
 * - the shape (`PLAN_SCHEMA`, each with its path);
 * - duplicate step ids (`DUPLICATE_STEP_ID`) and unknown dependencies (`UNKNOWN_DEPENDENCY`);
 * - circular dependencies (`CYCLE`), each naming its path `a → b → a`;
 * - with `tools`: unknown tools (`UNKNOWN_TOOL`) and invalid arguments (`INVALID_ARGS`, one per
 *   issue with its path; values that are `$step` references are checked when the step runs);
 * - references to unknown steps (`UNKNOWN_REF`) or to steps that are not among the step's
 *   dependencies, directly or indirectly (`REF_NOT_ANCESTOR`).
 *
 * @example
 * ```ts
 * import { validatePlan } from "./validate.ts";
 * const result = validatePlan({
 *   id: "p", taskId: "t", version: 1, createdAt: "2025-01-01T00:00:00Z",
 *   steps: [
 *     { id: "a", description: "A", tool: "noop", dependsOn: ["b"] },
 *     { id: "b", description: "B", tool: "noop", dependsOn: ["a"] },
 *   ],
 * });
 * console.log(result.problems[0].message); // Plan contains circular dependencies: a → b → a …
 * ```
 */
export function validatePlan(plan: unknown, tools?: PlanToolRegistry): PlanValidation {
  const parsed = PlanSchema.safeParse(fillStepOrders(plan));
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((issue) => ({
        code: "PLAN_SCHEMA",
        message: formatIssue(issue),
        path: issue.path.map((k) => (typeof k === "number" ? k : String(k))),
      })),
    };
  }
  const problems = checkSteps(parsed.data.steps, tools);
  return { ok: problems.length === 0, problems };
}

/**
 * The semantic checks of {@linkcode validatePlan} on already-parsed steps (no schema pass).
 * `graph` may be passed when the caller has built it already.
 */
export function checkSteps(
  steps: readonly Step[],
  tools?: PlanToolRegistry,
  graph: PlanGraph = buildGraph(steps),
): PlanProblem[] {
  const problems: PlanProblem[] = [];
  const { index } = graph;

  for (let i = 0; i < steps.length; i++) {
    const first = index.get(steps[i].id)!;
    if (first !== i) {
      problems.push({
        code: "DUPLICATE_STEP_ID",
        stepId: steps[i].id,
        path: ["steps", i, "id"],
        message: `Duplicate step id "${
          steps[i].id
        }": steps[${first}] and steps[${i}]. Give each step its own id.`,
      });
    }
  }

  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    step.dependsOn.forEach((dep, k) => {
      if (!index.has(dep)) {
        problems.push({
          code: "UNKNOWN_DEPENDENCY",
          stepId: step.id,
          path: ["steps", i, "dependsOn", k],
          message: `Step "${step.id}": Unknown dependency: ${dep} (dependsOn[${k}]). ${
            suggest(dep, index)
          }`,
        });
      }
    });
  }

  for (const cycle of findCycles(graph)) {
    const ids = cycle.map((i) => steps[i].id);
    problems.push({
      code: "CYCLE",
      stepId: ids[0],
      path: ["steps", cycle[0], "dependsOn"],
      cycle: ids,
      message: `Plan contains circular dependencies: ${
        ids.join(" → ")
      } (each step depends on the next). Remove one of these dependencies.`,
    });
  }

  const known = tools?.describe().map((t) => t.name).join(", ");
  let seen: Uint32Array | undefined;
  let epoch = 0;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    const refs = collectRefs(step.args);
    if (tools) {
      if (!tools.has(step.tool)) {
        problems.push({
          code: "UNKNOWN_TOOL",
          stepId: step.id,
          path: ["steps", i, "tool"],
          message: `Step "${step.id}": Unknown tool: ${step.tool}. Available tools: ${
            known || "(none)"
          }.`,
        });
      } else {
        const checked = tools.validateArgs(step.tool, step.args);
        if (!checked.ok) {
          for (const issue of checked.issues) {
            if (refs.some((r) => r.whole && isPrefix(r.argPath, issue.path))) continue;
            const argPath = issue.path.map((k) => (typeof k === "number" ? k : String(k)));
            problems.push({
              code: "INVALID_ARGS",
              stepId: step.id,
              path: ["steps", i, "args", ...argPath],
              message: `Step "${step.id}": Invalid args for ${step.tool} at ${
                formatPath(["args", ...argPath])
              }: ${issue.message}`,
            });
          }
        }
      }
    }
    for (const found of refs) {
      const problem = checkRef(
        step,
        i,
        found,
        graph,
        seen ??= new Uint32Array(steps.length),
        ++epoch,
      );
      if (problem) problems.push(problem);
    }
  }
  // Report in plan order (the sort is stable, so each step's problems keep their order).
  return problems.sort((a, b) => stepIndexOf(a) - stepIndexOf(b));
}

function stepIndexOf(problem: PlanProblem): number {
  const index = problem.path?.[1];
  return typeof index === "number" ? index : Number.MAX_SAFE_INTEGER;
}

function checkRef(
  step: Step,
  i: number,
  found: FoundRef,
  graph: PlanGraph,
  seen: Uint32Array,
  epoch: number,
): PlanProblem | undefined {
  const target = graph.index.get(found.ref.stepId);
  const path = ["steps", i, "args", ...found.argPath];
  const where = formatPath(["args", ...found.argPath]);
  if (target === undefined) {
    return {
      code: "UNKNOWN_REF",
      stepId: step.id,
      path,
      message:
        `Step "${step.id}": ${where} references unknown step "${found.ref.stepId}" (${found.ref.text}). ${
          suggest(found.ref.stepId, graph.index)
        } For a literal text starting with "$", write "$$".`,
    };
  }
  if (target === i || !dependsTransitively(graph, i, target, seen, epoch)) {
    return {
      code: "REF_NOT_ANCESTOR",
      stepId: step.id,
      path,
      message: target === i
        ? `Step "${step.id}": ${where} references its own result (${found.ref.text}).`
        : `Step "${step.id}": ${where} references step "${found.ref.stepId}" (${found.ref.text}), which is not among its dependencies. Add "${found.ref.stepId}" to dependsOn.`,
    };
  }
  return undefined;
}

function isPrefix(prefix: readonly (string | number)[], path: readonly PropertyKey[]): boolean {
  if (prefix.length > path.length) return false;
  for (let k = 0; k < prefix.length; k++) {
    if (String(prefix[k]) !== String(path[k])) return false;
  }
  return true;
}

function suggest(id: string, index: Map<string, number>): string {
  const ids = [...index.keys()];
  const close = ids.find((k) => k.toLowerCase() === id.toLowerCase()) ??
    ids.find((k) => distance(k, id) <= Math.min(2, Math.floor(id.length / 3)));
  return close
    ? `Did you mean "${close}"?`
    : `Known steps: ${ids.slice(0, 20).join(", ") || "(none)"}.`;
}

function distance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
}

/** Thrown when a plan has problems; carries them all. */
export class PlanValidationError extends StepflowError {
  /** Every problem. */
  readonly problems: PlanProblem[];
  /**
   * Creates the error from its problems.
   *
   * @param problems the problems found
   * @param source where the plan came from (file name), for the message
   */
  constructor(problems: PlanProblem[], source?: string) {
    super(
      "PLAN_INVALID",
      `${source ? `${source}: ` : ""}the plan has ${problems.length} problem${
        problems.length === 1 ? "" : "s"
      }:\n  ${problems.map((p) => p.message).join("\n  ")}`,
      { details: { problems, source } },
    );
    this.problems = problems;
  }
}

/**
 * Validates and returns the parsed plan, or throws {@linkcode PlanValidationError} with every
 * problem.
 */
export function assertValidPlan(plan: unknown, tools?: PlanToolRegistry, source?: string): Plan {
  const parsed = PlanSchema.safeParse(fillStepOrders(plan));
  if (!parsed.success) {
    throw new PlanValidationError(
      parsed.error.issues.map((issue) => ({ code: "PLAN_SCHEMA", message: formatIssue(issue) })),
      source,
    );
  }
  const problems = checkSteps(parsed.data.steps, tools);
  if (problems.length > 0) throw new PlanValidationError(problems, source);
  return parsed.data;
}
