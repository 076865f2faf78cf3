/**
 * The public vocabulary of a PlanSpec run: its options, its result, and the step ids of its
 * backend calls. Shared by the loop (`runner.ts`) and its stages (`reflection.ts`,
 * `replanning.ts`, `step_context.ts`).
 *
 * @module
 */
import type { ExecutorEvents } from "../events/types.ts";
import type { LlmBackend } from "../llm/types.ts";
import type { PlanPrompts } from "./prompts.ts";
import type { PlanProgress, PlanSpec, PlanStep } from "./types.ts";

/** Step ids under which the runner calls the backend (the keys of a scripted backend's script). */
export const PLAN_RUN_STEP_IDS = {
  /** `planspec.step.<id>`: executing step `<id>` (decide steps too; re-asks reuse the key). */
  step: (stepId: string): string => `planspec.step.${stepId}`,
  /** `planspec.reflect.<id>`: reflecting on step `<id>` after a non-OK status. */
  reflect: (stepId: string): string => `planspec.reflect.${stepId}`,
  /** `planspec.replan`: end-of-round re-planning. */
  replan: "planspec.replan",
  /** `planspec.children.<id>`: writing new children after `REPLAN <id>`. */
  children: (stepId: string): string => `planspec.children.${stepId}`,
  /** `planspec.regenerate`: writing a new plan after `REPLAN ALL`. */
  regenerate: "planspec.regenerate",
} as const;

/** How a plan run ended. */
export type PlanRunStatus = "completed" | "blocked" | "failed" | "aborted";

/** Options of {@linkcode PlanRunner}. */
export interface PlanRunnerOptions {
  /** The LLM backend for every stage (step, reflection, re-planning, regeneration). */
  backend: LlmBackend;
  /**
   * The plan file. When set, it is rewritten atomically after every step and every plan change,
   * locked for the run, and a run history is kept beside it, so a killed run continues where it
   * stopped when run again.
   */
  file?: string;
  /** The history file (default `<file without .md>.history.jsonl`; none without `file`). */
  historyFile?: string;
  /** Event handlers (`onPlanStart`, `onStepStart`, `onStepEnd`, `onStepRetry`, …). */
  events?: ExecutorEvents;
  /** Rounds per run before giving up on convergence (default 3). */
  maxRounds?: number;
  /** Executions of one step (first try + retries) before it is blocked (default 3). */
  maxAttempts?: number;
  /** Iterations of an iterative (childless) subtask before it is blocked (default 20). */
  maxIterations?: number;
  /**
   * Step executions in one run before it stops as failed, a guard against plans that keep changing
   * without converging (default: 10 per step of the plan, at least 200).
   */
  maxStepExecutions?: number;
  /** Whether the user can be asked questions (`INTERACT`); needs {@linkcode ask}. */
  interactive?: boolean;
  /** Asks the user; returns the answer, or undefined / `""` when there is none. */
  ask?: (question: string, step: PlanStep) => Promise<string | undefined>;
  /** Prompt overrides (default: the built-in `prompts/planspec/*.md`). */
  prompts?: Partial<PlanPrompts>;
  /** Model override passed to the backend. */
  model?: string;
  /** Working directory passed to the backend (default `Deno.cwd()`). */
  cwd?: string;
  /** Cancels the run between and during calls. */
  signal?: AbortSignal;
  /** Run id reported in events (default a random UUID). */
  runId?: string;
  /** History entries shown to the model (default 20). */
  historyLimit?: number;
  /** Characters of one variable value shown to the model (default 2000). */
  valueLimit?: number;
  /** Progress messages (reflections, re-planning, ignored commands); default: none. */
  onLog?: (message: string) => void;
}

/** What {@linkcode PlanRunner.run} returns. */
export interface PlanRunResult {
  /** `completed` (every step done or skipped), `blocked` (rounds used up or nothing left to try),
   * `failed` (backend or file error, or the execution guard), `aborted` (signal). */
  status: PlanRunStatus;
  /** The plan as it ended (the same object the runner holds). */
  plan: PlanSpec;
  /** Step counts at the end. */
  progress: PlanProgress;
  /** The last round run. */
  rounds: number;
  /** Step executions in this run. */
  stepsExecuted: number;
  /** The blocked steps and why. */
  blocked: { stepId: string; result: string }[];
  /** Output values produced so far, by variable name. */
  variables: Record<string, unknown>;
  /** The error, for `failed` and `aborted`. */
  error?: string;
  /**
   * The stable code of a `failed` run's error, when it has one (`FILE_ACCESS`: the plan's folder or
   * history file could not be written — fix that before running again).
   */
  errorCode?: string;
}
