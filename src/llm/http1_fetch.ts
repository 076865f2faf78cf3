/**
 * A small HTTP/1.1 client over `Deno.connect`, behind the signature of `fetch`: the transport of
 * the chat backends for plain `http:` servers (a local model server — Ollama, vLLM, llama.cpp,
 * LM Studio — or a proxy in front of one).
 *
 * Why it exists: Deno's `fetch` hands a response body over one HTTP chunk per read, whatever the
 * socket holds, and a read through the runtime's streams costs several microseconds. A server
 * that frames each server-sent event as its own chunk (as servers that flush per token do) makes
 * a read per event: a streamed tool turn of 100 events waiting in the socket cost 100 reads. Here
 * each read of the body takes whatever has arrived (up to 64 KiB) into one reused buffer and
 * undoes the chunked framing in place, so such a turn is one read or a few.
 *
 * What it does, as `fetch` does: the request of `new Request(input, init)` (method, path and
 * query, headers, body bytes with `content-length`, `host`, `accept: *\/*`, `user-agent`), asking
 * for `accept-encoding: identity` unless the caller set one (a `gzip` or `deflate` answer is
 * decoded anyway; another encoding is an error, never bytes handed on as if plain); `1xx` interim
 * answers skipped; a body framed by `content-length`, by `transfer-encoding: chunked` (extensions
 * and trailers passed over) or by the end of the connection; no body for `HEAD`, 204, 205 and
 * 304. Redirects (301, 302, 303, 307, 308 with a `location`) are followed as `fetch` follows them
 * — at most 20; a 303, or a 301 or 302 to a POST, turns into a GET without a body; 307 and 308
 * keep the method and body; `authorization` is not sent to another origin — and a leg to an
 * `https:` URL, or one a proxy variable applies to, is sent by the global `fetch`. A request whose
 * `redirect` is not `follow`, or that carries a Deno `client`, goes to the global `fetch` from
 * the start.
 *
 * Failures are the errors `fetch` gives, so that the retry policy classifies them alike: a
 * refused, reset or closed connection before the answer is a `TypeError("fetch failed")` whose
 * cause says `error sending request for url (<url>): …`; a body cut short is a `TypeError` (`error
 * reading a body from connection: …`); an abort rejects with the signal's reason, before the
 * answer or while its body is read. A response head over {@linkcode HTTP1_HEAD_MAX_BYTES}, a bad
 * status line or header, or a bad chunk size is such a `TypeError` too: never a hang, never an
 * unbounded buffer.
 *
 * Connections are kept alive, a few per origin: one goes back to its pool only when its body was
 * read to the end and the server did not ask to close it. An idle one waits with a read pending
 * (so a server closing it is seen at once) and is closed after {@linkcode HTTP1_IDLE_MS}; neither
 * keeps the process alive. A request that fails on a reused connection before any byte of the
 * answer arrived (the server closed it as it was picked) is sent once more on a new connection. A
 * body cancelled before its end closes its connection.
 *
 * Long because: it is one transport — the request, the response head, the three body framings,
 * the pool with its idle watch, the abort and the errors `fetch` gives — whose parts share the
 * connection's buffer and state; apart, each would reach into the others.
 *
 * @module
 */

import { proxyMayApply } from "./proxy_env.ts";

/** The most bytes a response head (status line and headers), or a chunked body's trailers, may take. */
export const HTTP1_HEAD_MAX_BYTES = 64 * 1024;

/** How long an idle kept-alive connection waits for its next request before it is closed, in ms. */
export const HTTP1_IDLE_MS = 4_000;

/** Idle connections kept per origin (more are closed as they come back). */
const IDLE_PER_ORIGIN = 16;
/** The reused read buffer of a connection: the most one socket read takes. */
const READ_BUFFER_BYTES = 64 * 1024;
/** The most bytes of one chunk-size line (with its extensions) or trailer line. */
const LINE_MAX_BYTES = 8 * 1024;
/** Statuses whose answer never has a body. */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Request headers this client writes itself: the caller's are not sent. */
const OWN_HEADERS = new Set([
  "host",
  "content-length",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "proxy-connection",
]);
const USER_AGENT = `Deno/${Deno.version.deno}`;
const encoder = new TextEncoder();
const asciiDecoder = new TextDecoder();

/**
 * Counts of what the client did, for tests and benches: connections opened, socket reads made
 * while reading bodies, requests sent again after a reused connection turned out closed.
 */
export const http1Counters: { connections: number; bodyReads: number; resent: number } = {
  connections: 0,
  bodyReads: 0,
  resent: 0,
};

/**
 * `fetch` for `http:` URLs over a connection of this client's own (see the module documentation
 * for what it does and why). Other URLs, a URL a proxy variable applies to, a `redirect` other
 * than `follow` and a Deno `client` go to the global `fetch`.
 *
 * @example
 * ```ts ignore
 * import { http1Fetch } from "./http1_fetch.ts";
 * const response = await http1Fetch("http://127.0.0.1:11434/api/tags");
 * console.log(response.status, await response.json());
 * ```
 */
