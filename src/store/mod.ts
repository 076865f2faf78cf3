/**
 * Run stores: the {@linkcode RunStore} contract, the in-memory store, the durable file store (run
 * log, atomic checkpoints, lock), the PostgreSQL store, choosing one for an agent, and the
 * `--runs` / `--show` renderings of recorded runs. The on-disk formats and the lock are the
 * stores' business and stay in their files.
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
