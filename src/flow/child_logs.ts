/**
 * The run logs of a run's child runs (the agent steps' children, theirs, and so on), for what reads
 * a whole run with its children — a recording of it (`replayFromLog`'s `children`). Each child is
 * found as its parent's drive recorded it: the `agent_start` lines of the parent's log, in the store
 * the parent's store gives for the child's agent (`RunStore.forAgent`), else in the parent's store.
 *
 * @module
 */
import type { AgentDefinition } from "../definition/types.ts";
import type { RunLogEntry, RunStore } from "../store/types.ts";
import { flowStep } from "./router.ts";

/** One child run's log. */
export interface ChildRunLog {
  /** The child's agent (agent.json `name`). */
  agent: string;
  /** The child run. */
  runId: string;
  /** Its log. */
  log: RunLogEntry[];
}

/** Children deeper than this are not read (agent steps nest 8 deep by default). */
const MAX_DEPTH = 32;

/**
 * The logs of the child runs a run's log names, depth first in the order they started (a child's
 * own children right after it). A child whose log cannot be found is left out.
 *
 * @example
 * ```ts ignore
 * const children = await childRunLogs(store, definition, await store.readLog(runId));
 * children.map((c) => c.agent); // ["release-approval"]
 * ```
 */
export async function childRunLogs(
  store: RunStore,
  definition: AgentDefinition,
  log: readonly RunLogEntry[],
  depth = 0,
): Promise<ChildRunLog[]> {
  if (depth >= MAX_DEPTH) return [];
  const out: ChildRunLog[] = [];
  const seen = new Set<string>();
  for (const line of log) {
    if (line.type !== "agent_start" || typeof line.childRunId !== "string") continue;
    if (seen.has(line.childRunId)) continue; // a resumed parent names its child again
    seen.add(line.childRunId);
    const step = typeof line.stepId === "string" ? flowStep(definition, line.stepId) : undefined;
    const child = step?.child;
    if (!child) continue;
    let found = store.forAgent?.(child) ?? store;
    let childLog = await found.readLog(line.childRunId).catch(() => []);
    if (childLog.length === 0 && found !== store) {
      // A child started before children were filed under their own agent is beside its parent.
      found = store;
      childLog = await store.readLog(line.childRunId).catch(() => []);
    }
    if (childLog.length === 0) continue;
    out.push({ agent: child.name, runId: line.childRunId, log: childLog });
    out.push(...await childRunLogs(found, child, childLog, depth + 1));
  }
  return out;
}
