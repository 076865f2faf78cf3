/**
 * The marker a tool returns to make the executor store a promise instead of a value
 * (`future … -> f` stores a promise that `join` awaits later).
 *
 * @module
 */

/**
 * Wraps a promise so that the executor stores the promise itself as the output variable.
 *
 * @example
 * ```ts
 * import { QPlanFuture } from "./future.ts";
 * const f = new QPlanFuture(Promise.resolve(42));
 * console.log(await f.promise); // 42
 * ```
 */
export class QPlanFuture {
  /** The pending value. */
  readonly promise: Promise<unknown>;
  /**
   * Wraps a pending value.
   * @param promise the pending value (a rejection is observed, so it never goes unhandled)
   */
  constructor(promise: Promise<unknown>) {
    this.promise = promise;
    promise.catch(() => {});
  }
}
