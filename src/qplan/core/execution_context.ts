/**
 * The memory of one QPlan run: variables (action outputs, `var`, loop variables, params) and the
 * step results stored at `ctx[runId][namespace]`.
 *
 * @module
 */
import { setOwn } from "../../own_record.ts";
import type { ToolContext } from "../../tools/types.ts";
import type { StepNode } from "../step/step_types.ts";

/**
 * Variables and step results of a run. Names resolve to a variable first, then to a step result
 * (`read.data` reads the result of step `read`).
 *
 * @example
 * ```ts
 * import { ExecutionContext } from "./execution_context.ts";
 * const ctx = new ExecutionContext("run-1", { limit: 3 });
 * ctx.setStepResult("load", { rows: 2 });
 * console.log(ctx.get("limit"), ctx.get("load"), ctx.runs["run-1"]); // 3 { rows: 2 } { load: { rows: 2 } }
 * ```
 */
export class ExecutionContext {
  /** The run id. */
  readonly runId: string;
  /** Variables by name. */
  readonly vars: Map<string, unknown> = new Map();
  /** `ctx[runId]` for every run that used this context (one here). */
  readonly runs: Record<string, Record<string, unknown>> = {};
  /** `ctx[runId]`: step results by namespace. */
  readonly results: Record<string, unknown>;

  /**
   * Creates the memory of a run, with the params as its first variables.
   *
   * @param runId the run id
   * @param params initial variables
   */
  constructor(runId: string, params: Record<string, unknown> = {}) {
    this.runId = runId;
    this.results = {};
    setOwn(this.runs, runId, this.results);
    for (const [k, v] of Object.entries(params)) this.vars.set(k, v);
  }

  /** True when `name` is a variable or a step namespace. */
  has(name: string): boolean {
    return this.vars.has(name) || Object.hasOwn(this.results, name);
  }

  /** The variable (or else step result) called `name`; undefined when neither exists. */
  get(name: string): unknown {
    const v = this.vars.get(name);
    if (v !== undefined || this.vars.has(name)) return v;
    return Object.hasOwn(this.results, name) ? this.results[name] : undefined;
  }

  /** Creates or replaces a variable. */
  set(name: string, value: unknown): void {
    this.vars.set(name, value);
  }

  /** Stores a step result at `ctx[runId][namespace]` and, when `stepId` differs, under the step id too. */
  setStepResult(namespace: string, value: unknown, stepId?: string): void {
    setOwn(this.results, namespace, value);
    if (stepId !== undefined && stepId !== namespace) setOwn(this.results, stepId, value);
  }

  /** The variables as a plain object. */
  variables(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [k, v] of this.vars) setOwn(out, k, v);
    return out;
  }
}

/**
 * The extra fields QPlan passes to every tool in its {@linkcode ToolContext}: the run id and read
 * access to the run's variables (`join` reads futures by name).
 */
export interface QPlanToolContext extends ToolContext {
  /** The run id. */
  runId: string;
  /** The run's variables and step results. */
  qplan: Pick<ExecutionContext, "get" | "has">;
}

/** The run-wide part of every {@linkcode QPlanToolContext}. */
export interface ToolContextBase {
  /** Absolute workspace root. */
  workspaceRoot: string;
  /** Cancels tool calls when the run is aborted, times out or ends. */
  signal: AbortSignal;
  /** The run id. */
  runId: string;
  /** The run's variables and step results. */
  qplan: Pick<ExecutionContext, "get" | "has">;
}

/** Where a statement runs: the enclosing step (if any) and its last action value. */
export interface Frame {
  /** The step whose body is running; undefined at the top level. */
  step: StepNode | undefined;
  /** The enclosing frame. */
  parent: Frame | undefined;
  /** True once an action or `var` (here or in a nested step) produced a value in this frame. */
  hasValue: boolean;
  /** That value. */
  lastValue: unknown;
  /** The tool context handed to tools called from this frame. */
  tool: QPlanToolContext;
}

/** Creates the frame of a step body (or the top level when `step` is undefined). */
export function createFrame(
  parent: Frame | undefined,
  step: StepNode | undefined,
  base: ToolContextBase,
): Frame {
  const tool: QPlanToolContext = {
    workspaceRoot: base.workspaceRoot,
    signal: base.signal,
    runId: base.runId,
    qplan: base.qplan,
  };
  if (step) tool.stepId = step.id;
  return { step, parent, hasValue: false, lastValue: undefined, tool };
}
