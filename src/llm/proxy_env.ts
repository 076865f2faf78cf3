/**
 * Whether Deno's `fetch` would send a plain `http:` request through a proxy named by the
 * environment — `ALL_PROXY` / `all_proxy`, `HTTP_PROXY` / `http_proxy` — with `NO_PROXY` /
 * `no_proxy` read as Deno reads it: comma-separated entries; an IP address or network
 * (`10.0.0.0/8`, `::1`) matches a host written as an IP; any other entry is a domain that matches
 * itself and its subdomains (`example.com` and `.example.com` alike), and `*` matches every host
 * written as a name.
 *
 * The chat backends' own HTTP/1.1 client (src/llm/http1_fetch.ts) serves only requests no proxy
 * applies to; the rest go through `fetch`, which routes them. When in doubt — a variable that
 * cannot be read without asking for a permission — the answer is "through fetch". The variables
 * are read once per process, as `fetch` reads them.
 *
 * @module
 */

/** Reads an environment variable (`undefined` when it is not set). */
export type EnvReader = (name: string) => string | undefined;

const PROXY_VARIABLES = ["ALL_PROXY", "all_proxy", "HTTP_PROXY", "http_proxy"];
const NO_PROXY_VARIABLES = ["NO_PROXY", "no_proxy"];

/**
 * True when `fetch` may route a request to `url` (an `http:` URL) through a proxy: a proxy
 * variable is set and `NO_PROXY` does not name the host — or the variables cannot be read
 * without a permission prompt.
 *
 * @example
 * ```ts
 * import { proxyMayApply } from "./proxy_env.ts";
 * const env = { HTTP_PROXY: "http://proxy:3128", NO_PROXY: "localhost,127.0.0.0/8" };
 * const read = (name: string) => env[name as keyof typeof env];
 * console.log(proxyMayApply(new URL("http://127.0.0.1:11434/v1"), read)); // false
 * console.log(proxyMayApply(new URL("http://models.lan:8000/v1"), read)); // true
 * ```
 */
export function proxyMayApply(url: URL, env: EnvReader | undefined = processEnv()): boolean {
  if (env === undefined) return true;
  if (!PROXY_VARIABLES.some((name) => (env(name) ?? "") !== "")) return false;
  const noProxy = NO_PROXY_VARIABLES.map((name) => env(name)).find((v) => v !== undefined) ?? "";
  return !noProxyMatches(noProxy, url.hostname);
}

/** The proxy variables as first read (null: they could not be read). */
let snapshot: Map<string, string> | null | undefined;

/**
 * The process's proxy variables, read once — as `fetch` reads them once, when it makes its first
 * request — or undefined when reading them would need a permission not granted (reading it
 * would prompt or fail).
 */
function processEnv(): EnvReader | undefined {
  if (snapshot === undefined) snapshot = readSnapshot();
  const values = snapshot;
  return values === null ? undefined : (name) => values.get(name);
}

function readSnapshot(): Map<string, string> | null {
  const names = [...PROXY_VARIABLES, ...NO_PROXY_VARIABLES];
  if (Deno.permissions.querySync({ name: "env" }).state !== "granted") {
    for (const variable of names) {
      if (Deno.permissions.querySync({ name: "env", variable }).state !== "granted") return null;
    }
  }
  const values = new Map<string, string>();
  for (const name of names) {
    const value = Deno.env.get(name);
    if (value !== undefined) values.set(name, value);
  }
  return values;
}

/** Whether a `NO_PROXY` list names `hostname` (as the URL writes it; IPv6 in brackets). */
export function noProxyMatches(list: string, hostname: string): boolean {
  if (list === "") return false;
  const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  const address = parseIp(host);
  for (const raw of list.split(",")) {
    const entry = raw.trim();
    const slash = entry.indexOf("/");
    const network = parseIp(slash === -1 ? entry : entry.slice(0, slash));
    if (address !== undefined) {
      if (network === undefined || network.length !== address.length) continue;
      const bits = slash === -1 ? network.length * 8 : Number(entry.slice(slash + 1));
      if (!Number.isInteger(bits) || bits < 0 || bits > network.length * 8) continue;
      if (sameBits(address, network, bits)) return true;
    } else if (network === undefined && domainMatches(entry, host)) {
      return true;
    }
  }
  return false;
}

/** A domain entry against a host name: itself, its subdomains, or `*`. */
function domainMatches(entry: string, host: string): boolean {
  if (entry === "*") return true;
  if (entry === host || (entry.startsWith(".") && entry.slice(1) === host)) return true;
  if (!host.endsWith(entry) || entry === "") return false;
  return entry.startsWith(".") || host.charCodeAt(host.length - entry.length - 1) === 46;
}

/** The first `bits` bits of two addresses are equal. */
function sameBits(a: Uint8Array, b: Uint8Array, bits: number): boolean {
  const whole = bits >> 3;
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false;
  const rest = bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[whole] & mask) === (b[whole] & mask);
}

/** An IPv4 (4 bytes) or IPv6 (16 bytes) address, or undefined when `text` is neither. */
function parseIp(text: string): Uint8Array | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return v4;
  if (!text.includes(":") || !/^[0-9a-fA-F:.]+$/.test(text)) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (part: string): number[] | undefined => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (const [i, piece] of pieces.entries()) {
      if (i === pieces.length - 1 && piece.includes(".")) {
        const tail = parseIpv4(piece);
        if (tail === undefined) return undefined;
        out.push((tail[0] << 8) | tail[1], (tail[2] << 8) | tail[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) out.push(parseInt(piece, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (head === undefined || tail === undefined) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...Array(missing).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) {
    return undefined;
  }
  return Uint8Array.from(parts, Number);
}
