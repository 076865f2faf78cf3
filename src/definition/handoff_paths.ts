/**
 * Which `{handoff.<key>}` values are certain to be set when a step runs: a forward "must" analysis
 * over the flow graph, so that a prompt never silently renders an unset value. A key is available at a step when every path from the
 * entry step to it passes a step whose `handoffFields` hand that key off.
 *
 * @module
 */
import { stepEdges } from "./edges.ts";
import type { FlowStep } from "./types.ts";

/** The key a `handoffFields` path is stored under: its last segment (`analysis.approach` → `approach`). */
export function handoffKeyOf(path: string): string {
  const parts = path.replace(/\[(\d+)\]/g, ".$1").split(".").filter((p) => p !== "");
  return parts[parts.length - 1] ?? path;
}

/**
 * For each step reachable from `entry`, the handoff keys set on every path that reaches it
 * (before the step itself runs). Routes taken on an error (`onError`) hand nothing off; a `jump`
 * may lead to any flow step.
 *
 * @example
 * ```ts ignore
 * import { availableHandoffKeys } from "./handoff_paths.ts";
 * availableHandoffKeys(Object.values(definition.steps), definition.entryStepId).get("review");
 * // Set { "approach" }
 * ```
 */
export function availableHandoffKeys(
  steps: readonly FlowStep[],
  entry: string,
): Map<string, ReadonlySet<string>> {
  // Sets only shrink (a key stays only when every incoming path has it), so this ends.
  return propagateHandoffKeys(steps, entry, (current, incoming) => {
    let changed = false;
    for (const key of current) {
      if (!incoming.has(key)) {
        current.delete(key);
        changed = true;
      }
    }
    return changed;
  });
}

/**
 * For each step reachable from `entry`, the handoff keys set on at least one path that reaches it
 * (before the step itself runs): the "may" counterpart of {@linkcode availableHandoffKeys}. A key
 * missing here is missing on every path, so a prompt that needs it can never render.
 */
export function possibleHandoffKeys(
  steps: readonly FlowStep[],
  entry: string,
): Map<string, ReadonlySet<string>> {
  // Sets only grow and are bounded by the keys handed off anywhere, so this ends.
  return propagateHandoffKeys(steps, entry, (current, incoming) => {
    const before = current.size;
    for (const key of incoming) current.add(key);
    return current.size !== before;
  });
}

/**
 * The one worklist both analyses share: the keys flowing into each reachable step, merged at a
 * step reached again by `merge` (which updates `current` and says whether it changed). A step's
 * routes carry what reached it plus what it hands off; its `onError` routes only what reached it.
 */
function propagateHandoffKeys(
  steps: readonly FlowStep[],
  entry: string,
  merge: (current: Set<string>, incoming: ReadonlySet<string>) => boolean,
): Map<string, ReadonlySet<string>> {
  const routable = steps.filter((s) => s.kind !== "section");
  const byId = new Map(routable.map((s) => [s.id, s]));
  const keys = new Map<string, Set<string>>([[entry, new Set()]]);
  const pending = [entry];
  const flowTo = (target: string, incoming: ReadonlySet<string>) => {
    if (!byId.has(target)) return;
    const current = keys.get(target);
    if (current === undefined) {
      keys.set(target, new Set(incoming));
      pending.push(target);
    } else if (merge(current, incoming)) pending.push(target);
  };
  while (pending.length > 0) {
    const step = byId.get(pending.pop()!);
    if (!step) continue;
    const before = keys.get(step.id)!;
    const after = new Set([...before, ...handoffFieldsOf(step).map(handoffKeyOf)]);
    for (const edge of stepEdges(step)) {
      const out = edge.kind === "error" ? before : after;
      if ("step" in edge.to) flowTo(edge.to.step, out);
      else if ("anyStep" in edge.to) { for (const s of routable) flowTo(s.id, out); }
    }
  }
  return keys;
}

/**
 * A shortest path of step ids from `entry` to `target` that passes no step handing `key` off
 * (a step that does may still be left by its `onError` route, which hands nothing off), or
 * undefined when every path passes one.
 */
