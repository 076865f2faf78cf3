/**
 * The error a real backend call ends with when it cannot produce an answer.
 *
 * @module
 */
import type { ErrorCodeOf } from "../error_codes.ts";
import { StepflowError } from "../errors.ts";
import type { RetryExhausted } from "./retry.ts";
import { StreamStalled } from "./stream_idle.ts";

/**
 * Stable codes of {@linkcode BackendError}:
 * - `BACKEND_AUTH` — the server refused the credentials (401/403);
 * - `BACKEND_HTTP_ERROR` — the server rejected the request (other 4xx; never retried);
 * - `BACKEND_UNAVAILABLE` — 408/409/429/5xx persisted through every attempt;
 * - `BACKEND_TIMEOUT` — no answer within the per-call timeout, on every attempt;
 * - `BACKEND_NETWORK` — the server could not be reached, on every attempt;
 * - `BACKEND_STREAM_INTERRUPTED` — a streamed answer broke off after it began (the connection cut
 *   before the API's end event, an `error` event in the stream), on every attempt;
 * - `BACKEND_BAD_RESPONSE` — the server answered with a body that is not the API's format;
 * - `BACKEND_REFUSED` — the model refused to answer;
 * - `BACKEND_NOT_INSTALLED` — the SDK or the Claude Code executable cannot be loaded;
 * - `BACKEND_ERROR` — anything else the backend reported.
 *
 * The llm module's `BACKEND_*` codes in `src/error_codes.ts`: a new one is added there.
 */
export type BackendErrorCode = Extract<ErrorCodeOf<"llm">, `BACKEND_${string}`>;

/**
 * Failures that mean the backend cannot be used at all — credentials missing or refused, SDK or
 * executable not installed — rather than that a step failed: fix the setup, not the run.
 */
export const BACKEND_SETUP_CODES: ReadonlySet<string> = new Set([
  "BACKEND_AUTH",
  "BACKEND_NOT_INSTALLED",
]);

/** Structured context of a {@linkcode BackendError}. */
export interface BackendErrorDetails extends Record<string, unknown> {
  /** The backend name. */
  backend: string;
  /** Attempts made (1 when the failure was not retried). */
  attempts?: number;
  /** The HTTP status of the last failure, when the server answered. */
  status?: number;
  /** The step being executed. */
  stepId?: string;
  /** The API's own name of the last failure (`rate_limit_error`, `overloaded_error`, …). */
  errorType?: string;
  /** The wait the server asked for, in ms, when it asked for one (a `Retry-After`, a reset). */
  retryAfterMs?: number;
}

/**
 * A backend call failed. `code` says how (see {@linkcode BackendErrorCode}); the message names the
 * backend, the cause, the attempts made, and what to do about it.
 *
 * @example
 * ```ts
 * import { BackendError } from "./backend_error.ts";
 * const e = new BackendError("BACKEND_AUTH", "openai backend: HTTP 401 …", { backend: "openai", status: 401 });
 * console.log(e.code, e.details?.status); // BACKEND_AUTH 401
 * ```
 */
export class BackendError extends StepflowError {
  /** The failure kind. */
  declare readonly code: BackendErrorCode;
  /** Backend name, attempts, status, step. */
  declare readonly details: BackendErrorDetails;

  /**
   * Creates the error.
   *
   * @param code the failure kind
   * @param message what failed, where, and how to fix it
   * @param details backend name, attempts, status, step
   * @param cause the underlying error
   */
  constructor(
    code: BackendErrorCode,
    message: string,
    details: BackendErrorDetails,
    cause?: unknown,
  ) {
    super(code, message, { details, cause });
  }
}

/** Hints a backend adds to the messages of {@linkcode fromRetryExhausted}. */
export interface FailureHints {
  /** Said on 401/403 (e.g. "Check ANTHROPIC_API_KEY."). */
  auth?: string;
  /** Said on 404 (e.g. "Check the model name (--model)."). */
  notFound?: string;
  /** Said on network errors (e.g. "Is the server at http://… running?"). */
  network?: string;
}

