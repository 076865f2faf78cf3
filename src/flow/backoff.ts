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
