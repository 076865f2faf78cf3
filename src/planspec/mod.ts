/**
 * PlanSpec (`@stepflow/core/planspec`): a compact plan-tree text format for LLM planning and
 * progress tracking, its command protocol (`PLAN_CMD:`), file storage, a terminal renderer, and a
 * plan-and-execute runner.
 *
 * ```
 * # Plan: Release 1.2
 * Goal: Ship version 1.2 with the new exporter
 * Constraints:
 * - No breaking API changes
 * ## Steps
 * 1. [x] [reason] List the changes since 1.1 from the changelog and commits → changes | 14 changes
 * 2. [>] [subtask] Prepare the release → release_notes | Progress: 1/2
 *   2.1. [x] [act] Write the release notes from the change list → release_notes | done
 *     > ← changes
 *   2.2. [act] Bump the version in deno.json and tag the commit → tag
 * 3. [decide] Whether the CI run is green
 *   3.1. [act] Green → publish the package
 *   3.2. [act] Red → open an issue with the failing jobs
 * ```
 *
 * @example Parse, change, write back
 * ```ts
 * import { applyCommands, parsePlan, parsePlanCommands, serializePlan, validatePlan } from "./mod.ts";
 * const plan = parsePlan("Goal: Clean the data\n## Steps\n1. [act] Load → raw\n2. [act] Clean → cleaned\n");
 * console.log(validatePlan(plan)); // []
 * const errors = applyCommands(plan, parsePlanCommands("PLAN_CMD: ADD 2 [reason] Profile the raw data → profile"));
 * console.log(errors, serializePlan(plan));
 * ```
 *
 * @module
 */
export {
  createPlanCommand,
  createPlanSpec,
  createPlanStep,
  isContainerType,
  isValidStepType,
  PLAN_OPS,
  PLAN_STEP_TYPES,
  type PlanCommand,
  type PlanOp,
  type PlanProgress,
  type PlanSpec,
  PlanStatus,
  type PlanStep,
  type PlanStepType,
} from "./types.ts";
export { PlanParseError, PlanSerializeError } from "./errors.ts";
export { MAX_PLAN_DEPTH, PlanTooDeepError } from "./depth.ts";
export { parsePlan, parseStepLines } from "./parse.ts";
export { type SerializeOptions, serializePlan } from "./serialize.ts";
export { planErrors, validatePlan } from "./validate.ts";
export {
  clonePlan,
  cloneStep,
  collapseStep,
  expandStep,
  findStep,
  isComplete,
  isConverged,
  planProgress,
  renumberSteps,
  replaceChildren,
  type StepLocation,
  walkSteps,
} from "./tree.ts";
export {
  applyCommand,
  applyCommands,
  formatPlanCommand,
  type ParseCommandsOptions,
  parsePlanCommands,
} from "./commands.ts";
export {
  type HopStepType,
  planToSteps,
  type StepInfo,
  stepsToPlan,
  type StepsToPlanOptions,
} from "./hopspec.ts";
export { type RenderOptions, renderPlan, renderPlanTree } from "./render.ts";
export {
  archivePlan,
  freePlanFile,
  isPlanName,
  listPlans,
  type PlanListing,
  planspecDir,
  readPlanFile,
  type ResolvedPlan,
  resolvePlanRef,
  snakeName,
  writePlanFile,
  writeTextFile,
} from "./store.ts";
export {
  GENERATE_STEP_ID,
  type GeneratedPlan,
  generatePlan,
  type GeneratePlanOptions,
} from "./generate.ts";
export { loadPlanPrompts, PLAN_PROMPT_NAMES, type PlanPrompts } from "./prompts.ts";
export { type PlanHistoryEntry, type PlanHistoryKind, readHistory } from "./history.ts";
export { PlanRunner } from "./runner.ts";
export {
  PLAN_RUN_STEP_IDS,
  type PlanRunnerOptions,
  type PlanRunResult,
  type PlanRunStatus,
} from "./run_types.ts";
export type {
  Reflection,
  ReflectionDecision,
  StepOutput,
  StepStatusCode,
} from "./runner_schemas.ts";
export { REFLECTION_DECISIONS, STEP_STATUS_CODES } from "./runner_schemas.ts";
// Types of the shared contracts that appear in this module's signatures. The event vocabulary's
// `StepInfo` is re-exported as `EventStepInfo`: here `StepInfo` is HopSpec's step.
export type {
  LlmBackend,
  LlmCallOptions,
  LlmRequest,
  LlmRequestKind,
  LlmResponse,
  LlmUsage,
} from "../llm/types.ts";
export type { RetryInfo } from "../llm/retry.ts";
export type {
  ExecutorEvents,
  RunContext,
  RunState,
  StepInfo as EventStepInfo,
} from "../events/types.ts";
export { StepflowError } from "../errors.ts";
