/**
 * The control-flow signals that travel up the statement tree as exceptions. They are not `Error`s
 * (no stack is captured, so loops stay fast) and are never reported to users as failures.
 *
 * @module
 */
import type { ResolvedStep } from "./step_types.ts";

/** Base class of every signal. */
export class FlowSignal {
  /** Which signal. */
  readonly signal: "jump" | "return" | "skip" | "stop" | "break" | "continue" | "abort";
  /**
   * Creates a signal of the given kind.
   * @param signal which signal
   */
  constructor(signal: FlowSignal["signal"]) {
    this.signal = signal;
  }
}

/** `jump to="id"` or an `onError="jump=…"` policy: resume at the first statement of `target`. */
export class JumpSignal extends FlowSignal {
  /** The step to resume at. */
  readonly target: ResolvedStep;
  /**
   * Creates a jump to `target`.
   * @param target the step to resume at
   */
  constructor(target: ResolvedStep) {
    super("jump");
    this.target = target;
  }
}

/** `return …`: ends the current step with `payload` as its result. */
export class ReturnSignal extends FlowSignal {
  /** The returned object. */
  readonly payload: Record<string, unknown>;
  /**
   * Creates a return with its payload.
   * @param payload the returned object
   */
  constructor(payload: Record<string, unknown>) {
    super("return");
    this.payload = payload;
  }
}

/** The run was aborted (abort(), the caller's signal) or timed out. */
export class AbortedSignal extends FlowSignal {
  /** True when the time limit ended the run. */
  readonly timedOut: boolean;
  /** Why. */
  readonly reason: string;
  /**
   * Creates the abort signal of a run.
   *
   * @param reason why the run stopped
   * @param timedOut true for a timeout
   */
  constructor(reason: string, timedOut: boolean) {
    super("abort");
    this.reason = reason;
    this.timedOut = timedOut;
  }
}

/** `skip`: ends the current step without a result. */
export const SKIP: FlowSignal = new FlowSignal("skip");
/** `stop`: ends the whole plan (status `stopped`). */
export const STOP: FlowSignal = new FlowSignal("stop");
/** `break`: leaves the innermost loop. */
export const BREAK: FlowSignal = new FlowSignal("break");
/** `continue`: goes to the next iteration of the innermost loop. */
export const CONTINUE: FlowSignal = new FlowSignal("continue");