export async function http1Fetch(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  const url = servedUrl(input, init);
  if (url === undefined) return fetch(input, init);
  let request = (input instanceof Request ? undefined : simpleRequest(url, init)) ??
    await fullRequest(input, init);
  if (request.redirect !== "follow") return fetch(input, init);
  request.signal.throwIfAborted();
  for (let redirects = 0;; redirects++) {
    const response = await send(request);
    const location = REDIRECT_STATUSES.has(response.status)
      ? response.headers.get("location")
      : null;
    if (location === null) return redirects === 0 ? response : markRedirected(response);
    // Followed as fetch follows it: the answer to the redirect is not read.
    await response.body?.cancel().catch(() => {});
    const from = request.url.href;
    if (redirects === MAX_REDIRECTS) throw sendError(from, "too many redirects");
    let next: URL;
    try {
      next = new URL(location, from);
    } catch {
      throw sendError(from, `invalid redirect location ${JSON.stringify(location.slice(0, 100))}`);
    }
    request = redirected(request, next, response.status);
    if (next.protocol !== "http:" || proxyMayApply(next)) {
      // TLS or a proxy: the global fetch sends this leg (and follows what comes after).
      const { method, headers, body, signal } = request;
      return markRedirected(await fetch(next, { method, headers, body, signal }));
    }
  }
}

/**
 * The URL of a request this client sends — a plain `http:` URL that no proxy variable routes
 * elsewhere, without a Deno `client` — or undefined for one the global `fetch` sends. Decided
 * before anything of the request is read or copied.
 */
function servedUrl(input: string | URL | Request, init: RequestInit | undefined): URL | undefined {
  const href = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (!/^http:/i.test(href) || (init as { client?: unknown } | undefined)?.client !== undefined) {
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return undefined; // fetch says what is wrong with it
  }
  return proxyMayApply(url) ? undefined : url;
}

/** Redirects followed at most, as `fetch` does. */
const MAX_REDIRECTS = 20;
/** Headers that describe a body: dropped with it when a redirect turns the request into a GET. */
const BODY_HEADERS = ["content-encoding", "content-language", "content-location", "content-type"];

/**
 * The request to send after a redirect to `next` (the fetch standard's rules): a 303 — or a 301
 * or 302 answering a POST — turns it into a GET without a body; 307 and 308 keep both. Leaving
 * the origin drops the credentials (`authorization`).
 */
function redirected(request: Outgoing, next: URL, status: number): Outgoing {
  const headers = new Headers(request.headers);
  let { method, body } = request;
  if (
    ((status === 301 || status === 302) && method === "POST") ||
    (status === 303 && method !== "GET" && method !== "HEAD")
  ) {
    method = "GET";
    body = null;
    for (const name of BODY_HEADERS) headers.delete(name);
  }
  if (next.origin !== request.url.origin) {
    headers.delete("authorization");
    headers.delete("proxy-authorization");
  }
  return { ...request, url: next, method, headers, body };
}

/** Says that a response came after redirects, as `fetch`'s own responses do. */
function markRedirected(response: Response): Response {
  Object.defineProperty(response, "redirected", { value: true });
  return response;
}

/**
 * Sends one request over a kept-alive connection to its origin, or a new one; a reused
 * connection that closes before any byte of the answer arrived is replaced once.
 */
async function send(request: Outgoing): Promise<Response> {
  const { url, signal } = request;
  const message = requestMessage(request);
  const target: Target = {
    url: url.href,
    hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
    port: url.port === "" ? 80 : Number(url.port),
    origin: url.host,
  };
  let connection = takeIdle(target.origin);
  for (;;) {
    const reused = connection !== undefined;
    connection ??= await openConnection(target, signal);
    try {
      return await exchange(connection, message, request.method, target.url, signal);
    } catch (error) {
      if (reused && error instanceof NothingReceived && !signal.aborted) {
        // The server closed the kept-alive connection as it was picked: once more, on a new one.
        http1Counters.resent++;
        connection = undefined;
        continue;
      }
      if (signal.aborted) throw signal.reason;
      if (error instanceof NothingReceived) throw sendError(target.url, error.message);
      throw error;
    }
  }
}

/** A request as this client sends it. */
interface Outgoing {
  url: URL;
  method: string;
  headers: Headers;
  body: Uint8Array<ArrayBuffer> | null;
  signal: AbortSignal;
  redirect: RequestRedirect;
}

/** Where a request goes. */
interface Target {
  /** The request's URL, as error messages name it. */
  url: string;
  hostname: string;
  port: number;
  /** `host:port` as the URL writes it: the pool's key. */
  origin: string;
}

