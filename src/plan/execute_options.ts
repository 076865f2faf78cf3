/**
 * The options of a plan run ({@linkcode ExecutePlanOptions}), its handle ({@linkcode PlanRun}),
 * and what is checked before anything runs: the default failure strategy, the plan itself, and a
 * backend for steps that recover with an LLM.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { ExecutorEvents } from "../events/types.ts";
import type { LlmBackend } from "../llm/types.ts";
import { parseOnError } from "./on_error.ts";
import { PlanSchema } from "./schema.ts";
import { checkSteps, PlanValidationError } from "./validate.ts";
import type {
  Approver,
  ErrorStrategy,
  ExecutionSummary,
  OnErrorSetting,
  Plan,
  PlanToolRegistry,
  ProgressEvent,
} from "./types.ts";

/** Options of {@linkcode executePlan} and {@linkcode startPlan}. */
export interface ExecutePlanOptions {
  /** The tools steps may call (a `ToolRegistry`). */
  tools: PlanToolRegistry;
  /** Workspace root handed to tools (default: the current directory). */
  workspaceRoot?: string;
  /** How many steps may run at once (default 4). */
  concurrency?: number;
  /** Asked before a step that needs approval runs. Without it, such steps are denied (skipped). */
  approver?: Approver;
  /** `true` approves everything; a list approves those tools without asking. */
  autoApprove?: boolean | readonly string[];
  /** The LLM backend used by `onError: "recover"` (required when a step uses it). */
  backend?: LlmBackend;
  /** Model override for recovery calls. */
  model?: string;
  /** Recovery rounds per step when `onError` is plain `"recover"` (default 2). */
  maxRecoveries?: number;
  /** Base delay before the first retry in ms, doubled for each further retry (default 1000). */
  retryBackoffMs?: number;
  /** Upper bound of one retry delay in ms (default 30 000). */
  maxBackoffMs?: number;
  /** `onError` of steps that set none (default `"fail"`). */
  defaultOnError?: OnErrorSetting;
  /** Handlers of the shared step events (onPlanStart, onStepStart, onStepRetry, …). */
  events?: ExecutorEvents | readonly ExecutorEvents[];
  /** Cancels the run. */
  signal?: AbortSignal;
  /** Run id (default: a random UUID). */
  runId?: string;
  /** Called with every progress event, as it happens. */
  onProgress?: (event: ProgressEvent) => void;
  /**
   * Saves the plan. Called after every step settles (calls never overlap; changes made while a save
   * runs are saved right after it) and once at the end.
   */
  persist?: (plan: Plan) => void | Promise<void>;
  /** Extra fields for every tool context. */
  toolContext?: Record<string, unknown>;
  /** Validate the plan first (default true). Turn off only for plans validated already. */
  validate?: boolean;
  /**
   * Steps found `running` were started by an earlier run that stopped (killed, crashed) before
   * their outcome was saved: the tool may have done its work. Such a step runs again on its own
   * only when its tool is declared `idempotent`; others run again when this is `true` or lists
   * their ids — otherwise {@linkcode startPlan} throws `PLAN_STEP_INTERRUPTED` before anything runs.
   */
  rerunInterrupted?: boolean | readonly string[];
}

/** A run in progress (see {@linkcode startPlan}). */
export interface PlanRun {
  /** The run id. */
  readonly runId: string;
  /** The live plan: statuses and results change as the run goes. */
  readonly plan: Plan;
  /** Every progress event from the start of the run; ends when the run ends. */
  readonly progress: AsyncIterable<ProgressEvent>;
  /** Resolves when the run has ended (it never rejects for step failures). */
  readonly summary: Promise<ExecutionSummary>;
  /** Cancels the run: no new step starts, running tools get an aborted signal. */
  cancel(reason?: string): void;
}

/**
 * The failure strategy of steps that set no `onError`.
 *
 * @throws StepflowError `USAGE` when `defaultOnError` is not a strategy
 */
export function defaultStrategyOf(options: ExecutePlanOptions): ErrorStrategy {
  const strategy = parseOnError(options.defaultOnError);
  if (!strategy) {
    throw new StepflowError(
      "USAGE",
      `defaultOnError ${
        JSON.stringify(options.defaultOnError)
      } is not a failure strategy ("fail", "continue", "retry=N", "recover").`,
    );
  }
  return strategy;
}

/**
 * The plan a run works on: a validated copy (or a plain copy with `validate: false`), so the
 * caller's object is never modified.
 *
 * @throws PlanValidationError when the plan is invalid
 * @throws StepflowError `PLAN_RECOVER_NO_BACKEND` when a step recovers with an LLM and no backend
 *   was given
 */
export function checkedPlan(
  plan: Plan,
  options: ExecutePlanOptions,
  defaultStrategy: ErrorStrategy,
): Plan {
  let copy: Plan;
  if (options.validate === false) {
    copy = { ...plan, steps: plan.steps.map((s) => ({ ...s })) };
  } else {
    // Parsing copies the plan.
    const parsed = PlanSchema.safeParse(plan);
    if (!parsed.success) {
      throw new PlanValidationError(
        parsed.error.issues.map((i) => ({
          code: "PLAN_SCHEMA" as const,
          message: `${i.path.join(".")}: ${i.message}`,
        })),
      );
    }
    copy = parsed.data;
    const problems = checkSteps(copy.steps, options.tools);
    if (problems.length > 0) throw new PlanValidationError(problems);
  }
  if (!options.backend) {
    const needs = copy.steps.find((s) =>
      (s.onError === undefined ? defaultStrategy : parseOnError(s.onError))?.kind === "recover"
    );
    if (needs) {
      throw new StepflowError(
        "PLAN_RECOVER_NO_BACKEND",
        `Step "${needs.id}" uses onError "recover", which asks an LLM, but no backend was given. Pass a backend (CLI: --backend …), or change its onError.`,
        { details: { stepId: needs.id } },
      );
    }
  }
  return copy;
}
