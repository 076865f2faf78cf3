/**
 * `@stepflow/core/events`: the shared event vocabulary, every payload a handler passed as
 * `events` to any engine receives (the common ones are in the root entry point too). The emitter
 * that calls the handlers safely is the engines' business and stays in `emitter.ts`.
 *
 * @example Log model fallbacks and rate-limit waits
 * ```ts
 * import type { ExecutorEvents, StepInfo } from "jsr:@stepflow/core";
 * import type { ModelFallbackEvent, RateLimitWaitEvent } from "jsr:@stepflow/core/events";
 *
 * const events: ExecutorEvents = {
 *   onModelFallback: (step: StepInfo, event: ModelFallbackEvent) =>
 *     console.log(step.stepId, "fell back", event.from, "→", event.to, event.reason),
 *   onRateLimitWait: (step: StepInfo, wait: RateLimitWaitEvent) =>
 *     console.log(step.stepId, "waits", wait.delayMs, "ms for", wait.backend),
 * };
 * console.log(Object.keys(events));
 * ```
 *
 * @module
 */
export {
  EVENT_NAMES,
  type EventName,
  type ExecutorEvents,
  type FallbackReason,
  type FanOutReport,
  type ModelFallbackEvent,
  type ModelRef,
  type RateLimitWaitEvent,
  type RunContext,
  type RunState,
  type StepInfo,
  type StepLogLevel,
  type ToolCallEvent,
} from "./types.ts";
