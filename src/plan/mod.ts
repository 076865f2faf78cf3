/**
 * Executable tool plans (docs/tool-plans.md): a plan is a DAG of tool calls. This module validates
 * plans, runs them with parallelism, approvals, `$step` references and per-step error strategies
 * (including LLM recovery), generates them with an LLM, and edits them.
 *
 * @example
 * ```ts
 * import { createPlanTools, executePlan, parsePlan, validatePlan } from "./mod.ts";
 *
 * const workspaceRoot = await Deno.makeTempDir();
 * const tools = createPlanTools();
 * const plan = parsePlan({
 *   id: "plan_1",
 *   taskId: "task_1",
 *   version: 1,
 *   createdAt: new Date().toISOString(),
 *   steps: [
 *     { id: "step_1", description: "Write notes", tool: "write_file", args: { path: "notes.txt", content: "hi" } },
 *     { id: "step_2", description: "Read them back", tool: "read_file", args: { path: "notes.txt" }, dependsOn: ["step_1"] },
 *     { id: "step_3", description: "Copy", tool: "write_file", args: { path: "copy.txt", content: "$step_2" }, dependsOn: ["step_2"] },
 *   ],
 * });
 * console.log(validatePlan(plan, tools).ok); // true
 * const summary = await executePlan(plan, { tools, workspaceRoot });
 * console.log(summary.status); // "completed"
 * ```
 *
 * @module
 */
export type {
  ApprovalDecision,
  ApprovalRequest,
  Approver,
  ArgIssue,
  ErrorStrategy,
  ExecutionStatus,
  ExecutionSummary,
  LogEntry,
  NewStep,
  OnErrorPolicy,
  OnErrorSetting,
  Plan,
  PlannedStep,
  PlanProblem,
  PlanProblemCode,
  PlanToolContext,
  PlanToolDescriptor,
  PlanToolRegistry,
  PlanValidation,
  ProgressEvent,
  RecoverSetting,
  RecoveryDecision,
  RetrySetting,
  Step,
  StepResult,
  StepStatus,
} from "./types.ts";
export { parsePlan, planJsonSchema, PlanParseError } from "./schema.ts";
export { STEP_STATUSES } from "./types.ts";
export { assertValidPlan, PlanValidationError, validatePlan } from "./validate.ts";
export { executePlan, type ExecutePlanOptions, type PlanRun, startPlan } from "./executor.ts";
export { EventLog } from "./progress.ts";
export {
  type ApprovalRecord,
  approvalsDir,
  type ApprovalState,
  decideApproval,
  fileApprover,
  type FileApproverOptions,
  firstApproval,
  isAnsweredElsewhere,
  listApprovals,
  recordedApprover,
} from "./file_approver.ts";
// The step ids of the LLM calls (what a scripted backend keys its answers on) are public too.
export {
  GENERATE_STEP_ID,
  generatePlan,
  type GeneratePlanOptions,
  PlanGenerationError,
  type PlanTask,
  REVISE_STEP_ID,
  revisePlan,
  type RevisePlanOptions,
  type SnapshotOptions,
  snapshotWorkspace,
} from "./generate.ts";
export {
  addStep,
  type AddStepOptions,
  type EditOptions,
  editStep,
  PlanEditError,
  removeStep,
  reorderStep,
  skipStep,
  type StepChanges,
} from "./edit.ts";
export { RECOVER_STEP_ID } from "./recovery.ts";
export { renderPlanReview, type ReviewOptions } from "./review.ts";
export { readPlanFile, resetPlan, writePlanFile } from "./plan_file.ts";
export { createPlanTools, type PlanArgSchema, type PlanTool, type PlanToolbox } from "./tools.ts";
export type { BuiltinToolOptions } from "../tools/builtin.ts";
export type { HttpToolOptions } from "../tools/builtin_http.ts";
export type { CommandToolOptions } from "../tools/builtin_command.ts";
// Types of the shared contracts that appear in this module's signatures.
export type {
  LlmBackend,
  LlmCallOptions,
  LlmRequest,
  LlmRequestKind,
  LlmResponse,
  LlmUsage,
} from "../llm/types.ts";
export type { RetryInfo } from "../llm/retry.ts";
export type { ExecutorEvents, RunContext, RunState, StepInfo } from "../events/types.ts";
export { StepflowError } from "../errors.ts";
