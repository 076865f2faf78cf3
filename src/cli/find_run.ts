/**
 * Finding a run by its id alone: `stepflow show RUN_ID`, `resume`, `redrive` and `answer` look
 * through the stores of every agent under `.agent/` (each agent's file directory, or the
 * PostgreSQL store it records into) and take the agent that recorded the run. `stepflow runs`
 * without an agent lists every agent's runs from the same stores.
 *
 * @module
 */
import { resolve } from "node:path";
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError, UsageError } from "../errors.ts";
import { pathVisible } from "../path_exists.ts";
import { redactUrl } from "../redact_url.ts";
import type { FileRunStore } from "../store/file.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { assertRunId } from "../store/run_id.ts";
import { selectRunStore } from "../store/select.ts";
import type { RunSummary } from "../store/types.ts";
import { displayPath } from "./kit/display_path.ts";

/** Where runs are looked for. */
export interface RunLookupOptions {
  /** The user's folder (`.agent/` is there). */
  userDir: string;
  /** Environment (`STEPFLOW_STORE`). */
  env: Record<string, string | undefined>;
  /** The `--store` the user named (else each agent's own store). */
  store?: string;
}

/** An agent under `.agent/` and the store of its runs. */
export interface AgentRuns {
  /** Its folder name (how `stepflow` names it). */
  agent: string;
  /** Its definition. */
  definition: AgentDefinition;
  /** The store its runs are recorded in (scoped to it). */
  store: FileRunStore | PostgresRunStore;
}

/**
 * Every agent under `.agent/` that loads, with its store; agents that do not load are skipped
 * (their runs cannot be continued until they are fixed; `stepflow validate` says why). Close the
 * stores with {@linkcode closeStores}.
 */
export async function agentStores(options: RunLookupOptions): Promise<AgentRuns[]> {
  const out: AgentRuns[] = [];
  for (const { name } of await listAgents({ cwd: options.userDir })) {
    let definition: AgentDefinition;
    try {
      definition = await loadAgentDefinition(name, { cwd: options.userDir });
    } catch {
      continue;
    }
    const store = selectRunStore(definition, {
      cwd: options.userDir,
      env: options.env,
      onWarning: () => {},
      ...(options.store !== undefined ? { store: options.store } : {}),
    });
    out.push({ agent: name, definition, store });
  }
  return out;
}

/** Closes the PostgreSQL stores of {@linkcode agentStores}. */
export async function closeStores(stores: readonly AgentRuns[]): Promise<void> {
  for (const { store } of stores) {
    if (store instanceof PostgresRunStore) await store.close().catch(() => {});
  }
}

/** Whether `store` (the store of the agent `definition`) holds the run `runId` of that agent. */
async function holdsRun(
  store: FileRunStore | PostgresRunStore,
  definition: AgentDefinition,
  runId: string,
): Promise<boolean> {
  if (store instanceof PostgresRunStore) return (await store.summary(runId)) !== undefined;
  const files = store.files(runId);
  if (await pathVisible(files.checkpoint)) {
    // A directory shared by several agents: the checkpoint says whose run it is.
    const checkpoint = await store.loadCheckpoint(runId).catch(() => undefined);
    return checkpoint === undefined || checkpoint.agent === definition.name;
  }
  return await pathVisible(files.log);
}

/**
 * The agent (its folder name under `.agent/`) that recorded `runId`, found through the stores of
 * every agent there.
 *
 * @throws {StepflowError} `RUN_NOT_FOUND` when no agent's store has it (the error's next step lists
 * the runs); a {@linkcode UsageError} naming the agents when more than one has a run of that id
 */
export async function findRunAgent(runId: string, options: RunLookupOptions): Promise<string> {
  assertRunId(runId);
  const stores = await agentStores(options);
  const found: string[] = [];
  try {
    for (const { agent, definition, store } of stores) {
      if (await holdsRun(store, definition, runId)) found.push(agent);
    }
  } finally {
    await closeStores(stores);
  }
  if (found.length === 1) return found[0];
  if (found.length > 1) {
    throw new UsageError(
      `Run ${runId} is recorded by more than one agent: ${
        found.join(", ")
      }. Say which with --agent NAME.`,
      { runId, agents: found },
    );
  }
  const root = displayPath(resolve(options.userDir, ".agent"), options.userDir);
  throw new StepflowError(
    "RUN_NOT_FOUND",
    stores.length === 0
      ? `No run ${runId}: there are no agents in ${root} whose runs could hold it. For an agent in another folder, add --agent PATH.`
      : `No run ${runId} is recorded by the agents in ${root} (${
        stores.map((s) => s.agent).join(", ")
      }${
        options.store !== undefined ? `, store ${redactUrl(options.store)}` : ""
      }). For an agent in another folder, add --agent PATH; or list the recorded runs.`,
    {
      details: {
        runId,
        next: {
          action: "runs",
          ...(options.store !== undefined ? { store: options.store } : {}),
        },
      },
    },
  );
}

/** Every agent's runs, newest first (the listing of `stepflow runs` without an agent). */
export async function allRuns(options: RunLookupOptions): Promise<RunSummary[]> {
  const stores = await agentStores(options);
  const seen = new Set<string>();
  const runs: RunSummary[] = [];
  try {
    for (const { store } of stores) {
      for (const run of await store.list()) {
        // Agents sharing one store list the same runs.
        const key = `${run.agent}\u0000${run.runId}`;
        if (seen.has(key)) continue;
        seen.add(key);
        runs.push(run);
      }
    }
  } finally {
    await closeStores(stores);
  }
  return runs.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
}

/**
 * The definition of the agent that recorded `runId`: the one `--agent` names, else the one
 * {@linkcode findRunAgent} finds.
 */
export async function definitionOfRun(
  runId: string,
  agentFlag: string | undefined,
  options: RunLookupOptions & { allowFallback?: boolean },
): Promise<AgentDefinition> {
  const agent = agentFlag ?? await findRunAgent(runId, options);
  return await loadAgentDefinition(agent, {
    cwd: options.userDir,
    ...(options.allowFallback ? { allowFallback: true } : {}),
  });
}
