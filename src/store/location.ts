/**
 * Where an agent's runs are recorded: agent.json `logging.directory`, relative to the user's
 * working directory.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { FileRunStore, type FileRunStoreOptions } from "./file.ts";
import type { AgentLoggingSource } from "./types.ts";

// What the run directory depends on (the agent's name and agent.json `logging`).
export type { AgentLoggingSource };

/**
 * The run directory used when agent.json has no `logging.directory`: `tmp/logs/agents/<agent>`
 * under the working directory (the layout of the `code-improver` example,
 * `tmp/logs/agents/code-improver`).
 */
export const DEFAULT_RUN_DIRECTORY = "tmp/logs/agents";

/**
 * Resolves an agent's run directory: `logging.directory` (absolute, or relative to `cwd`), else
 * `<cwd>/tmp/logs/agents/<agent name>`.
 *
 * @param definition the agent (its name and agent.json)
 * @param cwd the user's working directory (the CLI passes the directory it was started from)
 *
 * @example
 * ```ts
 * import { runStoreDirFor } from "./location.ts";
 * const dir = runStoreDirFor({ name: "code-improver", agent: {} }, "/work");
 * console.log(dir); // "/work/tmp/logs/agents/code-improver"
 * ```
 */
export function runStoreDirFor(
  definition: AgentLoggingSource,
  cwd: string = Deno.cwd(),
): string {
  const directory = definition.agent.logging?.directory ??
    join(DEFAULT_RUN_DIRECTORY, definition.name);
  return resolve(cwd, directory);
}

/**
 * The {@linkcode FileRunStore} of an agent: its run directory (see {@linkcode runStoreDirFor}) and
 * `logging.maxFiles` as the number of runs to keep. Its `forAgent(other)` is the store of another
 * agent made the same way (same `cwd` and options, the other agent's folder and `maxFiles`; one
 * store per folder), where an agent step's child run is recorded.
 *
 * @param definition the agent
 * @param options `cwd` (default `Deno.cwd()`) and any store option (they override agent.json)
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 * import { runStoreFor } from "jsr:@stepflow/core/store";
 * const definition = await loadAgentDefinition("code-improver");
 * const store = runStoreFor(definition);
 * const result = await new StepFlowRunner(definition, { store }).run({ args: { topic: "x" } });
 * // later, from any process:
 * await new StepFlowRunner(definition, { store: runStoreFor(definition) }).run({ resume: result.runId });
 * ```
 */
export function runStoreFor(
  definition: AgentLoggingSource,
  options: FileRunStoreOptions & { cwd?: string } = {},
): FileRunStore {
  return agentStore(definition, options, new Map());
}

/** {@linkcode runStoreFor} within a family of stores made alike (one per folder). */
function agentStore(
  definition: AgentLoggingSource,
  options: FileRunStoreOptions & { cwd?: string },
  family: Map<string, FileRunStore>,
): FileRunStore {
  const { cwd, ...storeOptions } = options;
  const dir = runStoreDirFor(definition, cwd);
  const known = family.get(dir);
  if (known) return known;
  const maxRuns = definition.agent.logging?.maxFiles;
  const store = new FileRunStore(dir, {
    ...(maxRuns !== undefined ? { maxRuns } : {}),
    forAgent: (other) => agentStore(other, options, family),
    ...storeOptions,
  });
  family.set(dir, store);
  return store;
}
