/**
 * One PostgreSQL connection pool per URL and schema, with the store's tables created by versioned
 * migrations that the first user applies: under an advisory lock, so two processes starting at once
 * never race, and recorded in `<schema>.migrations`, so each runs once.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";
import { NOT_ENDED_STATUSES } from "../run_statuses.ts";
import { loadPgPackage } from "./pg_loader.ts";
import { redactUrl } from "../redact_url.ts";

export { redactUrl };

/**
 * The statuses of a submitted run that has not ended, as an SQL list (`'queued', 'running', …`).
 * Words of our own list, never user input. (Migration 1's `runs_open_leases` index spells the list
 * of its day: an applied migration never changes, so a new open status adds a migration that
 * recreates that index.)
 */
export const NOT_ENDED_SQL: string = NOT_ENDED_STATUSES.map((s) => `'${s}'`).join(", ");

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
  /**
   * How long a new connection may take to be ready, in ms (default: the URL's `connect_timeout`
   * in seconds, else {@linkcode DEFAULT_PG_CONNECT_TIMEOUT_MS}; 0 waits for ever).
   */
  connectTimeoutMs?: number;
  /**
   * How long one statement may take, in ms (default: the URL's `statement_timeout`, else
   * {@linkcode DEFAULT_PG_STATEMENT_TIMEOUT_MS}; 0 waits for ever).
   */
  statementTimeoutMs?: number;
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

/** A connection not ready after this long fails (`?connect_timeout=SECONDS` in the URL). */
export const DEFAULT_PG_CONNECT_TIMEOUT_MS = 10_000;

/** A statement not answered after this long fails (`?statement_timeout=MS` in the URL). */
export const DEFAULT_PG_STATEMENT_TIMEOUT_MS = 30_000;

/**
 * How much longer than the statement timeout the client waits for an answer itself: the server
 * cancels a slow statement at `statement_timeout` with a clean error; a server that stopped
 * answering altogether (frozen, network gone) is given up by the client this much later.
 */
const CLIENT_GRACE_MS = 2_000;

/** The connect and statement timeouts of one store URL. */
export interface PgTimeouts {
  /** Milliseconds a new connection may take to be ready (0: no limit). */
  connectTimeoutMs: number;
  /** Milliseconds one statement may take (0: no limit). */
  statementTimeoutMs: number;
}

/**
 * The timeouts of a store URL: `connect_timeout` (seconds, as in libpq) and `statement_timeout`
 * (milliseconds, as the PostgreSQL setting) from its query string, overridden by `options`, else
 * the defaults.
 *
 * @throws {StepflowError} `STORE_OPTION_INVALID` when a value is not a whole number ≥ 0
 *
 * @example
 * ```ts
 * import { pgTimeouts } from "./pg_connection.ts";
 * const t = pgTimeouts("postgres://db.internal/app?connect_timeout=3&statement_timeout=5000");
 * console.log(t); // { connectTimeoutMs: 3000, statementTimeoutMs: 5000 }
 * ```
 */
export function pgTimeouts(
  url: string,
  options: Pick<PgConnectionOptions, "connectTimeoutMs" | "statementTimeoutMs"> = {},
): PgTimeouts {
  let params: URLSearchParams | undefined;
  try {
    params = new URL(url).searchParams;
  } catch {
    params = undefined;
  }
  const fromUrl = (name: string, unit: string, scale: number): number | undefined => {
    const raw = params?.get(name);
    if (raw === null || raw === undefined) return undefined;
    if (!/^[0-9]{1,9}$/.test(raw.trim())) {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        `${name}=${JSON.stringify(raw)} in the store URL ${
          redactUrl(url)
        } is not a whole number of ${unit}: write e.g. ${name}=${
          name === "connect_timeout" ? 10 : 30000
        } (0 waits for ever).`,
        { details: { parameter: name } },
      );
    }
    return Number(raw.trim()) * scale;
  };
  const check = (name: string, value: number | undefined): number | undefined => {
    if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
      throw new StepflowError(
        "STORE_OPTION_INVALID",
        `${name} must be a whole number of milliseconds ≥ 0 (0 waits for ever), got ${value}.`,
      );
    }
    return value;
  };
  return {
    connectTimeoutMs: check("connectTimeoutMs", options.connectTimeoutMs) ??
      fromUrl("connect_timeout", "seconds", 1000) ?? DEFAULT_PG_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: check("statementTimeoutMs", options.statementTimeoutMs) ??
      fromUrl("statement_timeout", "milliseconds", 1) ?? DEFAULT_PG_STATEMENT_TIMEOUT_MS,
  };
}

/**
 * The `pg` pool settings that bound every wait on the server at `url` (also given to pg-boss):
 * the connection string without stepflow's own `connect_timeout` and `statement_timeout` (`pg`
 * would let the URL's values win over `timeouts`), the connect timeout, the server-side
 * `statement_timeout`, and the client's own read timeout a little later for a server that
 * answers nothing at all.
 */
export function pgPoolConfig(url: string, timeouts: PgTimeouts): Record<string, unknown> {
  let connectionString = url;
  try {
    const parsed = new URL(url);
    if (
      parsed.searchParams.has("connect_timeout") || parsed.searchParams.has("statement_timeout")
    ) {
      parsed.searchParams.delete("connect_timeout");
      parsed.searchParams.delete("statement_timeout");
      connectionString = parsed.toString();
    }
  } catch {
    // Not a URL the WHATWG parser reads: pg parses it (and reports it) itself.
  }
  return {
    connectionString,
    connectionTimeoutMillis: timeouts.connectTimeoutMs,
    statement_timeout: timeouts.statementTimeoutMs,
    ...(timeouts.statementTimeoutMs > 0
      ? { query_timeout: timeouts.statementTimeoutMs + CLIENT_GRACE_MS }
      : {}),
  };
}