export function pathWithoutKey(
  steps: readonly FlowStep[],
  entry: string,
  target: string,
  key: string,
): string[] | undefined {
  const byId = new Map(steps.filter((s) => s.kind !== "section").map((s) => [s.id, s]));
  const cameFrom = new Map<string, string | null>([[entry, null]]);
  const queue = [entry];
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    if (id === target) break;
    const step = byId.get(id)!;
    const provides = handoffFieldsOf(step).some((p) => handoffKeyOf(p) === key);
    for (const edge of stepEdges(step)) {
      if (provides && edge.kind !== "error") continue;
      const next = "step" in edge.to
        ? [edge.to.step]
        : "anyStep" in edge.to
        ? [...byId.keys()]
        : [];
      for (const to of next) {
        if (!byId.has(to) || cameFrom.has(to)) continue;
        cameFrom.set(to, id);
        queue.push(to);
      }
    }
  }
  if (!cameFrom.has(target)) return undefined;
  const path: string[] = [];
  for (let at: string | null = target; at !== null; at = cameFrom.get(at)!) path.unshift(at);
  return path;
}

/** The outcome of {@linkcode checkHandoffs}. */
export interface HandoffProblems {
  /** Keys no path provides: every run that reaches the step fails there. */
  errors: string[];
  /** Keys only some paths provide, each naming one path that does not. */
  warnings: string[];
}

/**
 * Checks every `{handoff.<key>}` a prompt needs (written without `?`) against the paths from the
 * entry step. A key that no path hands off before the step is an error (the run would always fail
 * there with `PROMPT_VARIABLES_MISSING`, after spending model calls on the steps before it); a key
 * that only some paths hand off is a warning naming one path that does not, since which branch a
 * model takes is not known at load.
 *
 * @param steps the flow's steps
 * @param entry the entry step id
 * @param uses per step id, the handoff keys its prompts use without `?`
 * @param F the registry file label
 * @example
 * ```ts ignore
 * import { checkHandoffs } from "./handoff_paths.ts";
 * const { errors, warnings } = checkHandoffs(steps, "initial.issue", uses, "steps_registry.json");
 * ```
 */
export function checkHandoffs(
  steps: readonly FlowStep[],
  entry: string,
  uses: ReadonlyMap<string, readonly string[]>,
  F: string,
): HandoffProblems {
  const problems: HandoffProblems = { errors: [], warnings: [] };
  if (uses.size === 0) return problems;
  const available = availableHandoffKeys(steps, entry);
  const possible = possibleHandoffKeys(steps, entry);
  const providers = new Map<string, string[]>();
  for (const step of steps) {
    for (const path of handoffFieldsOf(step)) {
      const key = handoffKeyOf(path);
      const list = providers.get(key) ?? [];
      if (!list.includes(step.id)) list.push(step.id);
      providers.set(key, list);
    }
  }
  const quoted = (ids: readonly string[]) => ids.map((id) => `"${id}"`).join(", ");
  const optional = (key: string) =>
    `write {handoff.${key}?} (empty when unset) or {handoff.${key}?=<default>}`;
  for (const step of steps) {
    const keys = uses.get(step.id);
    const have = available.get(step.id);
    if (!keys || have === undefined) continue; // unreachable steps have their own warning
    for (const key of keys) {
      if (have.has(key)) continue;
      const from = providers.get(key);
      if (!possible.get(step.id)?.has(key)) {
        const why = from
          ? `no path from the entry step "${entry}" passes a step that hands "${key}" off before it (only ${
            quoted(from)
          } ${from.length === 1 ? "does" : "do"}, and no path leads from ${
            from.length === 1 ? "it" : "them"
          } to "${step.id}")`
          : `no step hands "${key}" off (no handoffFields path ends in "${key}")`;
        problems.errors.push(
          `${F}: step "${step.id}": its prompt uses {handoff.${key}}, but ${why}, so every run that reaches it fails with PROMPT_VARIABLES_MISSING. Add a path ending in "${key}" to the handoffFields of a step before it, or ${
            optional(key)
          }.`,
        );
        continue;
      }
      const path = pathWithoutKey(steps, entry, step.id, key) ?? [];
      problems.warnings.push(
        `${F}: step "${step.id}": its prompt uses {handoff.${key}}, but some path from the entry step "${entry}" reaches it without passing a step that hands "${key}" off (${
          quoted(from ?? [])
        }): ${
          path.join(" → ")
        }, so a run can fail there with PROMPT_VARIABLES_MISSING. Hand it off on every path, or ${
          optional(key)
        }.`,
      );
    }
  }
  return problems;
}

/** What a fan-out step hands off, whatever its `handoffFields` pick from each child's output. */
const FAN_OUT_HANDOFF = ["results", "counts"] as const;

/**
 * The paths a step hands off: its gate's `handoffFields`, an agent step's own, or a fan-out
 * step's `results` and `counts`.
 */
function handoffFieldsOf(step: FlowStep): readonly string[] {
  if (step.forEach !== undefined) return FAN_OUT_HANDOFF;
  return step.gate?.handoffFields ?? step.handoffFields ?? [];
}
