/**
 * What a run does with the notices of its backend calls: each retry (`onStepRetry` and a
 * `backend_retry` log line), each wait the server asked for (`onRateLimitWait` besides, and the
 * log line's `waitUntil`), each fall-through of a model chain (`onModelFallback` and a
 * `model_fallback` log line) — and whether long waits are given back instead of slept.
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { ModelFallbackEvent, RateLimitWaitEvent } from "../events/types.ts";
import type { RetryInfo } from "../llm/retry.ts";
import { backendRetryError, type CallContext } from "./backend_call.ts";
import type { RunJournal } from "./checkpoint.ts";
import { type RunnerState, stepInfo } from "./run_state.ts";
import type { StepFlowRunnerOptions } from "./types.ts";

/**
 * The hooks of one backend call of `step` that report its retries, waits and fallbacks to the
 * run's events and log (see the module documentation).
 */
export function callNotices(
  events: EventEmitter,
  journal: RunJournal,
  state: RunnerState,
  step: FlowStep,
  options: Pick<StepFlowRunnerOptions, "rateLimitYieldMs">,
): Pick<CallContext, "onRetry" | "onFallback" | "yieldWaitsFromMs"> {
  return {
    onRetry: (retry) => {
      const info = stepInfo(state, step);
      // Every retry made here is an onStepRetry; a wait the server named is an onRateLimitWait
      // too (the one the displays show), and a wait given back is only that.
      if (retry.waitUntil !== undefined) {
        void events.emit("onRateLimitWait", info, rateLimitWait(retry));
      }
      if (!retry.yielded) {
        void events.emit("onStepRetry", info, retry.attempt, backendRetryError(retry));
      }
      void journal.log(state, {
        type: "backend_retry",
        stepId: step.id,
        attempt: retry.attempt,
        delayMs: retry.delayMs,
        reason: retry.reason,
        ...(retry.waitUntil !== undefined ? { waitUntil: retry.waitUntil } : {}),
        ...(retry.yielded ? { yielded: true } : {}),
      });
    },
    onFallback: (fallback: ModelFallbackEvent) => {
      void events.emit("onModelFallback", stepInfo(state, step), fallback);
      void journal.log(state, { type: "model_fallback", stepId: step.id, ...fallback });
    },
    ...(options.rateLimitYieldMs !== undefined
      ? { yieldWaitsFromMs: options.rateLimitYieldMs }
      : {}),
  };
}

/** A retry's report of a server-asked wait as the event tells it. */
export function rateLimitWait(retry: RetryInfo): RateLimitWaitEvent {
  return {
    backend: retry.backend,
    until: retry.waitUntil ?? new Date(Date.now() + retry.delayMs).toISOString(),
    delayMs: retry.delayMs,
    ...(retry.status !== undefined ? { status: retry.status } : {}),
    reason: retry.reason,
    attempt: retry.attempt,
    maxAttempts: retry.maxAttempts,
    yielded: retry.yielded === true,
  };
}
