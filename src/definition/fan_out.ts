/**
 * Fan-out steps: an agent step with `forEach` runs its child agent once per element of an array, in
 * parallel (docs/agents.md, "Fan-out steps"). This file holds what the loader checks about them:
 * the `forEach` reference (a handoff value handed off on some path to the step, or a declared
 * `array` parameter), `{item}` / `{item.<path>}` only in the `args` of a fan-out step, and the
 * fan-out fields (`concurrency`, `onItemError`, `maxItems`) only on one. The bounds are in
 * `fan_out_limits.ts`; the runner's side is `src/flow/fan_out.ts`.
 *
 * @module
 */
import { argReference } from "./agent_step.ts";
import { availableHandoffKeys, pathWithoutKey, possibleHandoffKeys } from "./handoff_paths.ts";
import { MAX_ITEM_RETRIES } from "./fan_out_limits.ts";
import type { AgentConfig } from "./schema.ts";
import { closestMatch } from "./suggest.ts";
import type { FlowStep } from "./types.ts";

/** What a `forEach` names: a handoff value or a parameter of the run. */
export type ForEachReference = { handoff: string } | { parameter: string };

/**
 * The array a `forEach` names: `"{handoff.<key>}"` or `"{uv-<name>}"`; undefined for anything else.
 *
 * @example
 * ```ts
 * import { forEachReference } from "./fan_out.ts";
 * forEachReference("{handoff.files}"); // { handoff: "files" }
 * forEachReference("{uv-files}"); // { parameter: "files" }
 * forEachReference("files"); // undefined
 * ```
 */
export function forEachReference(value: string): ForEachReference | undefined {
  const ref = argReference(value);
  return ref && !("item" in ref) ? ref : undefined;
}

/** The fields only a fan-out step takes. */
const FAN_OUT_FIELDS = ["concurrency", "onItemError", "maxItems"] as const;

/**
 * A fan-out step's own fields: `forEach` on an agent step only, a `forEach` that names a handoff
 * value or a declared `array` parameter, the fan-out fields only with `forEach`, `{item…}` in
 * `args` only with `forEach`, and a `retry=N` within {@linkcode MAX_ITEM_RETRIES}. The handoff
 * paths of a `forEach` are checked by {@linkcode checkForEachHandoffs} once the graph is sound.
 */
export function checkFanOutFields(
  step: FlowStep,
  agent: AgentConfig | undefined,
  fail: (message: string) => void,
): void {
  const raw = step.raw;
  if (raw.forEach === undefined) {
    const misplaced = FAN_OUT_FIELDS.filter((k) => raw[k] !== undefined);
    if (misplaced.length > 0) {
      fail(
        `sets ${
          misplaced.map((k) => `"${k}"`).join(", ")
        } but has no "forEach": only a fan-out step (an agent step with "forEach") takes ${
          misplaced.length > 1 ? "them" : "it"
        }. Add "forEach": "{handoff.<key>}", or remove ${misplaced.length > 1 ? "them" : "it"}.`,
      );
    }
    for (const [name, value] of Object.entries(step.args ?? {})) {
      const ref = argReference(value);
      if (ref && "item" in ref) {
        fail(
          `args.${name}: ${
            String(value)
          } binds an element of "forEach", but the step has no "forEach": {item} and {item.<path>} are only for a fan-out step. Add "forEach", or pass a {handoff.<key>}, {uv-<name>} or a literal.`,
        );
      }
    }
    return;
  }
  if (step.kind !== "agent") {
    fail(
      `sets "forEach" but is not an agent step: a fan-out runs a child agent per item. Add "kind": "agent" and "agent": "<name>", or remove "forEach".`,
    );
    return;
  }
  const ref = forEachReference(raw.forEach);
  if (!ref) {
    fail(
      `forEach ${
        JSON.stringify(raw.forEach)
      } is not a reference: write "{handoff.<key>}" (an array an earlier step hands off) or "{uv-<name>}" (an "array" parameter of this agent).`,
    );
  } else if ("parameter" in ref) {
    const params = agent?.parameters ?? {};
    const declared = Object.hasOwn(params, ref.parameter) ? params[ref.parameter] : undefined;
    if (!declared) {
      const guess = closestMatch(ref.parameter, Object.keys(params));
      fail(
        `forEach: {uv-${ref.parameter}} is not a parameter of this agent${
          guess ? ` (did you mean {uv-${guess}}?)` : ""
        }: declare it in agent.json "parameters" with "type": "array".`,
      );
    } else if (declared.type !== "array") {
      fail(
        `forEach: the parameter "${ref.parameter}" is of type "${declared.type}", not "array": a fan-out runs over a list. Declare it with "type": "array" (on the command line a comma list, a repeated flag or a JSON array).`,
      );
    }
  }
  const policy = step.onItemError;
  if (policy?.kind === "retry" && (policy.count < 1 || policy.count > MAX_ITEM_RETRIES)) {
    fail(
      `onItemError retry=${policy.count}: an item may be retried 1 to ${MAX_ITEM_RETRIES} times. Use "continue" to go on without retrying, or a count within the bounds.`,
    );
  }
}

/**
 * Checks every `forEach` that names a handoff value against the paths from the entry step, as
 * prompts' `{handoff.<key>}` are checked: a key no path hands off before the step is an error (the
 * step would always fail before any child starts); a key only some paths hand off is a warning
 * naming one path that does not.
 */
export function checkForEachHandoffs(
  steps: readonly FlowStep[],
  entry: string,
  F: string,
): { errors: string[]; warnings: string[] } {
  const out = { errors: [] as string[], warnings: [] as string[] };
  const fanOuts = steps.flatMap((step) => {
    const ref = step.forEach === undefined ? undefined : forEachReference(step.forEach);
    return ref && "handoff" in ref ? [{ step, key: ref.handoff }] : [];
  });
  if (fanOuts.length === 0) return out;
  const available = availableHandoffKeys(steps, entry);
  const possible = possibleHandoffKeys(steps, entry);
  for (const { step, key } of fanOuts) {
    const have = available.get(step.id);
    if (have === undefined || have.has(key)) continue; // unreachable steps have their own warning
    if (!possible.get(step.id)?.has(key)) {
      out.errors.push(
        `${F}: step "${step.id}": forEach {handoff.${key}}, but no path from the entry step "${entry}" passes a step that hands "${key}" off before it, so the step always fails before any child starts. Add a path ending in "${key}" to the handoffFields of a step before it, or fan out over a parameter ({uv-<name>}).`,
      );
      continue;
    }
    const path = pathWithoutKey(steps, entry, step.id, key) ?? [];
    out.warnings.push(
      `${F}: step "${step.id}": forEach {handoff.${key}}, but some path from the entry step "${entry}" reaches it without passing a step that hands "${key}" off: ${
        path.join(" → ")
      }, so the step can fail there (FANOUT_ITEMS_INVALID). Hand it off on every path.`,
    );
  }
  return out;
}
