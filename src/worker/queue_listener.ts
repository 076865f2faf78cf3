/**
 * Wakes a worker's idle fetch loops the moment a run is queued, instead of at their next poll:
 * every `send` to the run queue is followed by a `NOTIFY` on the queue's channel (after the job's
 * insert committed, so a woken loop finds it), and each worker holds one `LISTEN` connection on
 * that channel. A notification is only a hint: the poll stays as the fallback, so a notification
 * lost (the listening connection dropped, a pooler that does not pass them) delays a run by at most
 * one poll and never strands it. The listening connection is reopened after it drops (backoff from
 * 1 s to 30 s), and every idle loop fetches once when it is back (what it missed meanwhile).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { errorMessage } from "../errors.ts";
import { pgPoolConfig, type PgTimeouts, redactUrl, trackPgWait } from "../store/pg_connection.ts";
import { loadPgPackage } from "../store/pg_loader.ts";

/**
 * The channel of the run queue in schema `queueSchema`: `stepflow_runs_` and 16 hex digits of its
 * SHA-256 (a channel name is at most 63 bytes and global to the database; two stores in one
 * database, with different schemas, never wake each other's workers).
 *
 * @example
 * ```ts
 * import { runQueueChannel } from "./queue_listener.ts";
 * console.log(runQueueChannel("stepflow_queue")); // "stepflow_runs_" + 16 hex digits
 * ```
 */
export function runQueueChannel(queueSchema: string): string {
  return `stepflow_runs_${createHash("sha256").update(queueSchema).digest("hex").slice(0, 16)}`;
}

/** A listening connection; {@linkcode RunQueueListener.close} ends it. */
export interface RunQueueListener {
  /** Closes the connection and stops reconnecting (bounded: never waits on a silent server). */
  close(): Promise<void>;
}

interface PgNotification {
  channel: string;
  payload?: string;
}

interface PgListenClient {
  connect(): Promise<void>;
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: "notification", listener: (message: PgNotification) => void): void;
  on(event: "error" | "end", listener: (error?: Error) => void): void;
  removeAllListeners(): void;
}

interface PgModule {
  default?: { Client: new (config: Record<string, unknown>) => PgListenClient };
  Client?: new (config: Record<string, unknown>) => PgListenClient;
}

/** How long `close()` waits for the server to acknowledge the connection's end. */
const CLOSE_WAIT_MS = 1_000;

/**
 * Opens the listening connection of a worker on `channel` (with the store URL's connect and
 * statement timeouts, like every other connection). `onRun` is called with the run id of every
 * notification; `onReconnect` after the connection was reopened. Never throws: a connection that
 * cannot be opened is reported through `warn` and retried, and the workers poll meanwhile.
 */
export async function listenForRuns(
  url: string,
  timeouts: PgTimeouts,
  channel: string,
  handlers: { onRun: (runId: string) => void; onReconnect: () => void; warn: (m: string) => void },
): Promise<RunQueueListener> {
  const pg = await loadPgPackage<PgModule>("pg", "The run queue (workers)");
  const Client = pg.Client ?? pg.default?.Client;
  if (!Client) {
    handlers.warn("run queue: the npm package pg exports no Client; idle workers only poll.");
    return { close: () => Promise.resolve() };
  }
  const displayUrl = redactUrl(url);
  let closed = false;
  let client: PgListenClient | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let attempt = 0;
  let established = false;

  const drop = (target: PgListenClient, why: string) => {
    if (client !== target) return;
    client = undefined;
    target.removeAllListeners();
    target.on("error", () => {}); // a late socket error of a dropped connection is not news
    void target.end().catch(() => {});
    if (closed) return;
    handlers.warn(
      `run queue: the connection listening for queued runs ${why}; idle workers poll until it is back.`,
    );
    schedule();
  };
  const schedule = () => {
    if (closed || retry !== undefined) return;
    const backoff = Math.min(30_000, 1_000 * 2 ** Math.min(attempt++, 5));
    retry = setTimeout(() => {
      retry = undefined;
      void open();
    }, backoff);
  };
  const open = async (): Promise<void> => {
    if (closed) return;
    const next = new Client({
      ...pgPoolConfig(url, timeouts),
      application_name: "stepflow-queue-listen",
      keepAlive: true,
    });
    client = next;
    next.on("error", (error) => drop(next, `failed (${errorMessage(error)})`));
    next.on("end", () => drop(next, "was closed by the server"));
    next.on("notification", (message) => {
      if (message.channel === channel) handlers.onRun(message.payload ?? "");
    });
    try {
      // A wait on the server like any other: Ctrl-C or SIGTERM meanwhile does not wait it out.
      await trackPgWait(displayUrl, async () => {
        await next.connect();
        // The channel is `stepflow_runs_` and hex digits: nothing to escape.
        await next.query(`LISTEN ${channel}`);
      });
    } catch (error) {
      drop(next, `could not be opened (${errorMessage(error)})`);
      return;
    }
    if (client !== next) return; // closed meanwhile
    attempt = 0;
    if (established) handlers.onReconnect();
    established = true;
  };
  await open();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const last = client;
      client = undefined;
      if (!last) return;
      last.removeAllListeners();
      last.on("error", () => {});
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        last.end().catch(() => {}),
        new Promise((resolve) => timer = setTimeout(resolve, CLOSE_WAIT_MS)),
      ]);
      clearTimeout(timer);
    },
  };
}
