/**
 * Execution control of a run: pause, resume, abort and the time limit, checked before every
 * statement. {@linkcode RunControl} is the caller's handle; the run's supervisor does the work.
 *
 * @module
 */
import type { RunState } from "../../events/types.ts";
import type { QPlanRunContext, StepEvents } from "../step/step_events.ts";
import { AbortedSignal } from "../step/step_signals.ts";

/** Statements between two looks at the clock (the executor counts them in `ticks`). */
export const TICK_BATCH = 4096;
/** Busy synchronous work yields to the event loop this often, so timers and abort() get through. */
const YIELD_EVERY_MS = 50;

const supervisors = new WeakMap<RunControl, RunSupervisor>();
const earlyCalls = new WeakMap<RunControl, Array<() => void>>();

/**
 * The caller's handle on a running script: pass it as `control` to `runScript`, then call
 * `pause()`, `resume()` or `abort()` at any time. A pause takes effect before the next statement
 * (the statement in progress completes); an abort also cancels tool calls in flight.
 *
 * @example
 * ```ts ignore
 * import { RunControl, runScript } from "@stepflow/core/qplan";
 * const control = new RunControl();
 * const running = runScript(script, { control });
 * control.pause();
 * setTimeout(() => control.resume(), 100);
 * const result = await running;
 * ```
 */
export class RunControl {
  /** The run's state (`idle` before it starts). */
  get state(): RunState {
    return supervisors.get(this)?.state ?? "idle";
  }

  /** Pauses before the next statement. */
  pause(): void {
    const sup = supervisors.get(this);
    if (sup) sup.pause();
    else queue(this, () => this.pause());
  }

  /** Resumes a paused run. */
  resume(): void {
    const sup = supervisors.get(this);
    if (sup) sup.resume();
    else queue(this, () => this.resume());
  }

  /** Aborts the run: status `aborted`; tools in flight are cancelled. */
  abort(reason = "aborted by the caller"): void {
    const sup = supervisors.get(this);
    if (sup) sup.abort(reason);
    else queue(this, () => this.abort(reason));
  }
}

function queue(control: RunControl, call: () => void): void {
  const list = earlyCalls.get(control) ?? [];
  list.push(call);
  earlyCalls.set(control, list);
}

/** Connects a {@linkcode RunControl} to the supervisor of the run it was passed to. */
export function bindControl(control: RunControl, supervisor: RunSupervisor): void {
  supervisors.set(control, supervisor);
  const calls = earlyCalls.get(control) ?? [];
  earlyCalls.delete(control);
  for (const call of calls) call();
}

/** Options of {@linkcode RunSupervisor}. */
export interface SupervisorOptions {
  /** Aborts the run when it fires. */
  signal?: AbortSignal;
  /** Ends the run (status `aborted`, state `timeout`) after this many milliseconds. */
  timeoutMs?: number;
}

/**
 * Watches one run: its state, pause/abort requests, the caller's signal and the time limit. The
 * executor reads `interrupted` before every statement and calls {@linkcode RunSupervisor.gate}
 * when it is set.
 */
export class RunSupervisor {
  /** The run's state. */
  state: RunState = "idle";
  /** True while a pause or abort is pending: the executor must call `gate()`. */
  interrupted = false;
  /** Statements since the last look at the clock. */
  ticks = 0;
  readonly #events: StepEvents;
  readonly #ctx: QPlanRunContext;
  readonly #options: SupervisorOptions;
  readonly #internal = new AbortController();
  #aborted: AbortedSignal | undefined;
  #paused = false;
  #resumeWaiters: Array<() => void> = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastYield = 0;
  #onSignal: (() => void) | undefined;

  /**
   * Creates the supervisor of one run.
   *
   * @param events where state and control events go
   * @param ctx the run context passed to those events
   * @param options caller's signal and time limit
   */
  constructor(events: StepEvents, ctx: QPlanRunContext, options: SupervisorOptions = {}) {
    this.#events = events;
    this.#ctx = ctx;
    this.#options = options;
  }

