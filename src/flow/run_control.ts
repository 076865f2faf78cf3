/**
 * Pause and stop of one run (docs/runner.md, "Control"): the run's signal, why it fired, the pause
 * the loop waits on before each backend call, and the outside sources that stop a run — the
 * caller's signal, the run time limit, a cancel request recorded in the store by another process.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";

/** Why a run's signal fired. */
export type StopCause = "aborted" | "cancelled" | "timeout";

/** The pause and stop state of one run; see {@linkcode createRunnerControl}. */
export interface RunnerControl {
  /** Fires when the run stops; its reason is a `StepflowError` whose code is the cause. */
  readonly signal: AbortSignal;
  /** Why the run stopped, once it did. */
  readonly stopCause: StopCause | undefined;
  /** Holds the run before its next backend call; false when it is paused already. */
  pause(): boolean;
  /** Ends a pause: returns the function that lets the run go on, or undefined when not paused. */
  resume(): (() => void) | undefined;
  /** Stops the run (the first cause wins) and ends a pause; false when it had stopped already. */
  stop(cause: StopCause): boolean;
  /** Resolves when the run is not paused (at once when it is, or has been, stopped). */
  waitIfPaused(): Promise<void>;
}

/** A fresh control: running, not paused, not stopped. */
export function createRunnerControl(): RunnerControl {
  const controller = new AbortController();
  let stopCause: StopCause | undefined;
  let paused: { promise: Promise<void>; release: () => void } | undefined;
  return {
    signal: controller.signal,
    get stopCause() {
      return stopCause;
    },
    pause() {
      if (paused) return false;
      let release!: () => void;
      const promise = new Promise<void>((r) => release = r);
      paused = { promise, release };
      return true;
    },
    resume() {
      const current = paused;
      paused = undefined;
      return current?.release;
    },
    stop(cause) {
      if (stopCause) return false;
      stopCause = cause;
      controller.abort(new StepflowError(cause.toUpperCase(), `run ${cause}`));
      const current = paused;
      paused = undefined;
      current?.release();
      return true;
    },
    async waitIfPaused() {
      while (paused && !stopCause) await paused.promise;
    },
  };
}

/** What can stop a run from outside its loop; see {@linkcode watchStops}. */
export interface StopSources {
  /** The caller's signal (`run({ signal })`, Ctrl-C): aborting it cancels the run. */
  signal?: AbortSignal;
  /** The run time limit in ms (undefined or 0: none). */
  runTimeoutMs?: number;
  /** Takes a cancel request recorded for the run by another process (the dashboard's Cancel). */
  takeCancelRequest?: () => Promise<boolean>;
  /** How often to ask `takeCancelRequest`, in ms. */
  cancelPollMs: number;
  /** Told when asking for a cancel request failed (the run goes on). */
  onPollError(error: unknown): void;
}

/**
 * Calls `stop` with `cancelled` when the caller's signal aborts or a cancel request is found, and
 * with `timeout` when the run time limit passes. Cancel requests are polled on a timer, not per
 * iteration: the loop pays nothing, and a long backend call is cancelled too. Returns the function
 * that detaches every source.
 */
export function watchStops(stop: (cause: StopCause) => void, sources: StopSources): () => void {
  const { signal, runTimeoutMs, takeCancelRequest } = sources;
  const onAbort = () => stop("cancelled");
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  const timer = runTimeoutMs ? setTimeout(() => stop("timeout"), runTimeoutMs) : undefined;
  let interval: ReturnType<typeof setInterval> | undefined;
  if (takeCancelRequest) {
    let polling = false;
    const poll = async () => {
      if (polling) return;
      polling = true;
      try {
        if (await takeCancelRequest()) stop("cancelled");
      } catch (error) {
        sources.onPollError(error);
      } finally {
        polling = false;
      }
    };
    interval = setInterval(poll, sources.cancelPollMs);
  }
  return () => {
    signal?.removeEventListener("abort", onAbort);
    if (timer !== undefined) clearTimeout(timer);
    if (interval !== undefined) clearInterval(interval);
  };
}