/** The signal of a request made without one. */
const NO_SIGNAL = new AbortController().signal;
/** Methods `fetch` writes in capitals whatever their case (the others are sent as written). */
const NORMALIZED_METHODS = new Set(["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"]);

/**
 * The request the SDK clients make — a URL, a common method, a text or byte body, headers —
 * read without building a `Request` (its copies and its following signal cost more than the
 * rest of a local exchange); undefined for anything else, which goes through `new Request`.
 */
function simpleRequest(url: URL, init: RequestInit | undefined): Outgoing | undefined {
  if (url.username !== "" || url.password !== "") return undefined;
  let method = init?.method ?? "GET";
  const upper = method.toUpperCase();
  if (NORMALIZED_METHODS.has(upper)) method = upper;
  else if (method !== "PATCH") return undefined;
  const raw = init?.body;
  let body: Uint8Array<ArrayBuffer> | null = null;
  if (typeof raw === "string") body = encoder.encode(raw);
  else if (raw instanceof Uint8Array) body = (raw as Uint8Array).slice();
  else if (raw instanceof ArrayBuffer) body = new Uint8Array(raw.slice(0));
  else if (raw !== undefined && raw !== null) return undefined;
  if (body !== null && (method === "GET" || method === "HEAD")) return undefined;
  // A Headers object (what the SDK clients pass) is only read: no copy.
  let headers = init?.headers instanceof Headers ? init.headers : new Headers(init?.headers);
  if (typeof raw === "string" && !headers.has("content-type")) {
    if (headers === init?.headers) headers = new Headers(headers);
    headers.set("content-type", "text/plain;charset=UTF-8");
  }
  return {
    url,
    method,
    headers,
    body,
    signal: init?.signal ?? NO_SIGNAL,
    redirect: init?.redirect ?? "follow",
  };
}

/** Any other request, normalised by `new Request` (its body kinds, its checks and errors). */
async function fullRequest(
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<Outgoing> {
  const request = new Request(input, init);
  const url = new URL(request.url);
  // Not followed here: it goes to the global fetch, its body unread.
  if (request.redirect !== "follow") {
    return {
      url,
      method: request.method,
      headers: request.headers,
      body: null,
      signal: request.signal,
      redirect: request.redirect,
    };
  }
  request.signal.throwIfAborted();
  const body = request.body === null ? null : new Uint8Array(await request.arrayBuffer());
  return {
    url,
    method: request.method,
    headers: request.headers,
    body,
    signal: request.signal,
    redirect: request.redirect,
  };
}

/** The connection closed (or was reset) before a single byte of the answer arrived. */
class NothingReceived extends Error {}

/** A failure before the answer: the shape Deno's `fetch` gives (see the module documentation). */
function sendError(url: string, detail: string): TypeError {
  return new TypeError("fetch failed", {
    cause: new Error(`error sending request for url (${url}): ${detail}`),
  });
}

/** A failure while a body was read, as Deno's `fetch` says it, with what happened. */
function bodyError(detail: string): TypeError {
  return new TypeError(`error reading a body from connection: ${detail}`);
}

/** The message of an error from the runtime (a reset, a refused connection). */
function osMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The request's head and body as the bytes to write. */
function requestMessage(request: Outgoing): Uint8Array {
  const { url, headers, body, method } = request;
  let head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  for (const [name, value] of headers) {
    if (!OWN_HEADERS.has(name)) head += `${name}: ${value}\r\n`;
  }
  if (!headers.has("accept")) head += "accept: */*\r\n";
  if (!headers.has("accept-language")) head += "accept-language: *\r\n";
  if (!headers.has("user-agent")) head += `user-agent: ${USER_AGENT}\r\n`;
  if (!headers.has("accept-encoding")) head += "accept-encoding: identity\r\n";
  if (body !== null) head += `content-length: ${body.length}\r\n`;
  else if (method === "POST" || method === "PUT") head += "content-length: 0\r\n";
  head += "connection: keep-alive\r\n\r\n";
  const headBytes = byteString(head);
  if (body === null || body.length === 0) return headBytes;
  const all = new Uint8Array(headBytes.length + body.length);
  all.set(headBytes);
  all.set(body, headBytes.length);
  return all;
}

/** A header text as its bytes: header values are byte strings (one byte a character). */
function byteString(text: string): Uint8Array {
  // deno-lint-ignore no-control-regex
  if (!/[^\x00-\x7f]/.test(text)) return encoder.encode(text);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** Bytes as a byte string (one character a byte). */
function latin1(bytes: Uint8Array): string {
  let ascii = true;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] > 127) {
      ascii = false;
      break;
    }
  }
  if (ascii) return asciiDecoder.decode(bytes);
  let text = "";
  for (let at = 0; at < bytes.length; at += 8192) {
    text += String.fromCharCode(...bytes.subarray(at, at + 8192));
  }
  return text;
}

