import type { EventName, ExecutorEvents } from "./types.ts";
import { errorMessage } from "../errors.ts";

/** Where a failing handler is reported. Defaults to `console.warn`. */
export type HandlerErrorLogger = (event: EventName, error: unknown) => void;

/**
 * A safe dispatcher over one or more {@linkcode ExecutorEvents} handler sets.
 * `emit` awaits each handler in registration order; a handler that throws or rejects is logged and
 * skipped, so user code can never break a run.
 */
export interface EventEmitter {
  /** Calls `event` on every handler set, awaiting async handlers in order. */
  emit<E extends EventName>(
    event: E,
    ...args: Parameters<NonNullable<ExecutorEvents[E]>>
  ): Promise<void>;
  /** Adds a handler set; returns a function that removes it again. */
  add(handlers: ExecutorEvents): () => void;
  /** True when at least one handler set defines `event` (lets hot paths skip building payloads). */
  has(event: EventName): boolean;
}

/**
 * Creates an {@linkcode EventEmitter} over the given handler sets.
 *
 * @example
 * ```ts
 * import { createEventEmitter } from "./emitter.ts";
 * const seen: string[] = [];
 * const emitter = createEventEmitter([{ onStepStart: (info) => void seen.push(info.stepId) }]);
 * await emitter.emit("onStepStart", { runId: "r1", stepId: "a", desc: "A", order: 1, path: ["A"] });
 * console.log(seen); // ["a"]
 * ```
 */
export function createEventEmitter(
  handlerSets: ReadonlyArray<ExecutorEvents | undefined> = [],
  logError: HandlerErrorLogger = defaultLogger,
): EventEmitter {
  const sets: ExecutorEvents[] = handlerSets.filter((h): h is ExecutorEvents => h !== undefined);
  return {
    async emit(event, ...args) {
      for (const set of sets) {
        const handler = set[event] as ((...a: unknown[]) => unknown) | undefined;
        if (!handler) continue;
        try {
          await handler.apply(set, args);
        } catch (error) {
          try {
            logError(event, error);
          } catch {
            // A broken logger must not break the run either.
          }
        }
      }
    },
    add(handlers) {
      sets.push(handlers);
      return () => {
        const i = sets.indexOf(handlers);
        if (i >= 0) sets.splice(i, 1);
      };
    },
    has(event) {
      return sets.some((s) => typeof s[event] === "function");
    },
  };
}

function defaultLogger(event: EventName, error: unknown): void {
  const message = errorMessage(error);
  console.warn(`[stepflow] event handler ${event} threw: ${message}`);
}
