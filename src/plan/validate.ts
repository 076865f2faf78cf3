/**
 * Plan validation (`validatePlan`, docs/tool-plans.md), reporting every problem instead of the
 * first one.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { buildGraph, dependsTransitively, findCycles, type PlanGraph } from "./graph.ts";
import { collectRefs, type FoundRef } from "./refs.ts";
import { fillStepOrders, formatPath, planIssueMessages, PlanSchema } from "./schema.ts";
import { closestMatch } from "../definition/suggest.ts";
import { configuredMcpServers, unknownMcpToolMessage } from "../mcp/tool_names.ts";
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
  const data = fillStepOrders(plan);
  const parsed = PlanSchema.safeParse(data);
  if (!parsed.success) {
    const issues = planIssueMessages(parsed.error.issues, data);
    const shape: PlanProblem[] = issues.map((m) => ({
      code: "PLAN_SCHEMA",
      message: m.message,
      path: m.path,
    }));
    // Every problem in one pass: the steps are checked as far as they can be read, except where
    // the shape is already wrong (an id that is not a string is not also a duplicate). An extra
    // key leaves the rest of its object readable.
    const broken = issues.filter((m) => m.code !== "unrecognized_keys").map((m) => m.path);
    const rest = checkSteps(looseSteps(data), tools).filter((p) =>
      !broken.some((at) => at.length > 0 && isPrefix(at, p.path ?? []))
    );
    const problems = [...shape, ...rest].sort((a, b) => stepIndexOf(a) - stepIndexOf(b));
    return { ok: false, problems };
  }
  const problems = checkSteps(parsed.data.steps, tools);
  return { ok: problems.length === 0, problems };
}

/**
 * The steps of a plan that failed its schema, read as far as they can be (a field of the wrong
 * type becomes empty), so that {@linkcode checkSteps} can report their tools, dependencies and
 * references in the same pass.
 */
function looseSteps(data: unknown): Step[] {
  const raw = isRecord(data) && Array.isArray(data.steps) ? data.steps : [];
  return raw.map((value, i): Step => {
    const step = isRecord(value) ? value : {};
    const text = (v: unknown) => (typeof v === "string" ? v : "");
    return {
      id: text(step.id),
      order: i + 1,
      description: text(step.description),
      tool: text(step.tool),
      args: isRecord(step.args) ? step.args : {},
      dependsOn: Array.isArray(step.dependsOn)
        ? step.dependsOn.filter((d): d is string => typeof d === "string")
        : [],
      status: "pending",
    };
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
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

  const toolNames = tools?.describe().map((t) => t.name) ?? [];
  const known = toolNames.join(", ");
  const mcpServers = tools ? configuredMcpServers(toolNames, tools.mcpServerNames?.()) : [];
  const unknownTool = (name: string) => {
    const mcp = unknownMcpToolMessage(name, toolNames, mcpServers);
    if (mcp !== undefined) return `Unknown tool: ${name}: ${mcp}`;
    const guess = closestMatch(name, toolNames);
    return `Unknown tool: ${name}.${guess === undefined ? "" : ` Did you mean "${guess}"?`}` +
      ` Available tools: ${known || "(none)"}.`;
  };
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
          message: `Step "${step.id}": ${unknownTool(step.tool)}`,
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
  const close = closestMatch(id, ids);
  return close
    ? `Did you mean "${close}"?`
    : `Known steps: ${ids.slice(0, 20).join(", ") || "(none)"}.`;
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
  const checked = validatePlan(plan, tools);
  if (!checked.ok) throw new PlanValidationError(checked.problems, source);
  return PlanSchema.parse(fillStepOrders(plan));
}