// --- Connections and their pool ---------------------------------------------------------------

/** One TCP connection with its read buffer: the unread bytes are `buffer[start, end)`. */
class Connection {
  readonly conn: Deno.TcpConn;
  readonly origin: string;
  readonly buffer: Uint8Array = new Uint8Array(READ_BUFFER_BYTES);
  start = 0;
  end = 0;
  closed = false;
  /** While idle: the pending read that watches for the server closing the connection. */
  watch?: Promise<number | null>;
  /** When it became idle (`performance.now()`). */
  idleSince = 0;

  constructor(conn: Deno.TcpConn, origin: string) {
    this.conn = conn;
    this.origin = origin;
  }

  /**
   * One socket read appended to the unread bytes; null at the end of the stream. The buffer is
   * compacted first when little room is left at its end.
   */
  async fill(): Promise<number | null> {
    if (this.start === this.end) this.start = this.end = 0;
    else if (this.start > 0 && this.buffer.length - this.end < READ_BUFFER_BYTES / 4) {
      this.buffer.copyWithin(0, this.start, this.end);
      this.end -= this.start;
      this.start = 0;
    }
    let n: number | null;
    const watched = this.watch;
    if (watched !== undefined) {
      // The idle watch's read (into the empty buffer) is this read.
      this.watch = undefined;
      n = await watched;
    } else {
      n = await this.conn.read(this.buffer.subarray(this.end));
    }
    if (n !== null) this.end += n;
    return n;
  }

  /** Writes all of `bytes`. */
  async write(bytes: Uint8Array): Promise<void> {
    for (let at = 0; at < bytes.length;) at += await this.conn.write(bytes.subarray(at));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.conn.close();
    } catch {
      // closed already
    }
  }
}

/** Idle connections by origin, the most recently idle last. */
const idle = new Map<string, Connection[]>();
/** Closes connections idle for {@linkcode HTTP1_IDLE_MS}; runs while any is idle. */
let sweeper: ReturnType<typeof setInterval> | undefined;

/** The most recently idle connection to `origin` (the least likely to have been closed), if any. */
function takeIdle(origin: string): Connection | undefined {
  const list = idle.get(origin);
  const connection = list?.pop();
  if (list?.length === 0) idle.delete(origin);
  if (connection === undefined) return undefined;
  connection.conn.ref();
  return connection;
}

/** Keeps a connection whose exchange ended cleanly for the next request to its origin. */
function putIdle(connection: Connection): void {
  if (connection.closed) return;
  connection.start = connection.end = 0;
  let list = idle.get(connection.origin);
  if (list === undefined) idle.set(connection.origin, list = []);
  if (list.length >= IDLE_PER_ORIGIN) list.shift()?.close();
  list.push(connection);
  connection.idleSince = performance.now();
  // Nothing an idle connection waits on keeps the process alive.
  connection.conn.unref();
  const watch = connection.conn.read(connection.buffer);
  connection.watch = watch;
  // The server closed it, reset it or sent what nobody asked for while it was idle: drop it.
  watch.then(() => dropIdle(connection, watch), () => dropIdle(connection, watch));
  if (sweeper === undefined) {
    sweeper = setInterval(sweepIdle, Math.max(250, HTTP1_IDLE_MS / 4));
    Deno.unrefTimer(sweeper);
  }
}

/** Closes the connections idle for {@linkcode HTTP1_IDLE_MS}; stops when none is left. */
function sweepIdle(): void {
  const before = performance.now() - HTTP1_IDLE_MS;
  for (const list of [...idle.values()]) {
    for (const connection of list.filter((c) => c.idleSince <= before)) dropIdle(connection);
  }
  if (idle.size === 0 && sweeper !== undefined) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/** Closes an idle connection (unless `watch` is given and it was picked up since). */
function dropIdle(connection: Connection, watch?: Promise<number | null>): void {
  if (watch !== undefined && connection.watch !== watch) return;
  const list = idle.get(connection.origin);
  const at = list?.indexOf(connection) ?? -1;
  if (at === -1) return;
  list!.splice(at, 1);
  if (list!.length === 0) idle.delete(connection.origin);
  connection.close();
}

/** How many kept-alive connections wait idle, all origins together (for tests and diagnostics). */
export function idleHttp1Connections(): number {
  let count = 0;
  for (const list of idle.values()) count += list.length;
  return count;
}

/**
 * Closes every idle kept-alive connection (they close on their own after
 * {@linkcode HTTP1_IDLE_MS}; nothing idle keeps the process alive): for a test that must end
 * with no connection open, or a program that wants its sockets back at once.
 */
export function closeIdleHttp1Connections(): void {
  for (const list of idle.values()) for (const connection of list) connection.close();
  idle.clear();
  if (sweeper !== undefined) clearInterval(sweeper);
  sweeper = undefined;
}

/** A new connection to the target; an abort while it opens rejects with the signal's reason. */
async function openConnection(target: Target, signal: AbortSignal): Promise<Connection> {
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: target.hostname, port: target.port, signal });
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof Deno.errors.NotCapable) throw error;
    throw sendError(target.url, `tcp connect error: ${osMessage(error)}`);
  }
  if (signal.aborted) {
    conn.close();
    throw signal.reason;
  }
  http1Counters.connections++;
  conn.setNoDelay(true);
  return new Connection(conn, target.origin);
}

