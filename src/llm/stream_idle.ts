/**
 * The idle timeout of streamed answers: an attempt whose server sends no byte for `idleTimeoutMs`
 * — before its answer starts or in the middle of it — is ended and retried, whatever its whole
 * length. The whole-call timeout (`timeoutMs`) bounds an attempt from start to end, which cuts off
 * a slow local model that is still writing; the idle timeout only cuts off a server that went
 * quiet.
 *
 * @module
 */

/** Default idle timeout of streamed answers: 5 minutes without a byte. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/**
 * A streamed attempt that received no byte for the idle timeout. The retry policy treats it as a
 * timed-out attempt (retried; `BACKEND_TIMEOUT` when every attempt stalls).
 *
 * @example
 * ```ts
 * import { StreamStalled } from "./stream_idle.ts";
 * console.log(new StreamStalled(30_000).message);
 * // "no data from the server for 30000 ms (the idle timeout of streamed answers)"
 * ```
 */
export class StreamStalled extends Error {
  /** The idle timeout that passed, in ms. */
  readonly idleTimeoutMs: number;

  /**
   * Creates the failure.
   *
   * @param idleTimeoutMs the idle timeout that passed
   * @param cause what the SDK threw when the attempt was ended
   */
  constructor(idleTimeoutMs: number, cause?: unknown) {
    super(
      `no data from the server for ${idleTimeoutMs} ms (the idle timeout of streamed answers)`,
      cause !== undefined ? { cause } : undefined,
    );
    this.name = "StreamStalled";
    this.idleTimeoutMs = idleTimeoutMs;
  }
}

/**
 * Watches one attempt: `signal` fires once `idleMs` pass without a {@linkcode IdleWatch.touch}.
 * Touching costs a clock read; the timer is re-armed only when it comes due.
 *
 * @example
 * ```ts
 * import { IdleWatch } from "./stream_idle.ts";
 * const watch = new IdleWatch(1000);
 * watch.touch(); // a chunk arrived
 * watch.stop();
 * console.log(watch.fired); // false
 * ```
 */
export class IdleWatch {
  readonly #controller = new AbortController();
  readonly #idleMs: number;
  #last = performance.now();
  #timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Starts watching.
   *
   * @param idleMs how long without a byte ends the attempt
   */
  constructor(idleMs: number) {
    this.#idleMs = idleMs;
    this.#arm(idleMs);
  }

  /** The idle timeout, in ms. */
  get idleMs(): number {
    return this.#idleMs;
  }

  /** Fires when the attempt went quiet for the idle timeout. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True once the idle timeout passed. */
  get fired(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Something arrived: the idle time starts again. */
  touch(): void {
    this.#last = performance.now();
  }

  /** Stops watching (the attempt ended). */
  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      const quiet = performance.now() - this.#last;
      if (quiet + 1 < this.#idleMs) {
        this.#arm(this.#idleMs - quiet);
        return;
      }
      this.#timer = undefined;
      this.#controller.abort(new StreamStalled(this.#idleMs));
    }, Math.max(1, ms));
  }
}

/**
 * `response` with a body that touches `watch` at each chunk (and once now: the headers came).
 */
export function watchedResponse(response: Response, watch: IdleWatch): Response {
  watch.touch();
  if (response.body === null) return response;
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        watch.touch();
        controller.enqueue(chunk);
      },
    }),
  );
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
