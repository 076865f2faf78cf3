/**
 * One PostgreSQL connection pool per URL and schema, with the store's tables created by versioned
 * migrations that the first user applies: under an advisory lock, so two processes starting at once
 * never race, and recorded in `<schema>.migrations`, so each runs once.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import { loadPgPackage } from "./pg_loader.ts";

/** The rows and row count of a query (the part of `pg`'s result stepflow reads). */
export interface PgResult<Row = Record<string, unknown>> {
  /** Result rows. */
  rows: Row[];
  /** Rows inserted, updated, deleted or returned. */
  rowCount: number | null;
}

/** Something SQL can be sent to: the pool, or one client inside a transaction. */
export interface PgQueryable {
  /** Runs one statement with `$1…` parameters. */
  query<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PgResult<Row>>;
}

interface PgClient extends PgQueryable {
  release(error?: Error | boolean): void;
}

interface PgPool extends PgQueryable {
  connect(): Promise<PgClient>;
  end(): Promise<void>;
  on(event: "error", listener: (error: Error) => void): void;
}

interface PgModule {
  default?: { Pool: new (config: Record<string, unknown>) => PgPool };
  Pool?: new (config: Record<string, unknown>) => PgPool;
}

/** Options of {@linkcode openPgConnection}. */
export interface PgConnectionOptions {
  /** Schema holding stepflow's tables (default `stepflow`). */
  schema?: string;
  /** Pool size (default 10). */
  maxConnections?: number;
  /** Receives warnings (an idle connection dropped by the server). */
  onWarning?: (message: string) => void;
}

/** A pool on one database with stepflow's schema migrated. */
export interface PgConnection extends PgQueryable {
  /** The URL without its password, for messages. */
  readonly displayUrl: string;
  /** The connection string as given (pg-boss opens its own pool with it). */
  readonly url: string;
  /** The quoted schema name, to put in SQL (`"stepflow"`). */
  readonly schema: string;
  /** The schema name as given (`stepflow`). */
  readonly schemaName: string;
  /** Runs `fn` in one transaction on one client (committed when it resolves). */
  transaction<T>(fn: (client: PgQueryable) => Promise<T>): Promise<T>;
  /** Closes the pool. */
  close(): Promise<void>;
}

/** The schema used when none is given. */
export const DEFAULT_PG_SCHEMA = "stepflow";

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** One migration: applied once, in order, inside the migration transaction. */
interface Migration {
  version: number;
  name: string;
  sql: (schema: string) => string[];
}

/**
 * The store's schema, one version per entry. Never edit an applied entry: add the next version.
 * `runs` holds one row per run (checkpoint, lease, the submitted request), `run_log` its entries.
 */
const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "runs, run log and leases",
    sql: (s) => [
      `CREATE TABLE ${s}.runs (
        run_id text PRIMARY KEY,
        agent text NOT NULL DEFAULT '',
        agent_hash text,
        status text,
        started_at text,
        updated_at text,
        log_entries integer NOT NULL DEFAULT 0,
        checkpoint json,
        request json,
        lease_owner text,
        lease_token bigint,
        lease_expires_at timestamptz,
        requeued_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`,
      `CREATE INDEX runs_agent_started ON ${s}.runs (agent, started_at DESC)`,
      `CREATE INDEX runs_open_leases ON ${s}.runs (lease_expires_at) WHERE status IN ('running', 'paused', 'queued')`,
      `CREATE TABLE ${s}.run_log (
        run_id text NOT NULL REFERENCES ${s}.runs (run_id) ON DELETE CASCADE,
        seq integer NOT NULL,
        entry json NOT NULL,
        PRIMARY KEY (run_id, seq)
      )`,
      `CREATE SEQUENCE ${s}.lease_tokens`,
    ],
  },
  {
    version: 2,
    name: "cancel requests",
    sql: (s) => [`ALTER TABLE ${s}.runs ADD COLUMN cancel_requested_at timestamptz`],
  },
  {
    version: 3,
    name: "runs the queue gave up",
    sql: (s) => [
      `ALTER TABLE ${s}.runs ADD COLUMN given_up text, ADD COLUMN given_up_at timestamptz`,
    ],
  },
];

/** The newest schema version this code knows. */
export const PG_SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1].version;

const connections = new Map<string, { connection: Promise<PgConnection>; users: number }>();

/**
 * Opens (or shares) the pool for `url` and `schema` and applies pending migrations. Every caller
 * must `close()` its connection; the pool closes when the last one does.
 *
 * @param url `postgres://user:password@host:port/database`
 * @param options schema, pool size, warnings
 * @throws {StepflowError} `RUN_STORE_UNAVAILABLE` when the server cannot be reached or refuses the
 *   login, `STORE_OPTION_INVALID` for a bad schema name, `RUN_STORE_SCHEMA_NEWER` when the database
 *   was migrated by a newer stepflow
 */
