/**
 * The data side of a fan-out step (an agent step with `forEach`, docs/agents.md "Fan-out steps"),
 * pure: the items it runs over ({@linkcode fanOutItems}), an item as one short line
 * ({@linkcode itemLabel}), what one child hands back ({@linkcode itemOutput}), and the step's
 * handoff — `results` in item order and `counts` ({@linkcode fanOutHandoff}).
 *
 * @module
 */
import { forEachReference } from "../definition/fan_out.ts";
import { DEFAULT_MAX_ITEMS } from "../definition/fan_out_limits.ts";
import type { FlowStep } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import { ownValue, setOwn } from "../own_record.ts";
import { handoffKey, readPath } from "./gate.ts";
import type { RunnerState } from "./run_state.ts";

/** One entry of `{handoff.results}`: an item and how its child ended. */
export interface FanOutResult {
  /** The item, as `forEach` gave it. */
  item: unknown;
  /** How its child ended, as `--runs` spells it: `completed`, `failed`, `aborted`, `cancelled`, `timeout`. */
  status: string;
  /** The child's output (or the `handoffFields` picked from it); null when it did not complete. */
  output: unknown;
  /** Why the item failed (`{ code, message }`); null when it completed. */
  error: { code: string; message: string } | null;
  /** The child run (a run of the step's agent); null when no child could start. */
  runId: string | null;
}

/** `{handoff.counts}`: how many items, and how many completed and failed. */
export interface FanOutCounts {
  /** Items. */
  total: number;
  /** Items whose child completed. */
  completed: number;
  /** Items whose child did not complete. */
  failed: number;
}

/**
 * The items of a fan-out step: the array its `forEach` names, read now from the run's handoff or
 * parameters.
 *
 * @throws {StepflowError} `FANOUT_ITEMS_INVALID` (no value, or not an array),
 *   `FANOUT_TOO_MANY_ITEMS` (more than `maxItems`: the step fails before any child starts)
 */
export function fanOutItems(step: FlowStep, state: RunnerState): readonly unknown[] {
  const written = step.forEach ?? "";
  const ref = forEachReference(written);
  const value = ref === undefined
    ? undefined
    : "handoff" in ref
    ? ownValue(state.latestHandoff, ref.handoff)
    : ownValue(state.args, ref.parameter);
  if (!Array.isArray(value)) {
    const got = value === undefined
      ? "has no value"
      : `is ${value === null ? "null" : `a ${typeof value}`}, not an array`;
    throw new StepflowError(
      "FANOUT_ITEMS_INVALID",
      `Fan-out step "${step.id}": forEach ${written} ${got}, so no child can start. Make the step before it hand off a list under that key (or pass the parameter as a list).`,
      { details: { stepId: step.id, forEach: written } },
    );
  }
  const max = step.maxItems ?? DEFAULT_MAX_ITEMS;
  if (value.length > max) {
    throw new StepflowError(
      "FANOUT_TOO_MANY_ITEMS",
      `Fan-out step "${step.id}": forEach ${written} holds ${value.length} items, more than maxItems ${max}; no child was started. Raise "maxItems" on the step (at most 100,000), or hand off fewer items.`,
      { details: { stepId: step.id, items: value.length, maxItems: max } },
    );
  }
  return value;
}

/** The longest {@linkcode itemLabel}. */
export const ITEM_LABEL_CHARS = 120;

/**
 * An item as one short line for progress, `--show` and log lines: a string as it is, an object by
 * its first string field named like an identifier (`path`, `file`, `name`, `id`, `title`, `url`),
 * else its JSON — cut to {@linkcode ITEM_LABEL_CHARS} characters.
 *
 * @example
 * ```ts
 * import { itemLabel } from "./fan_out_items.ts";
 * itemLabel("src/a.ts"); // "src/a.ts"
 * itemLabel({ path: "src/b.ts", lines: 40 }); // "src/b.ts"
 * itemLabel(7); // "7"
 * ```
 */
export function itemLabel(item: unknown): string {
  let text: string;
  if (typeof item === "string") text = item;
  else if (typeof item === "object" && item !== null && !Array.isArray(item)) {
    const key = LABEL_KEYS.find((k) =>
      typeof ownValue(item as Record<string, unknown>, k) === "string"
    );
    text = key ? String((item as Record<string, unknown>)[key]) : json(item);
  } else text = json(item);
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > ITEM_LABEL_CHARS ? `${line.slice(0, ITEM_LABEL_CHARS - 1)}…` : line;
}

const LABEL_KEYS = ["path", "file", "name", "id", "title", "url"];

function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * What a completed child hands back for its item: the `handoffFields` picked from its output (by
 * their last segment, as a gate hands off), else its whole output.
 */
export function itemOutput(step: FlowStep, output: unknown): unknown {
  if (step.handoffFields === undefined) return output ?? null;
  const picked: Record<string, unknown> = {};
  for (const path of step.handoffFields) {
    const value = readPath(output, path);
    if (value !== undefined) setOwn(picked, handoffKey(path), value);
  }
  return picked;
}

/** The step's handoff: `results` (one entry per item, in item order) and `counts`. */
export function fanOutHandoff(
  results: readonly FanOutResult[],
): { results: FanOutResult[]; counts: FanOutCounts } {
  const completed = results.filter((r) => r.status === "completed").length;
  return {
    results: [...results],
    counts: { total: results.length, completed, failed: results.length - completed },
  };
}
