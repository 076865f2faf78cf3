/**
 * The `fetch` the chat backends give the official SDK clients, and what it leaves per exchange:
 * the message of an error body (the SDKs keep only part of a body that is not in their API's
 * format), the content type of a successful answer (a streamed request answered with JSON is not a
 * stream), and the idle watch of a streamed answer (touched at each chunk).
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { describeErrorBody } from "./retry.ts";
import { type IdleWatch, watchedResponse } from "./stream_idle.ts";

/** What one exchange's `fetch` leaves for the backend (see the module documentation). */
export interface ExchangeCapture {
  /** The message read from an error body. */
  message?: string;
  /** The content type of a successful answer. */
  contentType?: string;
  /** Touched at each chunk of a successful answer (a streamed exchange's idle timeout). */
  idle?: IdleWatch;
}

/** The most of an HTTP error body read to find its message, in bytes. */
export const ERROR_BODY_READ_MAX = 64 * 1024;

/**
 * Where the `fetch` of the SDK clients leaves, per exchange, the message of an error body and the
 * content type of a successful answer (a streamed request answered with JSON is not a stream).
 */
export const errorBodies: AsyncLocalStorage<ExchangeCapture> = new AsyncLocalStorage<
  ExchangeCapture
>();

/**
 * The `fetch` given to the SDK clients: a plain `fetch`, except that the body of an error
 * response is read here (at most {@linkcode ERROR_BODY_READ_MAX} bytes) and its message kept for
 * the failure report — the `openai` client keeps only `body.error` of a body that is not in its
 * API's format, so `{"error":"SyntaxError","message":"…"}` would lose its message. The SDK gets
 * the same status, headers and (bounded) text.
 */
export async function fetchKeepingErrorBodies(
  input: string | URL | Request,
  init?: RequestInit,
): Promise<Response> {
  const response = await fetch(input, init);
  const capture = errorBodies.getStore();
  if (capture !== undefined && response.ok) {
    capture.contentType = response.headers.get("content-type") ?? "";
    if (capture.idle) return watchedResponse(response, capture.idle);
  }
  if (response.ok || capture === undefined || response.body === null) return response;
  const text = await readAtMost(response.body, ERROR_BODY_READ_MAX);
  capture.message = describeErrorBody(text);
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
