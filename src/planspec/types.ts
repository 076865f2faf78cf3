/**
 * The PlanSpec data model (docs/planspec.md, "Data model and API"), in camelCase.
 *
 * The model is produced by the parser and by the command protocol, never read from JSON, so it is
 * written as plain interfaces; the JSON that crosses a boundary (LLM structured output) has zod
 * schemas in `runner_schemas.ts`.
 *
 * @module
 */

/**
 * The status values of a plan step.
 *
 * @example
 * ```ts
 * import { PlanStatus } from "./types.ts";
 * console.log(PlanStatus.DONE); // "done"
 * ```
 */
export const PlanStatus = {
  /** Pending execution (the marker is omitted when serialized). */
  PENDING: "pending",
  /** In progress, `[>]`. */
  ACTIVE: "active",
  /** Completed, `[x]`. */
  DONE: "done",
  /** Blocked, `[!]`. */
  BLOCKED: "blocked",
  /** Skipped, `[~]`. */
  SKIPPED: "skipped",
} as const;

/** One of `"pending" | "active" | "done" | "blocked" | "skipped"`. */
export type PlanStatus = typeof PlanStatus[keyof typeof PlanStatus];

/** The four valid step types. */
export const PLAN_STEP_TYPES: readonly PlanStepType[] = ["reason", "act", "decide", "subtask"];

/**
 * A valid step type: `reason` and `act` are leaves, `decide` (children are branches) and `subtask`
 * (children are sub-steps) are containers. {@linkcode PlanStep.stepType} is a plain string so that a
 * plan with an invalid type still parses and {@linkcode validatePlan} can report it.
 */
export type PlanStepType = "reason" | "act" | "decide" | "subtask";

/** One step of the plan tree. */
export interface PlanStep {
  /** Positional id: `"1"`, `"2.1"`, `"2.1.3"` (the k-th child of step P is `P.k`). */
  stepId: string;
  /** Optional unique identifier injected by tools (e.g. 8 hex digits); `""` when unnamed. */
  stepName: string;
  /** `reason`, `act`, `decide` or `subtask` (anything else is a validation error). */
  stepType: string;
  /** LLM-oriented task description. */
  description: string;
  /** `← inputs` declared in the node body. */
  inputs: string[];
  /** `→ outputs` declared on the summary line. */
  outputs: string[];
  /** `>` node body lines (without the `> ` prefix and without the `← inputs` line). */
  detail: string[];
  /** `| result`: what actually happened, filled after execution. */
  result: string;
  /** Execution status. */
  status: PlanStatus;
  /**
   * Transient rendering flag (never serialized nor parsed): `true` forces detail and children to
   * show, `false` hides both, absent follows the status rules. Only `serializePlan(…, {fold: true})`
   * and `renderPlan` read it.
   */
  expanded?: boolean;
  /** Completed iterations (`| Progress: N…`). */
  doneCount: number;
  /** Total iterations, or `null` when unknown / not a loop. */
  totalCount: number | null;
  /** Sub-steps (only `subtask` and `decide` may have them). */
  children: PlanStep[];
}

/** A whole plan document. */
export interface PlanSpec {
  /** `# Plan: <title>`; `""` when absent. */
  title: string;
  /** `Goal: <goal>`. */
  goal: string;
  /** `>` lines after the goal. */
  goalDetail: string[];
  /** `Constraints:` list items. */
  constraints: string[];
  /** The step tree (`## Steps`). */
  steps: PlanStep[];
}

/** Step counts by status, over every step of the tree (children included). */
export interface PlanProgress {
  /** Number of steps. */
  total: number;
  /** `done` steps. */
  done: number;
  /** `active` steps. */
  active: number;
  /** `blocked` steps. */
  blocked: number;
  /** `pending` steps. */
  pending: number;
  /** `skipped` steps. */
  skipped: number;
}

/**
 * The eight command operations, in three layers: engine (`DONE`, `BLOCKED`, `SKIP`), LLM (`ADD`,
 * `REVISE`, `REPLAN`) and view (`EXPAND`, `COLLAPSE`).
 */
export type PlanOp =
  | "DONE"
  | "BLOCKED"
  | "SKIP"
  | "ADD"
  | "REVISE"
  | "REPLAN"
  | "EXPAND"
  | "COLLAPSE";

/** Every valid {@linkcode PlanOp}. */
export const PLAN_OPS: readonly PlanOp[] = [
  "DONE",
  "BLOCKED",
  "SKIP",
  "ADD",
  "REVISE",
  "REPLAN",
  "EXPAND",
  "COLLAPSE",
];

/** A parsed `PLAN_CMD:` command. */
export interface PlanCommand {
  /** The operation. */
  op: PlanOp;
  /** Target step id (`"ALL"` for a global `REPLAN ALL`). */
  stepId: string;
  /** Step type, for `ADD` / `REVISE`. */
  stepType: string;
  /** Description (without `→ outputs`), for `ADD` / `REVISE`. */
  description: string;
  /** `→ outputs` of the new or revised step, for `ADD` / `REVISE`. */
  outputs: string[];
  /** `> ← inputs` continuation lines, for `ADD` / `REVISE`. */
  inputs: string[];
  /** Result or reason after `|`, for `DONE` / `BLOCKED` / `SKIP` / `REPLAN`. */
  result: string;
  /** `>` continuation lines (node body), for `ADD` / `REVISE`. */
  detail: string[];
}

/**
 * Builds a {@linkcode PlanStep} with every field defaulted.
 *
 * @example
 * ```ts
 * import { createPlanStep } from "./types.ts";
 * const step = createPlanStep({ stepId: "1", stepType: "act", description: "Clean data" });
 * console.log(step.status); // "pending"
 * ```
 */
export function createPlanStep(fields: Partial<PlanStep> & { stepId: string }): PlanStep {
  return {
    stepName: "",
    stepType: "",
    description: "",
    inputs: [],
    outputs: [],
    detail: [],
    result: "",
    status: PlanStatus.PENDING,
    doneCount: 0,
    totalCount: null,
    children: [],
    ...fields,
  };
}

/**
 * Builds a {@linkcode PlanSpec} with every field defaulted.
 *
 * @example
 * ```ts
 * import { createPlanSpec } from "./types.ts";
 * console.log(createPlanSpec({ goal: "Ship it" }).steps); // []
 * ```
 */
export function createPlanSpec(fields: Partial<PlanSpec> = {}): PlanSpec {
  return { title: "", goal: "", goalDetail: [], constraints: [], steps: [], ...fields };
}

/**
 * Builds a {@linkcode PlanCommand} with every field defaulted.
 *
 * @example
 * ```ts
 * import { createPlanCommand } from "./types.ts";
 * const cmd = createPlanCommand({ op: "SKIP", stepId: "3", result: "not needed" });
 * ```
 */
export function createPlanCommand(
  fields: Partial<PlanCommand> & { op: PlanOp },
): PlanCommand {
  return {
    stepId: "",
    stepType: "",
    description: "",
    outputs: [],
    inputs: [],
    result: "",
    detail: [],
    ...fields,
  };
}

/** True for `subtask` and `decide`, the only types that may have children. */
export function isContainerType(stepType: string): boolean {
  return stepType === "subtask" || stepType === "decide";
}

/** True for the four valid step types. */
export function isValidStepType(stepType: string): stepType is PlanStepType {
  return stepType === "reason" || stepType === "act" || stepType === "decide" ||
    stepType === "subtask";
}
