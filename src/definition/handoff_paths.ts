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
  const routable = steps.filter((s) => s.kind !== "section");
  const byId = new Map(routable.map((s) => [s.id, s]));
  const provides = new Map<string, Set<string>>();
  for (const step of routable) {
    provides.set(step.id, new Set((step.gate?.handoffFields ?? []).map(handoffKeyOf)));
  }
  // undefined = not reached yet (the analysis' "everything"); sets only shrink, so this ends.
  const available = new Map<string, Set<string>>([[entry, new Set()]]);
  const pending = [entry];
  const flowTo = (target: string, incoming: ReadonlySet<string>) => {
    if (!byId.has(target)) return;
    const current = available.get(target);
    if (current === undefined) {
      available.set(target, new Set(incoming));
      pending.push(target);
      return;
    }
    let changed = false;
    for (const key of current) {
      if (!incoming.has(key)) {
        current.delete(key);
        changed = true;
      }
    }
    if (changed) pending.push(target);
  };
  while (pending.length > 0) {
    const id = pending.pop()!;
    const step = byId.get(id);
    if (!step) continue;
    const before = available.get(id)!;
    const after = new Set([...before, ...provides.get(id)!]);
    for (const edge of stepEdges(step)) {
      const out = edge.kind === "error" ? before : after;
      if ("step" in edge.to) flowTo(edge.to.step, out);
      else if ("anyStep" in edge.to) { for (const s of routable) flowTo(s.id, out); }
    }
  }
  return available;
}

/**
 * One warning per step whose prompt needs `{handoff.<key>}` that some path from the entry step
 * does not provide (the run would fail there with `PROMPT_VARIABLES_MISSING`).
 *
 * @param steps the flow's steps
 * @param entry the entry step id
 * @param uses per step id, the handoff keys its prompts use without `?`
 * @param F the registry file label
 */
export function handoffWarnings(
  steps: readonly FlowStep[],
  entry: string,
  uses: ReadonlyMap<string, readonly string[]>,
  F: string,
): string[] {
  if (uses.size === 0) return [];
  const available = availableHandoffKeys(steps, entry);
  const providers = new Map<string, string[]>();
  for (const step of steps) {
    for (const path of step.gate?.handoffFields ?? []) {
      const key = handoffKeyOf(path);
      const list = providers.get(key) ?? [];
      if (!list.includes(step.id)) list.push(step.id);
      providers.set(key, list);
    }
  }
  const warnings: string[] = [];
  for (const step of steps) {
    const keys = uses.get(step.id);
    const have = available.get(step.id);
    if (!keys || have === undefined) continue; // unreachable steps have their own warning
    for (const key of keys) {
      if (have.has(key)) continue;
      const from = providers.get(key);
      const why = from
        ? `some path from the entry step "${entry}" reaches it without passing a step that hands "${key}" off (${
          from.map((id) => `"${id}"`).join(", ")
        })`
        : `no step hands "${key}" off (no handoffFields path ends in "${key}")`;
      warnings.push(
        `${F}: step "${step.id}": its prompt uses {handoff.${key}}, but ${why}, so a run can fail there with PROMPT_VARIABLES_MISSING. Hand it off on every path, or write {handoff.${key}?} (empty when unset) or {handoff.${key}?=<default>}.`,
      );
    }
  }
  return warnings;
}
