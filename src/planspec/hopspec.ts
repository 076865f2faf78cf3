import { assertPlanDepth } from "./depth.ts";
import { StepflowError } from "../errors.ts";
import { renumberSteps } from "./tree.ts";
import { createPlanSpec, type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

/** The seven HopSpec step types. */
export type HopStepType = "LLM" | "call" | "loop" | "branch" | "code" | "flow" | "subtask";

/**
 * A HopSpec step (the executable specification PlanSpec is the planning view of). Only the fields
 * that the PlanSpec conversions read or write are modelled; this is not the event `StepInfo` of
 * `src/events`.
 */
export interface StepInfo {
  /** Unique step name (`step_2_1` when generated). */
  stepName: string;
  /** HopSpec type. */
  stepType: HopStepType;
  /** Task of an `LLM` or `call` step. */
  task?: string;
  /** Description of a `code`, `subtask` or `loop` step. */
  description?: string;
  /** Input variables. */
  inputs?: string[];
  /** Output variables. */
  outputs?: string[];
  /** Verification strategy of an `LLM` step (`""` when converted from PlanSpec). */
  verifier?: string;
  /** Condition of a `branch` (or a condition-driven `loop`). */
  condition?: string;
  /** Expansion mode of a `subtask` (`"static"` when converted from PlanSpec). */
  expandMode?: string;
  /** Target of a `call` step. */
  callTarget?: string;
  /** Collection a `loop` traverses. */
  traversalCollection?: string;
  /** Element variable of a traversal `loop`. */
  elementVariable?: string;
  /** Action of a `flow` step, e.g. `"exit"`. */
  flowAction?: string;
  /** Status of a `flow` step, e.g. `"EXIT_OK"`. */
  flowStatus?: string;
  /** Child steps of `loop`, `branch` and `subtask`. */
  children?: StepInfo[];
}

/**
 * Converts a plan to HopSpec steps: `reason` → `LLM` (task, empty verifier), `act` → `code`,
 * `decide` → `branch` (condition), `subtask` → `subtask` (`expandMode: "static"`); inputs and
 * outputs carry over; unnamed steps get `step_<id with _>` names; a final `flow` exit step
 * (`EXIT_OK`) is appended. Status, result, progress and detail are not part of HopSpec.
 *
 * @throws {StepflowError} `PLANSPEC_CONVERT` for a step with an invalid type
 *
 * @example
 * ```ts
 * import { parsePlan, planToSteps } from "./mod.ts";
 * const steps = planToSteps(parsePlan("Goal: g\n1. [reason] Analyze → profile\n"));
 * console.log(steps.map((s) => `${s.stepName}:${s.stepType}`)); // ["step_1:LLM", "exit:flow"]
 * ```
 */
export function planToSteps(plan: PlanSpec): StepInfo[] {
  const steps = plan.steps.map(toHop);
  const last = steps[steps.length - 1];
  if (last === undefined || last.stepType !== "flow") {
    steps.push({ stepName: "exit", stepType: "flow", flowAction: "exit", flowStatus: "EXIT_OK" });
  }
  return steps;
}

function toHop(step: PlanStep): StepInfo {
  const stepName = step.stepName !== ""
    ? step.stepName
    : `step_${step.stepId.replaceAll(".", "_")}`;
  const io = { inputs: [...step.inputs], outputs: [...step.outputs] };
  switch (step.stepType) {
    case "reason":
      return { stepName, stepType: "LLM", task: step.description, verifier: "", ...io };
    case "act":
      return { stepName, stepType: "code", description: step.description, ...io };
    case "decide":
      return {
        stepName,
        stepType: "branch",
        condition: step.description,
        ...io,
        children: step.children.map(toHop),
      };
    case "subtask":
      return {
        stepName,
        stepType: "subtask",
        description: step.description,
        expandMode: "static",
        ...io,
        children: step.children.map(toHop),
      };
    default:
      throw new StepflowError(
        "PLANSPEC_CONVERT",
        `step ${step.stepId}: cannot convert type '${step.stepType}' to HopSpec (expected reason, act, decide or subtask); fix it with validatePlan first`,
        { details: { stepId: step.stepId } },
      );
  }
}

/** Plan-level fields for {@linkcode stepsToPlan}. */
export interface StepsToPlanOptions {
  /** Plan title. */
  title?: string;
  /** Plan goal. */
  goal?: string;
  /** Plan constraints. */
  constraints?: string[];
}

/**
 * Converts HopSpec steps to a plan (the planning view of a HopSpec program): `LLM` → `reason`
 * (description = task), `code` → `act`, `call` → `act` (description = task), `branch` → `decide`
 * (description = condition), `loop` → `subtask` (description with the traversal or condition),
 * `subtask` → `subtask`; `flow` steps are dropped. Inputs, outputs, names and children carry over;
 * ids are assigned by position and every step is pending.
 *
 * @throws {StepflowError} `PLANSPEC_CONVERT` for an unknown HopSpec type
 *
 * @example
 * ```ts
 * import { stepsToPlan } from "./mod.ts";
 * const plan = stepsToPlan([{ stepName: "s1", stepType: "LLM", task: "Summarize", outputs: ["summary"] }], { goal: "g" });
 * console.log(plan.steps[0].stepType, plan.steps[0].description); // "reason" "Summarize"
 * ```
 */
export function stepsToPlan(steps: StepInfo[], options: StepsToPlanOptions = {}): PlanSpec {
  assertPlanDepth(steps, (hop) => hop.children, (hop) => String(hop.stepName ?? "?"));
  const plan = createPlanSpec({
    title: options.title ?? "",
    goal: options.goal ?? "",
    constraints: [...(options.constraints ?? [])],
    steps: fromHopList(steps),
  });
  renumberSteps(plan.steps);
  return plan;
}

function fromHopList(steps: StepInfo[] | undefined): PlanStep[] {
  const out: PlanStep[] = [];
  for (const hop of steps ?? []) {
    const step = fromHop(hop);
    if (step) out.push(step);
  }
  return out;
}

function fromHop(hop: StepInfo): PlanStep | undefined {
  let stepType: string;
  let description: string;
  let children: PlanStep[] = [];
  switch (hop.stepType) {
    case "flow":
      return undefined;
    case "LLM":
      stepType = "reason";
      description = hop.task ?? hop.description ?? "";
      break;
    case "code":
      stepType = "act";
      description = hop.description ?? hop.task ?? "";
      break;
    case "call":
      stepType = "act";
      description = hop.task ?? hop.description ?? "";
      break;
    case "branch":
      stepType = "decide";
      description = hop.condition ?? hop.description ?? "";
      children = fromHopList(hop.children);
      break;
    case "loop":
      stepType = "subtask";
      description = loopDescription(hop);
      children = fromHopList(hop.children);
      break;
    case "subtask":
      stepType = "subtask";
      description = hop.description ?? hop.task ?? "";
      children = fromHopList(hop.children);
      break;
    default:
      throw new StepflowError(
        "PLANSPEC_CONVERT",
        `HopSpec step ${JSON.stringify(hop.stepName)}: unknown type '${
          (hop as { stepType: string }).stepType
        }' (expected LLM, call, loop, branch, code, flow or subtask)`,
        { details: { stepName: hop.stepName } },
      );
  }
  return {
    stepId: "",
    stepName: hop.stepName ?? "",
    stepType,
    description: oneLine(description),
    inputs: [...(hop.inputs ?? [])],
    outputs: [...(hop.outputs ?? [])],
    detail: [],
    result: "",
    status: PlanStatus.PENDING,
    doneCount: 0,
    totalCount: null,
    children,
  };
}

function loopDescription(hop: StepInfo): string {
  const parts: string[] = [];
  if (hop.description) parts.push(hop.description);
  if (hop.traversalCollection) {
    parts.push(
      `for each ${hop.elementVariable || "item"} in ${hop.traversalCollection}`,
    );
  }
  if (hop.condition) parts.push(`while ${hop.condition}`);
  return parts.join("; ");
}

/** PlanSpec descriptions are one line without `|`. */
function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ").replaceAll("|", "/").trim();
}