/**
 * Turns a `pg` error that means "the server did not answer in time" into `RUN_STORE_TIMEOUT`,
 * naming the server and how to check it; anything else is returned as it is.
 */
export function pgTimeoutError(
  error: unknown,
  url: string,
  timeouts: PgTimeouts,
): StepflowError | undefined {
  const kind = timeoutKind(error);
  if (!kind) return undefined;
  const displayUrl = redactUrl(url);
  const { host, port } = serverAddress(url);
  const waited = kind === "connect"
    ? `did not accept a connection within ${seconds(timeouts.connectTimeoutMs)} (connect_timeout)`
    : `did not answer a statement within ${
      seconds(timeouts.statementTimeoutMs)
    } (statement_timeout)`;
  const longer = kind === "connect" ? "connect_timeout=SECONDS" : "statement_timeout=MILLISECONDS";
  return new StepflowError(
    "RUN_STORE_TIMEOUT",
    `The PostgreSQL server at ${displayUrl} ${waited}: ${
      errorMessage(error)
    }. Check that it runs and answers: \`pg_isready -h ${host} -p ${port}\` (or \`psql\` with the same URL and \`SELECT 1\`); a server that is only slow can be given longer with ?${longer} in the store URL (--store, STEPFLOW_STORE or agent.json logging.store).`,
    { cause: error, details: { url: displayUrl, wait: kind } },
  );
}

function timeoutKind(error: unknown): "connect" | "statement" | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (code === "57014" && /statement timeout/i.test(error.message)) return "statement";
  if (/Query read timeout/i.test(error.message)) return "statement";
  if (
    /timeout exceeded when trying to connect|connection timeout|timeout expired/i.test(
      error.message,
    )
  ) return "connect";
  return undefined;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

function serverAddress(url: string): { host: string; port: string } {
  try {
    const parsed = new URL(url);
    return { host: parsed.hostname || "localhost", port: parsed.port || "5432" };
  } catch {
    return { host: "HOST", port: "5432" };
  }
}

/** What this process is waiting for from a PostgreSQL server right now (see `pgWaitInFlight`). */
export interface PgWait {
  /** The server, without its password. */
  displayUrl: string;
  /** When the wait started (`performance.now()`). */
  since: number;
}

const waits = new Set<PgWait>();

/**
 * Runs `work` as a wait on the server at `displayUrl`, so a Ctrl-C meanwhile can tell that the
 * command is waiting for the database ({@linkcode pgWaitInFlight}).
 */
export async function trackPgWait<T>(displayUrl: string, work: () => Promise<T>): Promise<T> {
  const wait: PgWait = { displayUrl, since: performance.now() };
  waits.add(wait);
  try {
    return await work();
  } finally {
    waits.delete(wait);
  }
}

/**
 * The oldest wait on a PostgreSQL server in flight in this process, if any: the CLIs stop at once
 * on Ctrl-C or SIGTERM when one has lasted longer than a healthy server ever takes.
 */
export function pgWaitInFlight(): PgWait | undefined {
  let oldest: PgWait | undefined;
  for (const wait of waits) if (!oldest || wait.since < oldest.since) oldest = wait;
  return oldest;
}

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
 *   login, `RUN_STORE_TIMEOUT` when it does not answer within the connect or statement timeout, `STORE_OPTION_INVALID` for a bad schema name, `RUN_STORE_SCHEMA_NEWER` when the database
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
  const timeouts = pgTimeouts(url, options);
  const key = `${url}\n${schemaName}\n${
    options.maxConnections ?? ""
  }\n${timeouts.connectTimeoutMs}\n${timeouts.statementTimeoutMs}`;
  let shared = connections.get(key);
  if (!shared) {
    const connection = connect(url, schemaName, timeouts, options, () => {
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
  timeouts: PgTimeouts,
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
    ...pgPoolConfig(url, timeouts),
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
    pgTimeoutError(error, url, timeouts) ?? new StepflowError(
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
    query<Row>(text: string, values?: unknown[]) {
      return trackPgWait(displayUrl, async () => {
        try {
          return await pool.query<Row>(text, values);
        } catch (error) {
          throw isConnectionError(error) ? unavailable(error) : error;
        }
      });
    },
    transaction<T>(fn: (client: PgQueryable) => Promise<T>): Promise<T> {
      return trackPgWait(displayUrl, async () => {
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
          const broken = isConnectionError(error);
          // A connection that timed out or dropped cannot roll back: the server ends the
          // transaction when the connection goes, and waiting for it again would wait as long.
          if (!broken) await client.query("ROLLBACK").catch(() => {});
          client.release(broken ? (error as Error) : undefined);
          throw broken ? unavailable(error) : error;
        }
      });
    },
    async close() {
      // Ending the pool waits for the server's goodbye: a silent server must not hold it up unseen.
      if (lastUser()) await trackPgWait(displayUrl, () => pool.end());
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

/** True for a URL the PostgreSQL store accepts (`postgres://` or `postgresql://`). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (timeoutKind(error)) return true;
  if (typeof code === "string") {
    // Node socket errors, and PostgreSQL's connection / authentication / missing database classes.
    if (/^E[A-Z]+$/.test(code) || code.startsWith("08") || code.startsWith("28")) return true;
    if (code === "3D000" || code === "57P01" || code === "57P03") return true;
  }
  return /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect/i
    .test(error.message);
}