  /** Cancels tool calls when the run is aborted, times out or ends. */
  get toolSignal(): AbortSignal {
    return this.#internal.signal;
  }

  /** The abort (or timeout) that ended the run, if any. */
  get aborted(): AbortedSignal | undefined {
    return this.#aborted;
  }

  /** Moves from `idle` to `running` and arms the signal and the timer. */
  async start(): Promise<void> {
    this.#lastYield = performance.now();
    await this.#setState("running");
    const { signal, timeoutMs } = this.#options;
    if (signal) {
      if (signal.aborted) this.abort(reasonText(signal.reason));
      else {
        this.#onSignal = () => this.abort(reasonText(signal.reason));
        signal.addEventListener("abort", this.#onSignal, { once: true });
      }
    }
    if (timeoutMs !== undefined && !this.#aborted) {
      this.#timer = setTimeout(() => this.#timeout(timeoutMs), timeoutMs);
    }
  }

  /** Requests a pause before the next statement. Returns false when the run is not running. */
  pause(): boolean {
    if (this.state !== "running" || this.#aborted) return false;
    this.#paused = true;
    this.interrupted = true;
    void this.#setState("paused");
    void this.#events.pause(this.#ctx);
    return true;
  }

  /** Resumes a paused run. Returns false when it was not paused. */
  resume(): boolean {
    if (!this.#paused || this.#aborted) return false;
    this.#paused = false;
    this.interrupted = false;
    void this.#setState("running");
    void this.#events.resume(this.#ctx);
    this.#wake();
    return true;
  }

  /** Aborts the run. */
  abort(reason: string): void {
    if (this.#aborted || isFinal(this.state)) return;
    this.#stop(new AbortedSignal(`QPlan run aborted: ${reason}`, false), "aborted");
    void this.#events.abort(this.#ctx);
  }

  #timeout(ms: number): void {
    this.#timer = undefined;
    if (this.#aborted || isFinal(this.state)) return;
    this.#stop(new AbortedSignal(`QPlan run timed out after ${ms} ms`, true), "timeout");
    void this.#events.timeout(this.#ctx);
  }

  #stop(signal: AbortedSignal, state: RunState): void {
    this.#aborted = signal;
    this.interrupted = true;
    this.#paused = false;
    void this.#setState(state);
    this.#internal.abort(signal);
    this.#wake();
  }

  /**
   * Called by the executor when `interrupted` is set or the tick batch is full: throws the abort
   * signal, waits while paused, or yields to the event loop after long synchronous work.
   */
  gate(): Promise<void> | undefined {
    if (this.#aborted) throw this.#aborted;
    if (this.#paused) {
      return new Promise<void>((resolve) => this.#resumeWaiters.push(resolve)).then(() =>
        this.gate()
      );
    }
    if (this.ticks >= TICK_BATCH) {
      this.ticks = 0;
      const now = performance.now();
      if (now - this.#lastYield >= YIELD_EVERY_MS) {
        this.#lastYield = now;
        return new Promise<void>((resolve) => setTimeout(resolve, 0)).then(() => this.gate());
      }
    }
    return undefined;
  }

  /** Ends supervision: sets the final state (unless aborted or timed out), disarms timers, cancels leftovers. */
  async finish(final: RunState): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#onSignal) this.#options.signal?.removeEventListener("abort", this.#onSignal);
    if (!this.#internal.signal.aborted) this.#internal.abort(new Error("the run has ended"));
    this.#wake();
    if (!isFinal(this.state)) await this.#setState(final);
  }

  #wake(): void {
    const waiters = this.#resumeWaiters;
    this.#resumeWaiters = [];
    for (const w of waiters) w();
  }

  #setState(next: RunState): Promise<void> {
    const prev = this.state;
    if (prev === next) return Promise.resolve();
    this.state = next;
    return this.#events.stateChange(next, prev, this.#ctx);
  }
}

function isFinal(state: RunState): boolean {
  return state !== "idle" && state !== "running" && state !== "paused";
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message;
  if (reason === undefined) return "the caller's signal fired";
  return String(reason);
}
