/**
 * The one wait and the one backoff computation, shared by the flow runner (`onError: retry=N`),
 * the tool-plan executor (step retries), the real backends' retry policy and the scripted
 * backend's `delayMs`. A leaf file: the LLM layer needs it, so it may import nothing of stepflow.
 *
 * @module
 */

/** Exponential backoff settings. */
export interface BackoffOptions {
  /** First delay in ms (default 500). */
  initialMs?: number;
  /** Growth factor (default 2). */
  factor?: number;
  /** Cap in ms (default 30 000). */
  maxMs?: number;
}

/**
 * The delay before retry number `attempt` (1-based): `initialMs * factor^(attempt-1)`, capped.
 *
 * @example
 * ```ts
 * import { backoffDelay } from "./backoff.ts";
 * backoffDelay(3, { initialMs: 100 }); // 400
 * ```
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const initial = options.initialMs ?? 500;
  const factor = options.factor ?? 2;
  const max = options.maxMs ?? 30_000;
  return Math.min(max, initial * factor ** Math.max(0, attempt - 1));
}

/**
 * Resolves after `ms`, or rejects with the signal's reason when it aborts first (at once when it
 * has already aborted). The timer is cleared on abort, so a cancelled wait keeps no process alive.
 *
 * @example
 * ```ts
 * import { sleep } from "./backoff.ts";
 * await sleep(10);
 * ```
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