// --- One exchange -----------------------------------------------------------------------------

/** How a response body is delimited. */
type Framing =
  | { kind: "none" }
  | { kind: "length"; length: number }
  | { kind: "chunked"; closeAfter?: boolean }
  | { kind: "close" };

/** A parsed response head. */
interface Head {
  status: number;
  statusText: string;
  /**
   * The header lines, names in lower case: checked once, when the `Response` is made of them (a
   * `Headers` built here would be checked and copied a second time by the `Response`).
   */
  headers: [string, string][];
  /** The server keeps the connection open after this answer. */
  keepAlive: boolean;
}

/** A header's value as `Headers.get` gives it (repeated lines joined by `, `), or null. */
function headerOf(head: Head, name: string): string | null {
  let value: string | null = null;
  for (const [key, line] of head.headers) {
    if (key === name) value = value === null ? line : `${value}, ${line}`;
  }
  return value;
}

/**
 * Writes the request and reads the answer's head; the body is read as the response's stream is.
 * An abort closes the connection and rejects (or errors the body) with the signal's reason.
 */
async function exchange(
  connection: Connection,
  message: Uint8Array,
  method: string,
  url: string,
  signal: AbortSignal,
): Promise<Response> {
  const onAbort = () => connection.close();
  signal.addEventListener("abort", onAbort, { once: true });
  let head: Head;
  let framing: Framing;
  try {
    try {
      await connection.write(message);
    } catch (error) {
      throw new NothingReceived(`connection error: ${osMessage(error)}`);
    }
    head = await readHead(connection, url);
    framing = framingOf(method, head, url);
  } catch (error) {
    signal.removeEventListener("abort", onAbort);
    connection.close();
    throw error;
  }
  const decoding = bodyDecoding(head);
  if (typeof decoding === "string") {
    signal.removeEventListener("abort", onAbort);
    connection.close();
    throw sendError(url, decoding);
  }
  signal.removeEventListener("abort", onAbort);
  const reusable = head.keepAlive && framing.kind !== "close" &&
    !(framing.kind === "chunked" && framing.closeAfter === true);
  let body: ReadableStream<Uint8Array> | null = null;
  if (framing.kind === "none") {
    if (reusable && connection.start === connection.end) putIdle(connection);
    else connection.close();
  } else {
    // What already arrived is decoded now: a body that is all there (a short answer, a burst of
    // events written at once) is handed over as bytes, with no stream to read it through.
    const decoder = new BodyDecoder(connection, framing);
    const unread = connection.end - connection.start;
    const first = unread > 0 ? new Uint8Array(unread) : undefined;
    let taken = 0;
    let broken: unknown;
    try {
      if (first !== undefined) taken = decoder.take(first, 0);
    } catch (error) {
      // Bad framing is the body's error, as with fetch: the answer's head still arrives.
      broken = error;
    }
    const prefix = taken > 0 ? first!.subarray(0, taken) : undefined;
    if (broken !== undefined) {
      connection.close();
      body = new ReadableStream<Uint8Array>({
        start: (controller) => void (prefix !== undefined && controller.enqueue(prefix)),
        pull: (controller) => controller.error(broken),
      });
    } else if (decoder.done) {
      if (reusable && connection.start === connection.end) putIdle(connection);
      else connection.close();
      body = bytesStream(prefix);
    } else {
      body = bodyStream(decoder, prefix, reusable, signal);
    }
    if (decoding.length > 0) {
      let stream = body;
      for (const format of decoding) {
        stream = stream.pipeThrough(
          new DecompressionStream(format) as TransformStream<Uint8Array, Uint8Array>,
        );
      }
      body = stream;
    }
  }
  let response: Response;
  try {
    try {
      response = new Response(body, {
        status: head.status,
        statusText: head.statusText,
        headers: head.headers,
      });
    } catch (error) {
      // A reason phrase the Response refuses (a control character): the status still counts.
      if (!/status text/i.test(String(error))) throw error;
      response = new Response(body, { status: head.status, headers: head.headers });
    }
  } catch {
    // A header name or value no Headers takes.
    await body?.cancel().catch(() => {});
    connection.close();
    throw sendError(url, "invalid header in the answer");
  }
  Object.defineProperty(response, "url", { value: url });
  return response;
}

/**
 * Reads the answer's head, passing over `1xx` interim answers. A connection that closes or resets
 * before the first byte is {@linkcode NothingReceived}; a head that is cut, too large or not
 * HTTP/1.x is the error `fetch` gives.
 */
