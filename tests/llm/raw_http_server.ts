/**
 * A raw HTTP/1.1 server on 127.0.0.1 over `Deno.listen`, for the tests of the backends' own HTTP
 * client: each accepted connection is handed to a handler that reads requests and writes exactly
 * the bytes the test says — framing, pauses, one byte per write, a close or a reset — which
 * `Deno.serve` would not let a test do.
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One request as the server read it. */
export interface RawRequest {
  /** The request line and headers, as text. */
  head: string;
  method: string;
  /** The request target (path and query, or an absolute URL through a proxy). */
  target: string;
  /** Headers by lower-case name. */
  headers: Record<string, string>;
  /** The body (by `content-length`). */
  body: Uint8Array;
}

/** One accepted connection. */
export class RawConnection {
  readonly conn: Deno.TcpConn;
  #pending: Uint8Array = new Uint8Array(0);

  constructor(conn: Deno.TcpConn) {
    this.conn = conn;
    conn.setNoDelay(true);
  }

  /**
   * The next request, or null when the client closed the connection. With `byteByByte`, the head
   * is read one byte at a time and the body is left unread (so that closing the connection then
   * resets it).
   */
  async next(byteByByte = false): Promise<RawRequest | null> {
    let end: number;
    const buffer = new Uint8Array(byteByByte ? 1 : 65536);
    while ((end = headEnd(this.#pending)) === -1) {
      const n = await this.conn.read(buffer).catch(() => null);
      if (n === null) return null;
      this.#pending = concat(this.#pending, buffer.subarray(0, n));
    }
    const head = decoder.decode(this.#pending.subarray(0, end));
    const [requestLine, ...lines] = head.split("\r\n");
    const [method, target] = requestLine.split(" ");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    this.#pending = this.#pending.subarray(end + 4);
    if (byteByByte) return { head, method, target, headers, body: new Uint8Array(0) };
    const length = Number(headers["content-length"] ?? 0);
    while (this.#pending.length < length) {
      const n = await this.conn.read(buffer).catch(() => null);
      if (n === null) return null;
      this.#pending = concat(this.#pending, buffer.subarray(0, n));
    }
    const body = this.#pending.slice(0, length);
    this.#pending = this.#pending.subarray(length);
    return { head, method, target, headers, body };
  }

  /** Writes all of `data`. */
  async write(data: string | Uint8Array): Promise<void> {
    const bytes = typeof data === "string" ? encoder.encode(data) : data;
    for (let at = 0; at < bytes.length;) at += await this.conn.write(bytes.subarray(at));
  }

  /**
   * Writes `data` one byte per write; with `yieldEach`, the server waits a timer turn after each
   * byte, so that a client reading as fast as it can sees the bytes one by one.
   */
  async writeBytewise(data: string | Uint8Array, yieldEach = false): Promise<void> {
    const bytes = typeof data === "string" ? encoder.encode(data) : data;
    for (let at = 0; at < bytes.length; at++) {
      await this.write(bytes.subarray(at, at + 1));
      if (yieldEach) await new Promise((resolve) => setTimeout(resolve, 0));
    }
  }

  /** Resolves when the client closed (or reset) the connection; what it sends is dropped. */
  async clientClosed(): Promise<void> {
    const buffer = new Uint8Array(4096);
    for (;;) {
      const n = await this.conn.read(buffer).catch(() => null);
      if (n === null) return;
    }
  }

  /** Closes the connection (never throws). */
  close(): void {
    try {
      this.conn.close();
    } catch {
      // closed already
    }
  }
}

/** A running raw server. */
export interface RawServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Connections accepted so far. */
  readonly accepts: number;
  /** Stops listening and closes every connection; waits for the handlers. */
  close(): Promise<void>;
}

/** Starts a server whose every connection is served by `serve` (its errors are ignored). */
export function startRawServer(serve: (connection: RawConnection) => Promise<void>): RawServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const connections: RawConnection[] = [];
  const handlers: Promise<void>[] = [];
  let accepts = 0;
  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        accepts++;
        const connection = new RawConnection(conn);
        connections.push(connection);
        handlers.push(serve(connection).catch(() => {}));
      }
    } catch {
      // closed
    }
  })();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get accepts() {
      return accepts;
    },
    async close() {
      listener.close();
      await accepting;
      for (const connection of connections) connection.close();
      await Promise.all(handlers);
    },
  };
}

/** A response head with the given status line, headers and a blank line. */
export function responseHead(status: string, headers: Record<string, string | number>): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status}\r\n${lines.join("")}\r\n`;
}

/** `text` as one HTTP chunk (its size in hex, CRLF, the bytes, CRLF). */
export function chunk(text: string): string {
  return `${encoder.encode(text).length.toString(16)}\r\n${text}\r\n`;
}

function headEnd(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      return i;
    }
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
