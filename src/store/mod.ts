/**
 * Run stores: the contract, the in-memory store, the durable file store (run log, atomic
 * checkpoints, lock), plus the `--runs` / `--show` renderings.
 *
 * @module
 */
export * from "./types.ts";
export * from "./memory.ts";
export {
  DEFAULT_STALE_LOCK_MS,
  type Durability,
  FileRunStore,
  FULL_LIST_EVERY_MS,
} from "./file.ts";
export type { FileRunStoreOptions, RunFiles } from "./file.ts";
export { DEFAULT_RUN_DIRECTORY, runStoreDirFor, runStoreFor } from "./location.ts";
export type { AgentLoggingSource } from "./location.ts";
export { summarizeCheckpoint } from "./summary.ts";
export { formatLogLine, parseRunLog } from "./log_format.ts";
export type { ParsedRunLog, TornTail } from "./log_format.ts";
export { parseCheckpoint } from "./checkpoint_format.ts";
export { formatRunHistory, formatRunList, historyFromLog, runTimeline } from "./format.ts";
export type {
  FormatOptions,
  HistoryFormatOptions,
  LoggedHistoryEntry,
  LoggedUsage,
  TimelineRow,
} from "./format.ts";
export { DEFAULT_LEASE_MS, PostgresRunStore } from "./postgres.ts";
export type {
  PostgresRunStoreOptions,
  RunPageQuery,
  RunPageResult,
  SubmittedRun,
} from "./postgres.ts";
export type { PgConnectionOptions } from "./pg_connection.ts";
export { resolveStoreSetting, selectRunStore, STORE_ENV } from "./select.ts";
export type {
  AgentStoreSource,
  SelectRunStoreOptions,
  StoreSetting,
  StoreSource,
} from "./select.ts";