async function readHead(connection: Connection, url: string): Promise<Head> {
  let received = false;
  for (;;) {
    let scanned = 0;
    let headEnd: { at: number; next: number } | undefined;
    while ((headEnd = findBlankLine(connection, scanned)) === undefined) {
      const unread = connection.end - connection.start;
      if (unread >= HTTP1_HEAD_MAX_BYTES) {
        throw sendError(url, `the answer's head is larger than ${HTTP1_HEAD_MAX_BYTES} bytes`);
      }
      scanned = Math.max(0, unread - 3);
      let n: number | null;
      try {
        n = await connection.fill();
      } catch (error) {
        if (!received) throw new NothingReceived(`connection error: ${osMessage(error)}`);
        throw sendError(url, `connection error: ${osMessage(error)}`);
      }
      if (n === null) {
        if (!received) throw new NothingReceived("connection closed before message completed");
        throw sendError(url, "connection closed before the answer's head was complete");
      }
      received = true;
    }
    const text = latin1(connection.buffer.subarray(connection.start, headEnd.at));
    connection.start = headEnd.next;
    const head = parseHead(text, url);
    if (head.status >= 100 && head.status < 200) {
      if (head.status === 101) throw sendError(url, "unexpected 101 Switching Protocols");
      continue;
    }
    return head;
  }
}

/**
 * Where the head's blank line is in the unread bytes (searched from `from` bytes in): the end of
 * the head and the start of what follows. Lines may end with CRLF or a bare LF.
 */
function findBlankLine(
  connection: Connection,
  from: number,
): { at: number; next: number } | undefined {
  const { buffer, start, end } = connection;
  for (
    let i = buffer.indexOf(10, start + from);
    i !== -1 && i < end;
    i = buffer.indexOf(10, i + 1)
  ) {
    if (i + 1 < end && buffer[i + 1] === 10) return { at: i + 1, next: i + 2 };
    if (i + 2 < end && buffer[i + 1] === 13 && buffer[i + 2] === 10) {
      return { at: i + 1, next: i + 3 };
    }
  }
  return undefined;
}

/** Parses a status line and header lines (continuation lines are joined with a space). */
function parseHead(text: string, url: string): Head {
  const lines = text.split("\n");
  const statusLine = lines[0].endsWith("\r") ? lines[0].slice(0, -1) : lines[0];
  const match = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(statusLine);
  if (match === null) {
    throw sendError(url, `invalid HTTP status line ${JSON.stringify(statusLine.slice(0, 60))}`);
  }
  const status = Number(match[2]);
  if (status < 100 || status > 599) throw sendError(url, `invalid HTTP status ${status}`);
  const headers: [string, string][] = [];
  let name = "";
  let value = "";
  const flush = () => {
    if (name !== "") headers.push([name.toLowerCase(), value.trim()]);
  };
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
    if (line === "") continue;
    if (line.charCodeAt(0) === 32 || line.charCodeAt(0) === 9) {
      if (name === "") throw sendError(url, "invalid header line (a continuation first)");
      value += ` ${line.trim()}`;
      continue;
    }
    flush();
    const colon = line.indexOf(":");
    if (colon <= 0) {
      throw sendError(url, `invalid header line ${JSON.stringify(line.slice(0, 60))}`);
    }
    name = line.slice(0, colon);
    value = line.slice(colon + 1);
  }
  flush();
  const head: Head = { status, statusText: match[3] ?? "", headers, keepAlive: true };
  const tokens = (headerOf(head, "connection") ?? "").toLowerCase();
  head.keepAlive = match[1] === "1"
    ? !/(^|,)\s*close\s*(,|$)/.test(tokens)
    : /(^|,)\s*keep-alive\s*(,|$)/.test(tokens);
  return head;
}

/** How the answer's body is delimited (RFC 9112, section 6.3). */
function framingOf(method: string, head: Head, url: string): Framing {
  if (method === "HEAD" || NULL_BODY_STATUSES.has(head.status)) return { kind: "none" };
  const transfer = headerOf(head, "transfer-encoding");
  if (transfer !== null) {
    const last = transfer.split(",").at(-1)!.trim().toLowerCase();
    // A final coding other than chunked: the body ends with the connection. Chunked with a
    // content-length too (a message smuggled or badly made): chunked wins, the connection closes.
    if (last !== "chunked") return { kind: "close" };
    return headerOf(head, "content-length") !== null
      ? { kind: "chunked", closeAfter: true }
      : { kind: "chunked" };
  }
  const length = headerOf(head, "content-length");
  if (length === null) return { kind: "close" };
  const values = length.split(",").map((v) => v.trim());
  if (!values.every((v) => /^\d{1,15}$/.test(v) && v === values[0])) {
    throw sendError(url, `invalid content-length ${JSON.stringify(length.slice(0, 60))}`);
  }
  return { kind: "length", length: Number(values[0]) };
}

