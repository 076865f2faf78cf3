/**
 * The one time limit on an operation: an `AbortSignal` that aborts after a number of milliseconds,
 * whose timer is cleared when the operation ends. `AbortSignal.timeout()` cannot be cleared, and
 * Deno keeps the process alive for its timer while any listener is attached — a listener an SDK
 * adds and never removes (the MCP client's does) kept a finished program running until the limit
 * passed, two minutes after its work was done. A leaf file: every layer may use it.
 *
 * @module
 */

/** A signal that aborts after a time limit, and the way to clear that limit. */
export interface TimeoutSignal extends Disposable {
  /** Aborts after the limit (a `TimeoutError`), or when the parent signal aborts (its reason). */
  readonly signal: AbortSignal;
  /** True once the limit passed (not when the parent aborted). */
  readonly timedOut: boolean;
  /** Clears the timer: nothing of this limit keeps the process alive any more. */
  [Symbol.dispose](): void;
}

/**
 * A signal aborting after `ms` milliseconds or with `parent`; hold it with `using`, so its timer is
 * cleared when the block ends however it ends.
 *
 * @example
 * ```ts
 * import { timeoutSignal } from "./timeout_signal.ts";
 * {
 *   using limit = timeoutSignal(5_000);
 *   await fetch("data:,ok", { signal: limit.signal });
 *   console.log(limit.timedOut); // false
 * } // the timer is cleared here
 * ```
 */
export function timeoutSignal(ms: number, parent?: AbortSignal): TimeoutSignal {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError"));
  }, ms);
  const onParentAbort = () => controller.abort(parent!.reason);
  if (parent?.aborted) onParentAbort();
  else parent?.addEventListener("abort", onParentAbort, { once: true });
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    [Symbol.dispose]() {
      clearTimeout(timer);
      parent?.removeEventListener("abort", onParentAbort);
    },
  };
}
