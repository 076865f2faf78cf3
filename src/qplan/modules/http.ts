/**
 * The `http` module (registered only on request): GET/POST/… over fetch.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { ModuleArgumentError, toNumber, toText } from "./values.ts";

/** The arguments of `http`. */
export interface HttpArgs {
  /** The method as the first option: `http get url=…`. */
  op?: "get" | "post" | "put" | "patch" | "delete" | "head";
  /** The method as an argument. */
  method?: string;
  /** http or https URL. */
  url: string;
  /** Headers: an object or JSON text. */
  headers?: unknown;
  /** Request body: text as is, other values as JSON. */
  body?: unknown;
  /** `text` (default) or `json` (parse the answer). */
  format?: "text" | "json";
  /** Time limit of the request (default 30000 ms). */
  timeoutMs?: unknown;
}

/**
 * `http get url="https://…" -> page`, `http post url=… body=obj format="json" -> reply`.
 * A non-2xx answer is an error naming the status. Cancelled when the run is aborted.
 */
export const httpTool: Tool<HttpArgs, unknown> = {
  name: "http",
  description:
    'HTTP request: http get url="https://example.com" -> page; http post url="…" body=payload headers={"x-key":"…"} format="json" -> reply.',
  inputSchema: z.strictObject({
    op: z.enum(["get", "post", "put", "patch", "delete", "head"]).optional().describe(
      "The method.",
    ),
    method: z.string().optional().describe("The method, when not given as the option."),
    url: z.string().describe("http(s) URL."),
    headers: z.unknown().optional().describe("Headers: object or JSON text."),
    body: z.unknown().optional().describe("Body: text, or any value sent as JSON."),
    format: z.enum(["text", "json"]).optional().describe('"text" (default) or "json".'),
    timeoutMs: z.unknown().optional().describe("Time limit in ms (default 30000)."),
  }),
  async execute(args, ctx) {
    let url: URL;
    try {
      url = new URL(args.url);
    } catch {
      throw new ModuleArgumentError("http", `"${args.url}" is not a valid URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new ModuleArgumentError(
        "http",
        `only http and https URLs are allowed, got ${url.protocol}`,
      );
    }
    const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "");
    if (host === "" || (!host.includes(":") && host.split(".").some((label) => label === ""))) {
      throw new ModuleArgumentError("http", `"${args.url}" has no valid host name`);
    }
    const method = (args.method ?? args.op ?? "get").toUpperCase();
    let headers: Record<string, string> = {};
    if (args.headers !== undefined) {
      const h = typeof args.headers === "string" ? safeJson(args.headers) : args.headers;
      if (h === null || typeof h !== "object" || Array.isArray(h)) {
        throw new ModuleArgumentError("http", "headers must be an object or JSON text of one");
      }
      headers = Object.fromEntries(Object.entries(h).map(([k, v]) => [k, toText(v)]));
    }
    let body: string | undefined;
    if (args.body !== undefined) {
      body = typeof args.body === "string" ? args.body : JSON.stringify(args.body);
      if (
        typeof args.body !== "string" &&
        !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")
      ) {
        headers["content-type"] = "application/json";
      }
    }
    const limit = args.timeoutMs === undefined
      ? 30_000
      : toNumber(args.timeoutMs, "timeoutMs", "http");
    const signals = [AbortSignal.timeout(limit)];
    if (ctx.signal) signals.push(ctx.signal);
    const response = await fetch(url, { method, headers, body, signal: AbortSignal.any(signals) });
    const text = await response.text();
    if (!response.ok) {
      throw new ModuleArgumentError(
        "http",
        `${method} ${url.href} answered ${response.status} ${response.statusText}: ${
          text.slice(0, 200)
        }`,
      );
    }
    if (args.format !== "json") return text;
    try {
      return JSON.parse(text);
    } catch {
      throw new ModuleArgumentError(
        "http",
        `${method} ${url.href} did not answer JSON: ${text.slice(0, 120)}`,
      );
    }
  },
};

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
