/**
 * The flow-control layer of steps (docs/qplan.md, "Steps"): runs one step's body through its error
 * policy (fail / continue / retry=N / jump), turns `return` / `skip` / `stop` / `jump` signals into
 * step results and events, and stores results at `ctx[runId][namespace]` with alias mirroring.
 * The executor only runs statements; everything about steps happens here.
 *
 * @module
 */
import { errorMessage } from "../../errors.ts";
import { setOwn } from "../../own_record.ts";
import type { ExecutionContext, Frame, ToolContextBase } from "../core/execution_context.ts";
import { createFrame } from "../core/execution_context.ts";
import { QPlanRuntimeError } from "../core/errors.ts";
import type { StepEvents } from "./step_events.ts";
import { type AbortedSignal, FlowSignal, JumpSignal, type ReturnSignal } from "./step_signals.ts";
import type { ResolvedStep, StepNode, StepResolution } from "./step_types.ts";

/** A failure that an error policy absorbed (`continue`) or retried. */
export interface StepFailure {
  /** The step. */
  stepId: string;
  /** 1-based attempt that failed. */
  attempt: number;
  /** The error message. */
  message: string;
  /** Line of the failing statement, when known. */
  line?: number;
  /** What happened next: the policy applied (`continue`, `retry`, `jump`, `fail`) or a `parallel ignoreErrors=true` dropped it. */
  handledBy: "continue" | "retry" | "jump" | "fail" | "ignoreErrors";
}

/** Runs a step body in a given frame; returns a promise only when the body went asynchronous. */
export type StepBody = (frame: Frame) => void | Promise<void>;

/**
 * Runs steps: events, policies, results.
 *
 * @example
 * ```ts ignore
 * const controller = new StepController(resolution, events, ctx, base, () => supervisor.aborted);
 * await controller.runStep(node, parentFrame, (frame) => executor.runBlock(node.children, frame));
 * ```
 */
export class StepController {
  /** Failures absorbed or retried by policies, in order. */
  readonly failures: StepFailure[] = [];
  readonly #resolution: StepResolution;
  readonly #events: StepEvents;
  readonly #ctx: ExecutionContext;
  readonly #base: ToolContextBase;
  readonly #aborted: () => AbortedSignal | undefined;

  /**
   * Creates the step layer of one run.
   *
   * @param resolution the script's step tables
   * @param events where step events go
   * @param ctx the run's memory (results are stored there)
   * @param base the run-wide tool context
   * @param aborted tells whether the run has been aborted (errors then are not step errors)
   */
  constructor(
    resolution: StepResolution,
    events: StepEvents,
    ctx: ExecutionContext,
    base: ToolContextBase,
    aborted: () => AbortedSignal | undefined,
  ) {
    this.#resolution = resolution;
    this.#events = events;
    this.#ctx = ctx;
    this.#base = base;
    this.#aborted = aborted;
  }

  /** The step a `jump to="id"` targets; throws when there is none. */
  jumpTo(targetId: string, at?: { line: number; column: number }, stepId?: string): JumpSignal {
    const target = this.#resolution.byId.get(targetId);
    if (!target) {
      throw new QPlanRuntimeError(`jump target '${targetId}' not found`, {
        line: at?.line,
        column: at?.column,
        stepId,
      });
    }
    return new JumpSignal(target);
  }

  /** Runs one step statement. */
  async runStep(node: StepNode, parent: Frame, body: StepBody): Promise<void> {
    const step = this.#resolution.byNode.get(node);
    if (!step) {
      throw new QPlanRuntimeError(`step '${node.id}' was not resolved`, { line: node.line });
    }
    const policy = step.policy;
    for (let attempt = 1;; attempt++) {
      const frame = createFrame(parent, node, this.#base);
      await this.#events.stepStart(step);
      try {
        const pending = body(frame);
        if (pending !== undefined) await pending;
        const result = this.#resultOf(step, frame);
        if (result.has) this.#store(step, result.value);
        passLastValue(frame, parent);
        await this.#events.stepEnd(step, result.value);
        return;
      } catch (caught) {
        let thrown = caught;
        if (thrown instanceof FlowSignal) {
          switch (thrown.signal) {
            case "return": {
              const payload = (thrown as ReturnSignal).payload;
              this.#store(step, payload);
              passLastValue(frame, parent);
              await this.#events.stepEnd(step, payload);
              return;
            }
            case "skip":
              passLastValue(frame, parent);
              await this.#events.stepEnd(step, undefined);
              return;
            case "jump":
              await this.#events.stepJump(step, (thrown as JumpSignal).target.node.id);
              throw thrown;
            case "stop":
              await this.#events.stepEnd(step, undefined);
              throw thrown;
            case "abort":
              throw thrown;
            default:
              thrown = new QPlanRuntimeError(`${thrown.signal} used outside a loop`, {
                stepId: node.id,
                line: node.line,
              });
          }
        }
        const aborted = this.#aborted();
        if (aborted) throw aborted;
        const error = thrown instanceof Error ? thrown : new Error(errorMessage(thrown));
        await this.#events.stepError(step, error);
        const failure: StepFailure = {
          stepId: node.id,
          attempt,
          message: error.message,
          handledBy: policy.kind,
        };
        const line = (error as { line?: number }).line;
        if (typeof line === "number") failure.line = line;
        if (policy.kind === "retry" && attempt > policy.count) failure.handledBy = "fail";
        this.failures.push(failure);
        switch (policy.kind) {
          case "continue":
            passLastValue(frame, parent);
            await this.#events.stepEnd(step, undefined);
            return;
          case "retry":
            if (attempt <= policy.count) {
              await this.#events.stepRetry(step, attempt, error);
              continue;
            }
            throw error;
          case "jump": {
            const signal = this.jumpTo(policy.target, node, node.id);
            await this.#events.stepJump(step, policy.target);
            throw signal;
          }
          default:
            throw error;
        }
      }
    }
  }

  /**
   * The result of a body that ended without `return`: the step's own outputs that exist, else
   * the last value produced in the step.
   */
  #resultOf(step: ResolvedStep, frame: Frame): { has: boolean; value: unknown } {
    if (step.outputs.length > 0) {
      const vars = this.#ctx.vars;
      let out: Record<string, unknown> | undefined;
      for (const name of step.outputs) {
        if (!vars.has(name)) continue;
        out ??= {};
        setOwn(out, name, vars.get(name));
      }
      if (out) return { has: true, value: out };
    }
    return frame.hasValue
      ? { has: true, value: frame.lastValue }
      : { has: false, value: undefined };
  }

  #store(step: ResolvedStep, value: unknown): void {
    const node = step.node;
    this.#ctx.setStepResult(node.alias ?? node.id, value, node.id);
  }
}

/**
 * QPLAN.md: a step's fallback result is the last *action's* raw value. A nested step is not an
 * action, so what reaches the enclosing step is the nested body's last action value, never the
 * nested step's result object (`step id="a" { step id="b" { var 2 -> g } }` gives `a` → 2).
 */
function passLastValue(frame: Frame, parent: Frame): void {
  if (!frame.hasValue) return;
  parent.hasValue = true;
  parent.lastValue = frame.lastValue;
}
