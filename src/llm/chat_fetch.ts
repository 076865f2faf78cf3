/**
 * The `fetch` the chat backends give the official SDK clients, and what it leaves per exchange:
 * the message of an error body (the SDKs keep only part of a body that is not in their API's
 * format); a streamed exchange's idle watch is touched when the answer's headers arrive.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { describeErrorBody, type ErrorBodyKind, errorBodyKind } from "./error_body.ts";
import { http1Fetch } from "./http1_fetch.ts";
import type { IdleWatch } from "./stream_idle.ts";

/** What one exchange's `fetch` leaves for the backend (see the module documentation). */
export interface ExchangeCapture {
  /** The message read from an error body. */
  message?: string;
  /** What the error body was: the API's JSON, an HTML page, other text, nothing. */
  bodyKind?: ErrorBodyKind;
  /** Touched when the answer's headers arrive (a streamed exchange's idle timeout). */
  idle?: IdleWatch;
}

/** The most of an HTTP error body read to find its message, in bytes. */
export const ERROR_BODY_READ_MAX = 64 * 1024;

/** Where the `fetch` of the SDK clients leaves, per exchange, the message of an error body. */
export const errorBodies: AsyncLocalStorage<ExchangeCapture> = new AsyncLocalStorage<
  ExchangeCapture
>();

/**
 * Which HTTP client sends a chat backend's requests: `stepflow` (the default) sends those to a
 * plain `http:` server that no proxy variable routes elsewhere through stepflow's own HTTP/1.1
 * client (src/llm/http1_fetch.ts) and the rest through `fetch`; `fetch` sends everything through
 * Deno's `fetch` (`STEPFLOW_HTTP_CLIENT=fetch`), for a server that the own client does not get on
 * with.
 */
export type ChatHttpClient = "stepflow" | "fetch";

/**
 * The `fetch` given to the SDK clients: a plain `fetch` (see {@linkcode ChatHttpClient} for which
 * one), except that the body of an error response is read here (at most
 * {@linkcode ERROR_BODY_READ_MAX} bytes) and its message kept for the failure report — the `openai`
 * client keeps only `body.error` of a body that is not in its API's format, so
 * `{"error":"SyntaxError","message":"…"}` would lose its message. The SDK gets the same status,
 * headers and (bounded) text.
 */
export function fetchKeepingErrorBodies(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  return sendKeepingErrorBodies(http1Fetch, input, init);
}

/** {@linkcode fetchKeepingErrorBodies} through Deno's `fetch` only (`STEPFLOW_HTTP_CLIENT=fetch`). */
export function fetchOnlyKeepingErrorBodies(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  return sendKeepingErrorBodies(fetch, input, init);
}

async function sendKeepingErrorBodies(
  send: typeof fetch,
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<Response> {
  const response = await send(input, init);
  const capture = errorBodies.getStore();
  capture?.idle?.touch();
  if (response.ok || capture === undefined || response.body === null) return response;
  const text = await readAtMost(response.body, ERROR_BODY_READ_MAX);
  capture.message = describeErrorBody(text);
  capture.bodyKind = errorBodyKind(text);
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  headers.delete("content-encoding");
  return new Response(text, { status: response.status, statusText: response.statusText, headers });
}

async function readAtMost(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let read = 0;
  try {
    while (read < maxBytes) {
      const { done, value } = await reader.read();
      if (done) return text + decoder.decode();
      const chunk = value.subarray(0, maxBytes - read);
      read += chunk.length;
      text += decoder.decode(chunk, { stream: true });
    }
    await reader.cancel().catch(() => {});
    return text + decoder.decode();
  } finally {
    reader.releaseLock();
  }
}
