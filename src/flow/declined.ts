/**
 * A person's "no": an answer at an input step whose intent is `abort` ends the run `declined` —
 * their decision, recorded with who decided, when and what else they said — rather than
 * `aborted` with an error, which is how a model's or the caller's stop ends it. A `waitTimeout`
 * that takes `abort` is nobody's decision and stays `aborted`.
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import type { MovingOutcome } from "./decisions.ts";
import type { RecordedAnswer } from "./input_request.ts";
import type { DeclinedAnswer } from "./types.ts";

/**
 * The outcome of an input step's answer: `outcome` as the gate routed it, except that an `abort`
 * the person chose ends the run `declined` with their {@linkcode DeclinedAnswer}.
 *
 * @example
 * ```ts ignore
 * declinedOutcome(step, answer, "abort", { kind: "end", reason: "aborted", transition: "abort" });
 * // { kind: "end", reason: "declined", transition: "abort", declined: { by: "cli (erin)", … } }
 * ```
 */
export function declinedOutcome(
  step: FlowStep,
  answer: RecordedAnswer,
  intent: string | undefined,
  outcome: MovingOutcome,
): MovingOutcome {
  if (outcome.kind !== "end" || outcome.reason !== "aborted") return outcome;
  const declined: DeclinedAnswer = {
    stepId: step.id,
    requestId: answer.requestId,
    by: answer.answeredBy,
    at: answer.answeredAt,
    intent: intent ?? "abort",
  };
  const note = withoutPath(answer.value, (step.gate?.intentField ?? "").split("."));
  if (note !== undefined) declined.note = note;
  return { kind: "end", reason: "declined", transition: outcome.transition, declined };
}

/**
 * `value` without the field at `path` (objects emptied by it left out too); undefined when nothing
 * is left. Keys are data (`__proto__` included): only own keys are walked and copied.
 */
function withoutPath(value: unknown, path: readonly string[]): unknown {
  if (!isRecord(value)) return value;
  const [key, ...rest] = path;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const kept = k !== key ? v : rest.length === 0 ? undefined : withoutPath(v, rest);
    if (kept !== undefined) {
      Object.defineProperty(out, k, { value: kept, enumerable: true, writable: true });
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
