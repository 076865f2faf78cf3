/**
 * The result recorded on a step when it settles: its outcome, and how long its tool took — the
 * time since it first started, without the time spent waiting for approvals.
 *
 * @module
 */
import type { StepResult } from "./types.ts";

/** How long a step has been under way, as the executor measures it (`performance.now()` ms). */
export interface StepTiming {
  /** When its first attempt started (0: it never started). */
  startedAt: number;
  /** Milliseconds spent waiting for approvals (kept out of its duration). */
  approvalWait: number;
  /** Attempts made so far. */
  attempts: number;
}

/** Milliseconds rounded to the microsecond. */
function ms(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** The result of a step that settles now with `ok`, `value` and `error`. */
export function stepResult(
  timing: StepTiming,
  ok: boolean,
  value: unknown,
  error: string | undefined,
): StepResult {
  const { startedAt, approvalWait, attempts } = timing;
  const result: StepResult = {
    ok,
    duration: startedAt === 0 ? 0 : ms(Math.max(0, performance.now() - startedAt - approvalWait)),
    timestamp: new Date().toISOString(),
  };
  if (approvalWait > 0) result.approvalWaitMs = ms(approvalWait);
  if (value !== undefined) result.value = value;
  if (error !== undefined) result.error = error;
  if (attempts > 0) result.attempts = attempts;
  return result;
}
