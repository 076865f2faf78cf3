/**
 * How a streamed answer fails after its response began: the connection cut before the API's end
 * event, an `error` event in the stream, or a body that is not server-sent events. The chat
 * backends throw {@linkcode StreamInterrupted}; the retry policy retries it when it says so (the
 * whole call is sent again, and its text starts again — `LlmCallOptions.onText` says so).
 *
 * @module
 */
import { errorMessage } from "../errors.ts";

/**
 * Error types of a stream's `error` event that another attempt will not fix (the request itself
 * is wrong). Any other type (`overloaded_error`, `api_error`, `server_error`, none) is retried.
 */
const NOT_RETRYABLE_TYPES =
  /invalid_request|authentication|permission|not_found|request_too_large|context_length|invalid_api_key|billing/i;

/**
 * A streamed answer broke off after its response began. `retryable` says whether the retry policy
 * may send the call again; `receivedChars` is how much text had already arrived (and been reported
 * to `onText`) when it broke.
 *
 * @example
 * ```ts
 * import { StreamInterrupted } from "./stream_failure.ts";
 * const cut = new StreamInterrupted("the stream ended before message_stop", { receivedChars: 12 });
 * console.log(cut.retryable, cut.message); // true "the stream ended before message_stop (after 12 characters of text)"
 * ```
 */
export class StreamInterrupted extends Error {
  /** Whether another attempt may succeed. */
  readonly retryable: boolean;
  /** Characters of text received before the stream broke. */
  readonly receivedChars: number;
  /** The type of the stream's `error` event, when it sent one (`overloaded_error`, …). */
  readonly errorType?: string;

  /**
   * Creates the failure.
   *
   * @param reason what happened, in words
   * @param options whether to retry (default true), the text received so far, the cause
   */
  constructor(
    reason: string,
    options: {
      retryable?: boolean;
      receivedChars?: number;
      cause?: unknown;
      errorType?: string;
    } = {},
  ) {
    const received = options.receivedChars ?? 0;
    super(
      received > 0 ? `${reason} (after ${received} characters of text)` : reason,
      options.cause !== undefined ? { cause: options.cause } : undefined,
    );
    this.name = "StreamInterrupted";
    this.retryable = options.retryable ?? true;
    this.receivedChars = received;
    if (options.errorType !== undefined) this.errorType = options.errorType;
  }
}

/**
 * The {@linkcode StreamInterrupted} for an error thrown while a stream was read: the SDK's error
 * for an `error` event (its API error type decides the retry), a body that is not valid
 * server-sent events (not retried) or a connection lost mid-way (retried).
 *
 * @param error what the SDK's stream iterator threw
 * @param receivedChars characters of text received before
 */
export function streamFailure(error: unknown, receivedChars: number): StreamInterrupted {
  if (error instanceof StreamInterrupted) return error;
  const apiError = streamErrorEvent(error);
  if (apiError) {
    const what = [apiError.type, apiError.message].filter(Boolean).join(": ") || "no details";
    return new StreamInterrupted(`the server sent an error in the stream: ${what}`, {
      retryable: !NOT_RETRYABLE_TYPES.test(apiError.type ?? ""),
      receivedChars,
      cause: error,
      ...(apiError.type !== undefined ? { errorType: apiError.type.slice(0, 100) } : {}),
    });
  }
  if (error instanceof SyntaxError) {
    return new StreamInterrupted(
      `the stream is not valid server-sent events (${errorMessage(error)})`,
      { retryable: false, receivedChars, cause: error },
    );
  }
  return new StreamInterrupted(`the stream broke off: ${errorMessage(error)}`, {
    receivedChars,
    cause: error,
  });
}

/**
 * The type and message of an `error` event as the SDKs throw it: an error without an HTTP status
 * whose `error` is the event's body (Anthropic: `{ type: "error", error: { type, message } }`;
 * OpenAI: `{ message, type, code }`).
 */
function streamErrorEvent(error: unknown): { type?: string; message?: string } | undefined {
  if (error === null || typeof error !== "object") return undefined;
  const e = error as { status?: unknown; error?: unknown };
  if (e.status !== undefined && e.status !== null) return undefined;
  const body = e.error;
  if (body === null || typeof body !== "object") return undefined;
  const outer = body as { error?: unknown; type?: unknown; message?: unknown; code?: unknown };
  const inner = outer.error !== null && typeof outer.error === "object"
    ? outer.error as { type?: unknown; message?: unknown; code?: unknown }
    : outer;
  const type = text(inner.type) ?? text(inner.code);
  const message = text(inner.message);
  if (type === undefined && message === undefined) return undefined;
  return {
    ...(type !== undefined ? { type } : {}),
    ...(message !== undefined ? { message: message.slice(0, 300) } : {}),
  };
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}
