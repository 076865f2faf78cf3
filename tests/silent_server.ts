/**
 * The probe "a server that never answers": a real TCP socket on 127.0.0.1 that accepts every
 * connection, reads what the client sends, and never writes a byte back (a database or API whose
 * process hangs, a firewall that swallows the traffic). Every client of a network service must
 * give up on it with a clear error within its timeout, and stop at once on Ctrl-C.
 *
 * @module
 */

/** A listening socket that never answers. */
export interface SilentServer {
  /** The port on 127.0.0.1. */
  readonly port: number;
  /** `postgres://stepflow:secret@127.0.0.1:<port>/app` plus `query` (e.g. `?connect_timeout=1`). */
  postgresUrl(query?: string): string;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Resolves once at least `count` connections were accepted (an event, never a fixed wait). */
  connected(count?: number): Promise<void>;
  /** Closes the listener and every accepted connection. */
  close(): void;
  /** Same as {@linkcode close}. */
  [Symbol.dispose](): void;
}

/** Starts a {@linkcode SilentServer} on a free port of 127.0.0.1. */
export function startSilentServer(): SilentServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const open = new Set<Deno.Conn>();
  const waiting: { count: number; resolve: () => void }[] = [];
  let accepted = 0;
  let closed = false;
  const drain = async (conn: Deno.Conn) => {
    const buffer = new Uint8Array(4096);
    try {
      // Read (so the client's writes never block) and answer nothing, until the client gives up.
      while (await conn.read(buffer) !== null) { /* swallow */ }
    } catch {
      // reset by the client, or closed by close()
    }
    open.delete(conn);
    try {
      conn.close();
    } catch {
      // already closed
    }
  };
  (async () => {
    try {
      for await (const conn of listener) {
        accepted++;
        open.add(conn);
        void drain(conn);
        for (const w of waiting.filter((w) => accepted >= w.count)) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve();
        }
      }
    } catch {
      // the listener was closed
    }
  })();
  const close = () => {
    if (closed) return;
    closed = true;
    listener.close();
    for (const conn of open) {
      try {
        conn.close();
      } catch {
        // already closed
      }
    }
    open.clear();
  };
  return {
    port,
    postgresUrl: (query = "") => `postgres://stepflow:secret@127.0.0.1:${port}/app${query}`,
    get accepted() {
      return accepted;
    },
    connected(count = 1) {
      if (accepted >= count) return Promise.resolve();
      return new Promise<void>((resolve) => waiting.push({ count, resolve }));
    },
    close,
    [Symbol.dispose]: close,
  };
}
