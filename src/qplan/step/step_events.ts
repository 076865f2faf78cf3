/**
 * Step events (docs/qplan.md, "Events") on the project's shared event vocabulary (`src/events`):
 * the QPlan
 * `stepInfo`, the plan object of `onPlanStart`/`onPlanEnd`, and the dispatcher the step controller
 * and the run use. Handlers that throw are logged and skipped; they never break a run.
 *
 * @module
 */
import { createEventEmitter, type EventEmitter } from "../../events/emitter.ts";
import type { ExecutorEvents, RunContext, RunState, StepInfo } from "../../events/types.ts";
import type { PlanMetaEntry } from "../core/ast.ts";
import type { ResolvedStep, StepErrorPolicy } from "./step_types.ts";

/**
 * The `stepInfo` QPlan passes to step events:
 * `{ runId, stepId, desc, type, order, path, depth, parentStepId, errorPolicy }`.
 * `desc` is the step's description or its id; `order` is the step's static pre-order number
 * (docs/qplan.md, "Steps"), the same on every attempt.
 */
export interface QPlanStepInfo extends StepInfo {
  /** The step's `type` tag. */
  type?: string;
  /** Nesting depth, 0 for a top-level step. */
  depth: number;
  /** The step's error policy (`fail` when none was given). */
  errorPolicy: StepErrorPolicy;
}

/** The plan object of `onPlanStart` / `onPlanEnd`. */
export interface QPlanPlanInfo {
  /** The run id. */
  runId: string;
  /** How many steps the script has. */
  totalSteps: number;
  /** The top-level steps. */
  rootSteps: QPlanStepInfo[];
  /** Every step in script order. */
  steps: QPlanStepInfo[];
  /** The plan header (`@title` …) as key → value. */
  planMeta: Record<string, string>;
}

/** How a run ended. */
export type QPlanRunStatus = "completed" | "stopped" | "aborted" | "error";

/** The context of plan-level events: the run id, and at the end the status and error. */
export interface QPlanRunContext extends RunContext {
  /** Set on `onPlanEnd`. */
  status?: QPlanRunStatus;
  /** Set on `onPlanEnd` when the run failed, was aborted or timed out. */
  error?: { message: string; line?: number };
}

/** Builds the `stepInfo` of a resolved step. */
export function createStepEventInfo(step: ResolvedStep, runId: string): QPlanStepInfo {
  const node = step.node;
  const info: QPlanStepInfo = {
    runId,
    stepId: node.id,
    desc: node.desc ?? node.id,
    order: node.order,
    path: [...node.path],
    depth: step.depth,
    errorPolicy: step.policy,
  };
  if (node.type !== undefined) info.type = node.type;
  if (step.parentId !== undefined) info.parentStepId = step.parentId;
  return info;
}

/** Builds the plan object of `onPlanStart` / `onPlanEnd`. */
export function createPlanInfo(
  steps: ResolvedStep[],
  meta: PlanMetaEntry[],
  runId: string,
): QPlanPlanInfo {
  const all = steps.map((s) => createStepEventInfo(s, runId));
  const planMeta: Record<string, string> = {};
  for (const m of meta) planMeta[m.key] = m.value;
  return {
    runId,
    totalSteps: steps.length,
    rootSteps: all.filter((s) => s.depth === 0),
    steps: all,
    planMeta,
  };
}

/**
 * Typed, safe dispatch of the twelve events of a QPlan run. Each method awaits the handlers (in
 * registration order) and skips the work entirely when nobody listens.
 */
export class StepEvents {
  readonly #emitter: EventEmitter;
  readonly #infos = new Map<ResolvedStep, QPlanStepInfo>();
  readonly #runId: string;

  /**
   * Creates the dispatcher of one run's events.
   *
   * @param handlers one handler set or several
   * @param runId the run id put in every `stepInfo`
   */
  constructor(
    handlers: ExecutorEvents | ReadonlyArray<ExecutorEvents | undefined> | undefined,
    runId: string,
  ) {
    const list = Array.isArray(handlers) ? handlers : [handlers as ExecutorEvents | undefined];
    this.#emitter = createEventEmitter(list);
    this.#runId = runId;
  }

  /** Adds a handler set; returns a function that removes it. */
  add(handlers: ExecutorEvents): () => void {
    return this.#emitter.add(handlers);
  }

  /** The (cached) `stepInfo` of a step. */
  info(step: ResolvedStep): QPlanStepInfo {
    let info = this.#infos.get(step);
    if (!info) {
      info = createStepEventInfo(step, this.#runId);
      this.#infos.set(step, info);
    }
    return info;
  }

  /** `onPlanStart(plan, context)`. */
  planStart(plan: QPlanPlanInfo, ctx: QPlanRunContext): Promise<void> {
    return this.#emitter.emit("onPlanStart", plan, ctx);
  }

  /** `onPlanEnd(plan, context)` with `context.status`. */
  planEnd(plan: QPlanPlanInfo, ctx: QPlanRunContext): Promise<void> {
    return this.#emitter.emit("onPlanEnd", plan, ctx);
  }

  /** `onStepStart(stepInfo)`. */
  stepStart(step: ResolvedStep): Promise<void> | undefined {
    if (!this.#emitter.has("onStepStart")) return undefined;
    return this.#emitter.emit("onStepStart", this.info(step));
  }

  /** `onStepEnd(stepInfo, result)`. */
  stepEnd(step: ResolvedStep, result: unknown): Promise<void> | undefined {
    if (!this.#emitter.has("onStepEnd")) return undefined;
    return this.#emitter.emit("onStepEnd", this.info(step), result);
  }

  /** `onStepError(stepInfo, error)`. */
  stepError(step: ResolvedStep, error: Error): Promise<void> | undefined {
    if (!this.#emitter.has("onStepError")) return undefined;
    return this.#emitter.emit("onStepError", this.info(step), error);
  }

  /** `onStepRetry(stepInfo, attempt, error)`; `attempt` is the 1-based retry number. */
  stepRetry(step: ResolvedStep, attempt: number, error: Error): Promise<void> | undefined {
    if (!this.#emitter.has("onStepRetry")) return undefined;
    return this.#emitter.emit("onStepRetry", this.info(step), attempt, error);
  }

  /** `onStepJump(stepInfo, targetStepId)`. */
  stepJump(step: ResolvedStep, targetStepId: string): Promise<void> | undefined {
    if (!this.#emitter.has("onStepJump")) return undefined;
    return this.#emitter.emit("onStepJump", this.info(step), targetStepId);
  }

  /** `onAbort(context)`. */
  abort(ctx: QPlanRunContext): Promise<void> {
    return this.#emitter.emit("onAbort", ctx);
  }

  /** `onPause(context)`. */
  pause(ctx: QPlanRunContext): Promise<void> {
    return this.#emitter.emit("onPause", ctx);
  }

  /** `onResume(context)`. */
  resume(ctx: QPlanRunContext): Promise<void> {
    return this.#emitter.emit("onResume", ctx);
  }

  /** `onTimeout(context)`. */
  timeout(ctx: QPlanRunContext): Promise<void> {
    return this.#emitter.emit("onTimeout", ctx);
  }

  /** `onStateChange(newState, oldState, context)`. */
  stateChange(newState: RunState, oldState: RunState, ctx: QPlanRunContext): Promise<void> {
    return this.#emitter.emit("onStateChange", newState, oldState, ctx);
  }
}