/**
 * The decompression formats the body needs, in the order to apply them — the transfer codings
 * before `chunked` (`transfer-encoding: gzip, chunked`), then the `content-encoding` — or what is
 * wrong with them.
 */
function bodyDecoding(head: Head): CompressionFormat[] | string {
  const transfer = (headerOf(head, "transfer-encoding") ?? "").split(",").map((c) => c.trim());
  if (transfer.at(-1)?.toLowerCase() === "chunked") transfer.pop();
  const formats: CompressionFormat[] = [];
  for (const header of [transfer.join(","), headerOf(head, "content-encoding") ?? ""]) {
    for (const coding of header.split(",").map((c) => c.trim().toLowerCase()).reverse()) {
      if (coding === "" || coding === "identity") continue;
      if (coding === "gzip" || coding === "x-gzip") formats.push("gzip");
      else if (coding === "deflate") formats.push("deflate");
      else {
        return `the answer is compressed as ${
          JSON.stringify(coding)
        }, which this client cannot decode (it asked for accept-encoding: identity)`;
      }
    }
  }
  return formats;
}

// --- The body ---------------------------------------------------------------------------------

/** Where a chunked body's decoder is. */
const enum Chunked {
  Size,
  Data,
  DataEnd,
  Trailer,
}

/**
 * Undoes a body's framing: copies the payload bytes out of the connection's unread bytes,
 * passing over chunk sizes, chunk ends and trailers, and says when the body is complete.
 */
class BodyDecoder {
  readonly connection: Connection;
  readonly framing: Exclude<Framing, { kind: "none" }>;
  /** Payload bytes left: of the whole body (`length`), of the current chunk (`chunked`). */
  remaining: number;
  state: Chunked = Chunked.Size;
  trailerBytes = 0;
  /** The body's end was read (for `close`: the connection ended). */
  done = false;

  constructor(connection: Connection, framing: Exclude<Framing, { kind: "none" }>) {
    this.connection = connection;
    this.framing = framing;
    this.remaining = framing.kind === "length" ? framing.length : 0;
    if (framing.kind === "length" && framing.length === 0) this.done = true;
  }

  /** Copies the payload found in the unread bytes into `out` from `at`, as much as fits. */
  take(out: Uint8Array, at: number): number {
    const c = this.connection;
    if (this.framing.kind !== "chunked") {
      let n = Math.min(c.end - c.start, out.length - at);
      if (this.framing.kind === "length") n = Math.min(n, this.remaining);
      out.set(c.buffer.subarray(c.start, c.start + n), at);
      c.start += n;
      if (this.framing.kind === "length") {
        this.remaining -= n;
        if (this.remaining === 0) this.done = true;
      }
      return n;
    }
    const buffer = c.buffer;
    let copied = 0;
    while (!this.done && c.start < c.end) {
      if (this.state === Chunked.Data) {
        const n = Math.min(c.end - c.start, out.length - at - copied, this.remaining);
        if (n === 0) break;
        out.set(buffer.subarray(c.start, c.start + n), at + copied);
        c.start += n;
        copied += n;
        this.remaining -= n;
        if (this.remaining === 0) this.state = Chunked.DataEnd;
      } else if (this.state === Chunked.DataEnd) {
        if (buffer[c.start] === 10) c.start += 1;
        else if (buffer[c.start] === 13) {
          if (c.end - c.start < 2) break;
          if (buffer[c.start + 1] !== 10) throw bodyError("a chunk does not end with CRLF");
          c.start += 2;
        } else throw bodyError("a chunk is longer than its size says");
        this.state = Chunked.Size;
      } else {
        const end = this.#lineEnd();
        if (end === -1) break;
        if (this.state === Chunked.Size) {
          const size = chunkSize(buffer, c.start, end);
          if (size === -1) {
            throw bodyError(
              `invalid chunk size line ${
                JSON.stringify(
                  latin1(buffer.subarray(c.start, Math.min(end, c.start + 40))).trimEnd(),
                )
              }`,
            );
          }
          this.remaining = size;
          this.state = size === 0 ? Chunked.Trailer : Chunked.Data;
        } else {
          // A trailer line, passed over; a blank one ends the body.
          const blank = end === c.start || (end === c.start + 1 && buffer[c.start] === 13);
          this.trailerBytes += end + 1 - c.start;
          if (blank) this.done = true;
          else if (this.trailerBytes > HTTP1_HEAD_MAX_BYTES) {
            throw bodyError(`the trailers are larger than ${HTTP1_HEAD_MAX_BYTES} bytes`);
          }
        }
        c.start = end + 1;
      }
    }
    return copied;
  }

