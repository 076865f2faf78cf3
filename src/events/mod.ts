/**
 * The shared event vocabulary: what a handler passed as `events` to any engine receives. The
 * emitter that calls the handlers safely is the engines' business and stays in `emitter.ts`.
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
