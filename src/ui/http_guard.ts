/**
 * The dashboard's guards on what a request or a start names: path segments that must be valid
 * percent-encoded UTF-8 (else 400), Host headers that must name a loopback address in any spelling
 * (DNS rebinding), redirect targets that must stay on this server, and the reasons a `--host` /
 * `--port` cannot be bound (`UI_BIND_FAILED`).
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";

/** The Host names a loopback-only dashboard answers by default (any loopback spelling also does). */
export const LOOPBACK_HOSTS: readonly string[] = ["127.0.0.1", "localhost", "[::1]"];

/**
 * The first segment of `pathname` that is not valid percent-encoded UTF-8 (`%zz`, a lone `%`, a
 * cut or overlong sequence), or `undefined` when every segment decodes.
 */
export function malformedSegment(pathname: string): string | undefined {
  for (const segment of pathname.split("/")) {
    if (routeParam(segment) === undefined) return segment.slice(0, 200);
  }
  return undefined;
}

/** A route parameter decoded, or `undefined` when it is not valid percent-encoded UTF-8. */
export function routeParam(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * The path and query of `url` as a redirect target that stays on this server: leading slashes
 * collapse to one, so `//evil.example/` (a protocol-relative URL to another host) becomes
 * `/evil.example/`.
 */
export function sameOriginPath(url: URL): string {
  return `/${url.pathname.replace(/^[/\\]+/, "")}${url.search}`;
}

/**
 * Whether a Host header names a host the dashboard answers: one of `hosts`, or — when `hosts` are
 * the loopback defaults — any spelling of a loopback address (`127.1`, `[::ffff:127.0.0.1]`).
 */
export function hostAllowed(header: string, hosts: readonly string[]): boolean {
  const host = hostOf(header);
  if (host === undefined) return false;
  if (hosts.includes(host)) return true;
  return hosts === LOOPBACK_HOSTS && isLoopback(host);
}

/**
 * `host:port` → `host` as a URL parser reads it (IPv6 literals keep their brackets, IPv4
 * shorthands are expanded: `127.1` → `127.0.0.1`); `undefined` when it is no valid host.
 */
function hostOf(header: string): string | undefined {
  // Only host characters: `user@host` or `host/path` would parse to another host than meant.
  if (!/^[A-Za-z0-9.\-:[\]]+$/.test(header)) return undefined;
  return URL.canParse(`http://${header}/`) ? new URL(`http://${header}/`).hostname : undefined;
}

/** Which server could not listen: its error code and how messages name it. */
export interface BindingServer {
  /** The code of the error. */
  code: "UI_BIND_FAILED" | "MCP_BIND_FAILED";
  /** The server as a message's subject (`The dashboard`). */
  name: string;
}

const DASHBOARD_SERVER: BindingServer = { code: "UI_BIND_FAILED", name: "The dashboard" };

/**
 * Why the dashboard cannot listen, as `UI_BIND_FAILED` (the port is taken, the name does not
 * resolve, the address is not one of this machine's, or a port below 1024 without privileges);
 * `server` names another server (`deno task mcp --port`: `MCP_BIND_FAILED`).
 */
export function bindError(
  hostname: string,
  port: number,
  error: unknown,
  server: BindingServer = DASHBOARD_SERVER,
): StepflowError {
  const why = error instanceof Deno.errors.AddrInUse
    ? `port ${port} is already in use; pick another with --port (0 picks a free one) or stop the other server`
    : error instanceof Deno.errors.AddrNotAvailable
    ? `${hostname} is not an address of this machine; give one of its interfaces' addresses, 0.0.0.0 for all, or leave --host out for 127.0.0.1`
    : error instanceof Deno.errors.PermissionDenied
    ? `binding port ${port} needs privileges; pick a port from 1024 up`
    : /lookup|empty host/i.test(errorMessage(error))
    ? `the name "${hostname}" does not resolve to an address; give an IP address or a name this machine resolves`
    : errorMessage(error);
  return new StepflowError(
    server.code,
    `${server.name} cannot listen on ${hostname}:${port}: ${why}.`,
    { details: { hostname, port }, cause: error },
  );
}

/**
 * Whether a bind address (or a Host header's host) is a loopback interface, however it is
 * written: `localhost`, `127.0.0.0/8` in any IPv4 spelling (`127.1`, `0x7f.0.0.1`), `::1`, and the
 * IPv4-mapped `::ffff:127.x.x.x` (with or without brackets).
 *
 * @example
 * ```ts
 * import { isLoopback } from "./http_guard.ts";
 * console.log(isLoopback("127.1"), isLoopback("::ffff:127.0.0.1"), isLoopback("0.0.0.0")); // true true false
 * ```
 */
export function isLoopback(hostname: string): boolean {
  const host = canonicalHost(hostname);
  if (host === undefined) return false;
  if (host === "localhost" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)) return true;
  // IPv4-mapped IPv6 (`::ffff:127.0.0.1` is serialised `[::ffff:7f00:1]`): 127/8 is 7f00–7fff.
  return /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
}

/** A host name as the URL parser writes it (`127.1` → `127.0.0.1`, `::1` → `[::1]`). */
function canonicalHost(hostname: string): string | undefined {
  const literal = hostname.includes(":") && !hostname.startsWith("[") ? `[${hostname}]` : hostname;
  return hostOf(literal.replace(/\.$/, ""));
}
