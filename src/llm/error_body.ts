/**
 * What an HTTP error body says, whatever its shape — the APIs' JSON error formats, FastAPI's,
 * an HTML page, plain text — and what kind of body it is (a page or text instead of the API's
 * JSON says the URL is not the API).
 *
 * @module
 */

/** The longest error message kept from an error body, in characters. */
export const ERROR_BODY_MESSAGE_MAX = 300;

/**
 * The message of an HTTP error body, whatever its shape: the OpenAI and Anthropic formats
 * (`{"error": {"type", "message"}}`), `{"message": …}`, `{"error": "text"}` (both kept when both are
 * there), FastAPI's `{"detail": …}`, an HTML page (its `<title>`, else its text) or plain text;
 * whitespace collapsed and cut at {@linkcode ERROR_BODY_MESSAGE_MAX} characters.
 *
 * @example
 * ```ts
 * import { describeErrorBody } from "./error_body.ts";
 * describeErrorBody('{"error":"SyntaxError","message":"Unexpected token }"}');
 * // "SyntaxError: Unexpected token }"
 * ```
 */
export function describeErrorBody(text: string): string {
  const trimmed = text.trim();
  if (trimmed === "") return "(empty body)";
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined) return clip(describeJsonError(parsed), ERROR_BODY_MESSAGE_MAX);
  if (isHtml(trimmed)) {
    // `[^<>]*`, not `[^>]*`: a body of many `<` without `>` must not make these scans quadratic.
    const title = /<title[^<>]*>([^<]*)<\/title>/i.exec(trimmed)?.[1];
    const textOnly = (title && title.trim() !== "" ? title : trimmed).replace(/<[^<>]*>/g, " ");
    return clip(`${textOnly} (an HTML page)`, ERROR_BODY_MESSAGE_MAX);
  }
  return clip(trimmed, ERROR_BODY_MESSAGE_MAX);
}

/** What an error body is: the JSON an API answers with, an HTML page, other text, or nothing. */
export type ErrorBodyKind = "json" | "html" | "text" | "empty";

/**
 * The kind of an HTTP error body, read as {@linkcode describeErrorBody} reads it.
 *
 * @example
 * ```ts
 * import { errorBodyKind } from "./error_body.ts";
 * errorBodyKind("<html><title>Error response</title></html>"); // "html"
 * errorBodyKind('{"error":{"message":"no"}}'); // "json"
 * ```
 */
export function errorBodyKind(text: string): ErrorBodyKind {
  const trimmed = text.trim();
  if (trimmed === "") return "empty";
  try {
    JSON.parse(trimmed);
    return "json";
  } catch {
    return isHtml(trimmed) ? "html" : "text";
  }
}

function isHtml(trimmed: string): boolean {
  return /^<(!doctype|html|head|body|\?xml)/i.test(trimmed) || /<\/[a-z]+>/i.test(trimmed);
}

function describeJsonError(body: unknown): string {
  if (typeof body === "string") return body;
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return JSON.stringify(body);
  }
  const record = body as Record<string, unknown>;
  const parts: string[] = [];
  const add = (value: unknown) => {
    if (typeof value === "string" && value.trim() !== "" && !parts.includes(value)) {
      parts.push(value);
    }
  };
  const inner = record.error;
  if (inner && typeof inner === "object" && !Array.isArray(inner)) {
    const e = inner as Record<string, unknown>;
    add(e.type ?? e.code);
    add(e.message);
  } else add(inner);
  add(record.message);
  if (typeof record.detail === "string") add(record.detail);
  else if (record.detail !== undefined) add(JSON.stringify(record.detail));
  return parts.length ? parts.join(": ") : JSON.stringify(body);
}

/** `text` on one line (whitespace collapsed), cut to `max` characters with `…`. */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
