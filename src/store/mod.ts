/**
 * `@stepflow/core/store`: where runs are recorded. The {@linkcode RunStore} contract, the
 * in-memory store, the durable file store (run log, atomic checkpoints, lock), the PostgreSQL
 * store, choosing one for an agent as the CLI does, the run statuses, and the `runs` / `show`
 * renderings of recorded runs. The on-disk formats and the lock are the stores' business and stay
 * in their files.
 *
 * @example Record runs in the agent's own folder, then print the last one
 * ```ts
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 * import { formatRunHistory, runStoreFor } from "jsr:@stepflow/core/store";
 *
 * const definition = await loadAgentDefinition("haiku");
 * const store = runStoreFor(definition);
 * const result = await new StepFlowRunner(definition, { store }).run({ args: { topic: "autumn" } });
 * const checkpoint = await store.loadCheckpoint(result.runId);
 * console.log(formatRunHistory(checkpoint, await store.readLog(result.runId)));
 * ```
 *
 * @module
 */
export {
  readLogFrom,
  type RunCheckpoint,
  type RunLock,
  type RunLogEntry,
  type RunStatus,
  type RunStore,
  type RunSummary,
} from "./types.ts";
export { MemoryRunStore } from "./memory.ts";
export { type Durability, FileRunStore, type FileRunStoreOptions, type RunFiles } from "./file.ts";
export {
  PostgresRunStore,
  type PostgresRunStoreOptions,
  type RunPageQuery,
  type RunPageResult,
} from "./postgres.ts";
export type { PgConnectionOptions } from "./pg_connection.ts";
export { type AgentLoggingSource, runStoreDirFor, runStoreFor } from "./location.ts";
export { type AgentStoreSource, selectRunStore, type SelectRunStoreOptions } from "./select.ts";
export {
  type FormatOptions,
  formatRunHistory,
  formatRunList,
  type HistoryFormatOptions,
} from "./format.ts";
export { type ShownStatus, shownStatus } from "./run_status.ts";
export { assertRunGroup, isValidRunGroup, MAX_RUN_GROUP_LENGTH, newRunGroup } from "./run_group.ts";
export {
  ENDED_RUN_STATUSES,
  type EndedRunStatus,
  isNotEnded,
  isOpenStatus,
  OPEN_RUN_STATUSES,
  type OpenRunStatus,
  RUN_STATUS_KINDS,
  RUN_STATUSES,
  SHOWN_STATUSES,
} from "../run_statuses.ts";
