/**
 * The `http_get` tool. It is registered only when enabled (see {@linkcode createBuiltinTools}),
 * reaches only `http:`/`https:` URLs (optionally only some hosts), and bounds both time and size.
 *
 * @module
 */
import { z } from "zod";
import { errorMessage, StepflowError } from "../errors.ts";
import type { Exactly } from "../type_equality.ts";
import type { Tool } from "./types.ts";

/** Options of the `http_get` tool. */
export interface HttpToolOptions {
  /** When set, only these host names (or `host:port`) may be fetched. */
  allowedHosts?: string[];
  /** Default timeout per request in milliseconds (default 30 000). */
  timeoutMs?: number;
  /** Default body size limit in bytes (default 5 MiB). */
  maxBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_BYTES = 5 * 1024 * 1024;

const HttpGetArgsSchema = z.object({
  url: z.url({ protocol: /^https?$/ }).describe("The http(s) URL to fetch"),
  headers: z.record(z.string(), z.string()).optional().describe("Request headers"),
  timeoutMs: z.number().int().positive().optional().describe("Give up after this many ms"),
  maxBytes: z.number().int().positive().optional().describe("Refuse bodies larger than this"),
  responseType: z.enum(["text", "json", "auto"]).optional().describe(
    "How to return the body: text, parsed json, or auto (json when the server says so; default)",
  ),
  allowErrorStatus: z.boolean().optional().describe(
    "Return 4xx/5xx responses instead of failing (default false)",
  ),
}).strict();

/** Arguments of `http_get`. */
export interface HttpGetArgs {
  /** The http(s) URL to fetch. */
  url: string;
  /** Request headers. */
  headers?: Record<string, string>;
  /** Give up after this many milliseconds. */
  timeoutMs?: number;
  /** Refuse bodies larger than this many bytes. */
  maxBytes?: number;
  /** Return the body as text, parsed JSON, or JSON when the server says so (`auto`, default). */
  responseType?: "text" | "json" | "auto";
  /** Return 4xx/5xx responses instead of failing (default false). */
  allowErrorStatus?: boolean;
}

// Compile-time: the interface equals its schema's parsed type.
// Hand-written because public: readable in `deno doc` (why: src/type_equality.ts).
const _schemaMatchesInterface: Exactly<z.infer<typeof HttpGetArgsSchema>, HttpGetArgs> = true;

/** What `http_get` returns. */
export interface HttpGetResult {
  /** The final URL (after redirects). */
  url: string;
  /** HTTP status code. */
  status: number;
  /** True for 2xx. */
  ok: boolean;
  /** Response headers, lower-case names. */
  headers: Record<string, string>;
  /** The body: text, or the parsed JSON value. */
  body: unknown;
}

/**
 * Creates the `http_get` tool.
 *
 * @example
 * ```ts ignore
 * import { ToolRegistry } from "./registry.ts";
 * import { createHttpGetTool } from "./builtin_http.ts";
 * const registry = new ToolRegistry().register(createHttpGetTool({ allowedHosts: ["example.com"] }));
 * const res = await registry.invoke("http_get", { url: "https://example.com" }, { workspaceRoot: "." });
 * ```
 */
export function createHttpGetTool(options: HttpToolOptions = {}): Tool<HttpGetArgs, HttpGetResult> {
  return {
    name: "http_get",
    description:
      "Fetch a URL with HTTP GET and return {status, ok, headers, body}; JSON bodies are parsed",
    inputSchema: HttpGetArgsSchema,
    // A GET: reading again changes nothing (HTTP semantics).
    idempotent: true,
    async execute(args, ctx) {
      const url = new URL(args.url);
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw new StepflowError(
          "HTTP_URL_REFUSED",
          `http_get: only http and https URLs are allowed, got "${url.protocol}" in ${args.url}.`,
          { details: { url: args.url } },
        );
      }
      if (
        options.allowedHosts &&
        !options.allowedHosts.includes(url.hostname) && !options.allowedHosts.includes(url.host)
      ) {
        throw new StepflowError(
          "HTTP_URL_REFUSED",
          `http_get: host "${url.host}" is not allowed. Allowed hosts: ${
            options.allowedHosts.join(", ") || "(none)"
          }.`,
          { details: { url: args.url } },
        );
      }
      const timeoutMs = args.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const maxBytes = args.maxBytes ?? options.maxBytes ?? DEFAULT_MAX_BYTES;
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout;
      let response: Response;
      try {
        response = await fetch(url, { headers: args.headers, signal, redirect: "follow" });
      } catch (error) {
        ctx.signal?.throwIfAborted();
        throw fetchError(args.url, error, timeout.aborted, timeoutMs);
      }
      let bytes: Uint8Array;
      try {
        bytes = await readLimited(response, maxBytes, args.url);
      } catch (error) {
        ctx.signal?.throwIfAborted();
        if (error instanceof StepflowError) throw error;
        throw fetchError(args.url, error, timeout.aborted, timeoutMs);
      }
      const text = new TextDecoder().decode(bytes);
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => void (headers[name] = value));
      if (!response.ok && !args.allowErrorStatus) {
        throw new StepflowError(
          "HTTP_STATUS",
          `http_get: ${args.url} answered ${response.status} ${response.statusText}${
            text ? `: ${text.slice(0, 200)}` : ""
          }. Pass allowErrorStatus: true to accept error responses.`,
          { details: { url: args.url, status: response.status } },
        );
      }
      const mode = args.responseType ?? "auto";
      const isJson = mode === "json" ||
        (mode === "auto" && /\bjson\b/i.test(response.headers.get("content-type") ?? ""));
      let body: unknown = text;
      if (isJson) {
        try {
          body = JSON.parse(text);
        } catch (error) {
          if (mode === "json") {
            throw new StepflowError(
              "HTTP_BODY_INVALID",
              `http_get: the body of ${args.url} is not valid JSON (${
                (error as Error).message
              }). Use responseType "text" to get it as text.`,
              { details: { url: args.url } },
            );
          }
        }
      }
      return {
        url: response.url || args.url,
        status: response.status,
        ok: response.ok,
        headers,
        body,
      };
    },
  };
}

async function readLimited(response: Response, maxBytes: number, url: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw tooLarge(url, maxBytes);
  }
  if (!response.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > maxBytes) {
      await reader.cancel();
      throw tooLarge(url, maxBytes);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function tooLarge(url: string, maxBytes: number): StepflowError {
  return new StepflowError(
    "HTTP_BODY_TOO_LARGE",
    `http_get: the body of ${url} is larger than ${maxBytes} bytes. Pass a larger maxBytes to accept it.`,
    { details: { url, maxBytes } },
  );
}

function fetchError(url: string, error: unknown, timedOut: boolean, timeoutMs: number) {
  if (timedOut) {
    return new StepflowError(
      "HTTP_TIMEOUT",
      `http_get: ${url} did not answer within ${timeoutMs} ms. Pass a larger timeoutMs or retry later.`,
      { details: { url, timeoutMs }, cause: error },
    );
  }
  return new StepflowError(
    "HTTP_FAILED",
    `http_get: request to ${url} failed: ${errorMessage(error)}`,
    { details: { url }, cause: error },
  );
}