export async function openPgConnection(
  url: string,
  options: PgConnectionOptions = {},
): Promise<PgConnection> {
  const schemaName = options.schema ?? DEFAULT_PG_SCHEMA;
  if (!SCHEMA_NAME.test(schemaName)) {
    throw new StepflowError(
      "STORE_OPTION_INVALID",
      `PostgreSQL schema name ${
        JSON.stringify(schemaName)
      } is invalid: use lower-case letters, digits and "_" (at most 63), starting with a letter or "_".`,
    );
  }
  const key = `${url}\n${schemaName}\n${options.maxConnections ?? ""}`;
  let shared = connections.get(key);
  if (!shared) {
    const connection = connect(url, schemaName, options, () => {
      const entry = connections.get(key);
      if (entry && --entry.users > 0) return false;
      connections.delete(key);
      return true;
    });
    shared = { connection, users: 0 };
    connections.set(key, shared);
    connection.catch(() => connections.delete(key));
  }
  shared.users++;
  return await shared.connection;
}

async function connect(
  url: string,
  schemaName: string,
  options: PgConnectionOptions,
  lastUser: () => boolean,
): Promise<PgConnection> {
  const displayUrl = redactUrl(url);
  const pg = await loadPgPackage<PgModule>("pg", "The PostgreSQL run store");
  const Pool = pg.Pool ?? pg.default?.Pool;
  if (!Pool) {
    throw new StepflowError("RUN_STORE_NOT_INSTALLED", "The npm package pg exports no Pool.");
  }
  const pool = new Pool({
    connectionString: url,
    max: options.maxConnections ?? 10,
    application_name: "stepflow",
  });
  const warn = options.onWarning ?? ((m: string) => console.warn(`[stepflow] ${m}`));
  // An idle client the server drops must not crash the process; the next query reconnects.
  pool.on(
    "error",
    (error) => warn(`PostgreSQL connection ${displayUrl} dropped: ${error.message}`),
  );
  const schema = `"${schemaName}"`;
  const unavailable = (error: unknown) =>
    new StepflowError(
      "RUN_STORE_UNAVAILABLE",
      `Cannot use the PostgreSQL run store at ${displayUrl}: ${
        errorMessage(error)
      }. Check the URL (--store, STEPFLOW_STORE or agent.json logging.store), that the server runs and accepts this user, and that the database exists.`,
      { cause: error, details: { url: displayUrl } },
    );
  const connection: PgConnection = {
    displayUrl,
    url,
    schema,
    schemaName,
    async query<Row>(text: string, values?: unknown[]) {
      try {
        return await pool.query<Row>(text, values);
      } catch (error) {
        throw isConnectionError(error) ? unavailable(error) : error;
      }
    },
    async transaction<T>(fn: (client: PgQueryable) => Promise<T>): Promise<T> {
      let client: PgClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw unavailable(error);
      }
      try {
        await client.query("BEGIN");
        const result = await fn(client);
        await client.query("COMMIT");
        client.release();
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        client.release(isConnectionError(error) ? (error as Error) : undefined);
        throw isConnectionError(error) ? unavailable(error) : error;
      }
    },
    async close() {
      if (lastUser()) await pool.end();
    },
  };
  try {
    await migrate(connection);
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  return connection;
}

/** Applies pending migrations under a transaction-scoped advisory lock. */
async function migrate(connection: PgConnection): Promise<void> {
  const s = connection.schema;
  await connection.transaction(async (client) => {
    // One lock key per schema: concurrent starters wait here, then see the applied versions.
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [
      `stepflow.migrations:${connection.schemaName}`,
    ]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    );
    const applied = new Set(
      (await client.query<{ version: number }>(`SELECT version FROM ${s}.migrations`)).rows
        .map((r) => r.version),
    );
    const newest = Math.max(0, ...applied);
    if (newest > PG_SCHEMA_VERSION) {
      throw new StepflowError(
        "RUN_STORE_SCHEMA_NEWER",
        `The PostgreSQL run store at ${connection.displayUrl} (schema ${connection.schemaName}) was migrated to version ${newest} by a newer stepflow; this one knows up to ${PG_SCHEMA_VERSION}. Upgrade stepflow on this machine.`,
      );
    }
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      for (const statement of migration.sql(s)) await client.query(statement);
      await client.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
  });
}

/** `postgres://user:secret@host/db` → `postgres://user:***@host/db`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, "//$1:***@");
  }
}

/** True for a URL the PostgreSQL store accepts (`postgres://` or `postgresql://`). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    // Node socket errors, and PostgreSQL's connection / authentication / missing database classes.
    if (/^E[A-Z]+$/.test(code) || code.startsWith("08") || code.startsWith("28")) return true;
    if (code === "3D000" || code === "57P01" || code === "57P03") return true;
  }
  return /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect/i
    .test(error.message);
}
