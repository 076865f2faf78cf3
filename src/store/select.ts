/**
 * Which store records an agent's runs: `--store`, else the environment's `STEPFLOW_STORE`, else
 * agent.json `logging.store`, else the file store (the default: no server needed).
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { FileRunStore } from "./file.ts";
import { type AgentLoggingSource, runStoreFor } from "./location.ts";
import { isPostgresUrl, redactUrl } from "./pg_connection.ts";
import { PostgresRunStore } from "./postgres.ts";

/** The environment variable naming the store (a `postgres://` URL or `file`). */
export const STORE_ENV = "STEPFLOW_STORE";

/** Where a store setting came from, for messages. */
export type StoreSource = "--store" | "STEPFLOW_STORE" | "agent.json logging.store" | "default";

/** The resolved store setting. */
export interface StoreSetting {
  /** `file`, or the PostgreSQL URL. */
  value: string;
  /** Where it came from. */
  source: StoreSource;
}

/** An agent's logging settings plus `logging.store`. */
export interface AgentStoreSource extends AgentLoggingSource {
  /** agent.json (only `logging` is read). */
  agent: { logging?: { directory?: string; maxFiles?: number; store?: string } };
}

/** Options of {@linkcode selectRunStore}. */
export interface SelectRunStoreOptions {
  /** The `--store` value, when given. */
  store?: string;
  /** Environment (`STEPFLOW_STORE`); default none. */
  env?: Record<string, string | undefined>;
  /** The user's working directory (for the file store's `logging.directory`). */
  cwd?: string;
  /** Receives store warnings. */
  onWarning?: (message: string) => void;
}

/**
 * Resolves the store setting by precedence and checks it.
 *
 * @throws {StepflowError} `STORE_INVALID` for a value that is neither `file` nor a PostgreSQL URL
 *
 * @example
 * ```ts
 * import { resolveStoreSetting } from "./select.ts";
 * const setting = resolveStoreSetting({ name: "a", agent: {} }, {
 *   env: { STEPFLOW_STORE: "postgres://db.internal/stepflow" },
 * });
 * console.log(setting.source); // "STEPFLOW_STORE"
 * ```
 */
export function resolveStoreSetting(
  definition: AgentStoreSource,
  options: SelectRunStoreOptions = {},
): StoreSetting {
  const env = options.env?.[STORE_ENV];
  const setting: StoreSetting = options.store !== undefined
    ? { value: options.store, source: "--store" }
    : env !== undefined && env !== ""
    ? { value: env, source: "STEPFLOW_STORE" }
    : definition.agent.logging?.store !== undefined
    ? { value: definition.agent.logging.store, source: "agent.json logging.store" }
    : { value: "file", source: "default" };
  if (setting.value !== "file" && !isPostgresUrl(setting.value)) {
    throw new StepflowError(
      "STORE_INVALID",
      `${setting.source} is ${
        JSON.stringify(redactUrl(setting.value))
      }: a run store is "file" (runs in logging.directory, the default) or a PostgreSQL URL like postgres://user@host:5432/database.`,
      { details: { source: setting.source } },
    );
  }
  return setting;
}

/**
 * The store of an agent's runs per {@linkcode resolveStoreSetting}: the file store over
 * `logging.directory`, or a {@linkcode PostgresRunStore} scoped to the agent, both keeping
 * `logging.maxFiles` runs.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition } from "jsr:@stepflow/core";
 * import { selectRunStore } from "jsr:@stepflow/core/store";
 * const definition = await loadAgentDefinition("code-improver");
 * const store = selectRunStore(definition, { env: Deno.env.toObject() });
 * console.log((await store.list()).length);
 * ```
 */
export function selectRunStore(
  definition: AgentStoreSource,
  options: SelectRunStoreOptions = {},
): FileRunStore | PostgresRunStore {
  const setting = resolveStoreSetting(definition, options);
  const onWarning = options.onWarning ? { onWarning: options.onWarning } : {};
  if (setting.value === "file") {
    return runStoreFor(definition, {
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...onWarning,
    });
  }
  const maxRuns = definition.agent.logging?.maxFiles;
  return new PostgresRunStore(setting.value, {
    agent: definition.name,
    ...(maxRuns !== undefined ? { maxRuns } : {}),
    ...onWarning,
  });
}