/**
 * Turns the final failure of a retried call into a {@linkcode BackendError} whose message says what
 * happened, how many attempts were made, and what to try.
 */
export function fromRetryExhausted(
  backend: string,
  failure: RetryExhausted,
  context: { stepId?: string; timeoutMs?: number },
  hints: FailureHints = {},
): BackendError {
  const { status, kind, reason, errorType, retryAfterMs } = failure.failure;
  const attempts = failure.attempts;
  const tried = attempts === 1 ? "" : ` (after ${attempts} attempts)`;
  const where = context.stepId ? ` in step "${context.stepId}"` : "";
  const details: BackendErrorDetails = {
    backend,
    attempts,
    ...(status !== undefined ? { status } : {}),
    ...(context.stepId !== undefined ? { stepId: context.stepId } : {}),
    ...(errorType !== undefined ? { errorType } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
  const head = `${backend} backend${where}: ${reason}${tried}.`;
  let code: BackendErrorCode;
  let advice: string;
  if (failure.stopReason === "wait_too_long") {
    code = "BACKEND_UNAVAILABLE";
    advice = `The server asked to wait ${
      Math.ceil((retryAfterMs ?? 0) / 1000)
    } s before retrying, longer than the retry policy allows (maxRateLimitWaitMs; --max-rate-limit-wait-ms on the command line); try again later, or add a fallback model (--fallback-model).`;
  } else if (status === 401 || status === 403) {
    code = "BACKEND_AUTH";
    advice = hints.auth ?? "Check the API key.";
  } else if (status !== undefined && !failure.failure.retryable) {
    code = "BACKEND_HTTP_ERROR";
    advice = status === 404 && hints.notFound
      ? hints.notFound
      : "Client errors are not retried; fix the request (model name, schema, prompt size).";
  } else if (status !== undefined) {
    code = "BACKEND_UNAVAILABLE";
    advice = `The server stayed unavailable or rate-limited through ${attempts} attempt${
      attempts === 1 ? "" : "s"
    }; try again later, or allow more attempts per call: --max-attempts N on the command line (retry: { maxAttempts } with createBackend).`;
  } else if (kind === "timeout" && failure.lastError instanceof StreamStalled) {
    code = "BACKEND_TIMEOUT";
    advice =
      `The server went quiet in the middle of its streamed answer. For a model that thinks long before it writes, raise the idle timeout (now ${failure.lastError.idleTimeoutMs} ms): idleTimeoutMs, --idle-timeout-ms N (0 turns it off); otherwise check the server.`;
  } else if (kind === "timeout") {
    code = "BACKEND_TIMEOUT";
    advice = `Raise the per-call timeout${
      context.timeoutMs ? ` (now ${context.timeoutMs} ms)` : ""
    } with timeoutMs / stepTimeoutMs, or use a faster model.`;
  } else if (kind === "stream") {
    code = "BACKEND_STREAM_INTERRUPTED";
    advice = failure.failure.retryable
      ? "The server kept breaking off its streamed answer; try again later, or turn streaming off for this server (--no-stream, STEPFLOW_STREAM=0, or stream: false) if it cannot stream reliably."
      : "Fix what the server says, or turn streaming off for this server (--no-stream, STEPFLOW_STREAM=0, or stream: false) if it cannot stream.";
  } else if (kind === "network") {
    code = "BACKEND_NETWORK";
    advice = hints.network ?? "Check the network connection and the base URL.";
  } else if (failure.lastError instanceof BackendError) {
    return failure.lastError;
  } else if (failure.lastError instanceof SyntaxError) {
    code = "BACKEND_BAD_RESPONSE";
    advice =
      "The server's answer is not valid JSON; check that the base URL points at the right API.";
  } else {
    code = "BACKEND_ERROR";
    advice = "";
  }
  return new BackendError(
    code,
    advice ? `${head} ${advice}` : head,
    details,
    failure.lastError,
  );
}