  /** Where the LF ending the framing line that starts the unread bytes is, or -1. */
  #lineEnd(): number {
    const c = this.connection;
    const at = c.buffer.indexOf(10, c.start);
    if (at !== -1 && at < c.end) return at;
    if (c.end - c.start > LINE_MAX_BYTES) {
      throw bodyError(`a chunk-size or trailer line is longer than ${LINE_MAX_BYTES} bytes`);
    }
    return -1;
  }
}

/**
 * The size of a chunk-size line `buffer[start, lf)` (hex digits, then optional `;` extensions
 * that are passed over), or -1 when it is not one.
 */
function chunkSize(buffer: Uint8Array, start: number, lf: number): number {
  let end = lf;
  if (end > start && buffer[end - 1] === 13) end--;
  let at = start;
  while (at < end && (buffer[at] === 32 || buffer[at] === 9)) at++;
  let size = 0;
  let digits = 0;
  for (; at < end; at++) {
    const b = buffer[at];
    const digit = b >= 48 && b <= 57
      ? b - 48
      : b >= 97 && b <= 102
      ? b - 87
      : b >= 65 && b <= 70
      ? b - 55
      : -1;
    if (digit === -1) break;
    // 13 hex digits stay below 2^53: a larger chunk is no honest answer.
    if (++digits > 13) return -1;
    size = size * 16 + digit;
  }
  if (digits === 0) return -1;
  while (at < end && (buffer[at] === 32 || buffer[at] === 9)) at++;
  return at === end || buffer[at] === 59 ? size : -1;
}

/** A whole body as a byte stream (as `fetch` gives every body). */
function bytesStream(bytes: Uint8Array | undefined): ReadableStream<Uint8Array> {
  return new ReadableStream({
    type: "bytes",
    start(controller) {
      if (bytes !== undefined) controller.enqueue(bytes as Uint8Array<ArrayBuffer>);
      controller.close();
    },
  });
}

/**
 * The rest of a body as a byte stream, after `prefix` (payload decoded when the head arrived).
 * Each pull hands over every payload byte already in the connection's buffer; when there is
 * none, it makes one socket read (more only while reads bring framing alone) and hands over all
 * the payload that read completed — a BYOB reader's view is filled in place, a default reader
 * gets one chunk. At the end of the body the connection goes back to the pool (when `reusable`
 * and nothing follows the body); a cancel, an abort or an error closes it.
 */
function bodyStream(
  decoder: BodyDecoder,
  prefix: Uint8Array | undefined,
  reusable: boolean,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  const connection = decoder.connection;
  let pending = prefix;
  let settled = false;
  let controllerRef: ReadableByteStreamController | undefined;

  const settle = (reuse: boolean) => {
    if (settled) return;
    settled = true;
    signal.removeEventListener("abort", onAbort);
    if (reuse && connection.start === connection.end) putIdle(connection);
    else connection.close();
  };
  const onAbort = () => {
    settle(false);
    try {
      controllerRef?.error(signal.reason);
    } catch {
      // closed already
    }
  };

  const source: UnderlyingByteSource = {
    type: "bytes",
    start(controller) {
      controllerRef = controller;
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    },
    async pull(controller) {
      try {
        for (;;) {
          const request = controller.byobRequest;
          const view = request?.view
            ? new Uint8Array(request.view.buffer, request.view.byteOffset, request.view.byteLength)
            : undefined;
          let n = 0;
          if (pending !== undefined) {
            // What was decoded with the head goes first.
            if (view !== undefined) {
              n = Math.min(pending.length, view.length);
              view.set(pending.subarray(0, n));
              pending = n < pending.length ? pending.subarray(n) : undefined;
              request!.respond(n);
            } else {
              controller.enqueue(pending);
              pending = undefined;
            }
            return;
          }
          const out = view ??
            (connection.end > connection.start
              ? new Uint8Array(connection.end - connection.start)
              : undefined);
          if (out !== undefined) n = decoder.take(out, 0);
          if (n > 0) {
            if (view !== undefined) request!.respond(n);
            else controller.enqueue(out!.subarray(0, n));
          }
          if (decoder.done) {
            settle(reusable);
            controller.close();
            controller.byobRequest?.respond(0);
            return;
          }
          if (n > 0) return;
          let got: number | null;
          try {
            http1Counters.bodyReads++;
            got = await connection.fill();
          } catch (error) {
            if (signal.aborted) throw signal.reason;
            throw bodyError(osMessage(error));
          }
          if (got === null) {
            if (decoder.framing.kind !== "close") {
              throw bodyError(
                decoder.framing.kind === "length"
                  ? `the connection closed ${decoder.remaining} bytes before the body's end`
                  : "the connection closed before the chunked body's end",
              );
            }
            decoder.done = true;
          }
        }
      } catch (error) {
        settle(false);
        throw signal.aborted ? signal.reason : error;
      }
    },
    cancel() {
      settle(false);
    },
  };
  return new ReadableStream(source);
}
