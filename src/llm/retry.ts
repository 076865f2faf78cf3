/**
 * The retry policy shared by the real backends: exponential backoff with full jitter, the server's
 * `Retry-After` and rate-limit resets honoured up to a bound (`maxRateLimitWaitMs`), a per-attempt
 * timeout, cancellation, and one `onRetry` report per retry.
 *
 * Which failures are retried is decided by a classifier (see {@linkcode classifyHttpFailure}):
 * HTTP 408, 409, 429 and 5xx and network errors are transient; any other 4xx is not.
 *
 * @module
 */
import { errorMessage, StepflowError, UsageError } from "../errors.ts";
import { backoffDelay, sleep } from "../backoff.ts";
import { type HeadersLike, headerValue, serverWaitMs } from "./rate_limit_reset.ts";

/** How often and how patiently a failed backend call is retried. */
export interface RetryPolicy {
  /** Total attempts including the first one (default 3; 1 disables retries). */
  maxAttempts: number;
  /** Upper bound of the first backoff delay in ms (default 500). */
  initialDelayMs: number;
  /** Growth factor of the backoff bound per attempt (default 2). */
  factor: number;
  /** Cap of the backoff bound in ms (default 30 000). */
  maxDelayMs: number;
  /**
   * The longest wait the server may ask for, in ms (default 120 000): its `Retry-After`, or on a
   * 429 the reset of the rate limit it hit (`anthropic-ratelimit-*-reset`,
   * `x-ratelimit-reset-requests/tokens`). The policy waits until then before the next attempt; a
   * server asking for a longer wait ends the retries at once (a model chain then falls through to
   * its next entry) instead of blocking the run.
   */
  maxRateLimitWaitMs: number;
}

/** The defaults: 3 attempts, 500 ms initial, factor 2, 30 s cap, server-asked waits up to 2 min. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 3,
  initialDelayMs: 500,
  factor: 2,
  maxDelayMs: 30_000,
  maxRateLimitWaitMs: 120_000,
});

/**
 * Fills a partial policy with the defaults and checks every value.
 *
 * @throws {UsageError} when a value is not a finite number in range
 *
 * @example
 * ```ts
 * import { resolveRetryPolicy } from "./retry.ts";
 * console.log(resolveRetryPolicy({ maxAttempts: 5 }).initialDelayMs); // 500
 * ```
 */
export function resolveRetryPolicy(partial: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY };
  for (const [key, value] of Object.entries(partial) as [keyof RetryPolicy, unknown][]) {
    if (value === undefined) continue;
    if (!(key in DEFAULT_RETRY_POLICY)) {
      throw new UsageError(
        `Unknown retry option "${key}"; allowed: ${Object.keys(DEFAULT_RETRY_POLICY).join(", ")}.`,
      );
    }
    const min = key === "maxAttempts" || key === "factor" ? 1 : 0;
    if (typeof value !== "number" || !Number.isFinite(value) || value < min) {
      throw new UsageError(
        `Retry option ${key} must be a number ≥ ${min}, got ${JSON.stringify(value)}.`,
      );
    }
    policy[key] = key === "maxAttempts" ? Math.floor(value) : value;
  }
  return policy;
}

/**
 * The backoff before retry number `failedAttempt` (1 after the first failure), with full jitter:
 * a uniform random value in `[0, min(maxDelayMs, initialDelayMs × factor^(failedAttempt−1)))`.
 *
 * @param random a source of uniform numbers in [0, 1) (injectable for tests)
 *
 * @example
 * ```ts
 * import { DEFAULT_RETRY_POLICY, jitteredBackoff } from "./retry.ts";
 * jitteredBackoff(3, DEFAULT_RETRY_POLICY, () => 0.5); // 0.5 × min(30000, 500 × 2²) = 1000
 * ```
 */
export function jitteredBackoff(
  failedAttempt: number,
  policy: Pick<RetryPolicy, "initialDelayMs" | "factor" | "maxDelayMs">,
  random: () => number = Math.random,
): number {
  const bound = backoffDelay(failedAttempt, {
    initialMs: policy.initialDelayMs,
    factor: policy.factor,
    maxMs: policy.maxDelayMs,
  });
  return Math.floor(random() * bound);
}

export { type HeadersLike, parseRetryAfter } from "./rate_limit_reset.ts";

/** True for the HTTP statuses worth retrying: 408, 409, 429 and every 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** What a classifier says about one failed attempt. */
export interface FailureClass {
  /** Whether another attempt may succeed. */
  retryable: boolean;
  /**
   * `http` (the server answered with an error status), `network`, `timeout`, `stream` (a streamed
   * answer broke off after it began: cut, an `error` event, not server-sent events) or `other`.
   */
  kind: "http" | "network" | "timeout" | "stream" | "other";
  /** The HTTP status, when the server answered. */
  status?: number;
  /** The wait the server asked for, in ms: its `Retry-After`, or on a 429 its rate-limit reset. */
  retryAfterMs?: number;
  /**
   * The API's own name of the error, when its body or stream event gave one (`rate_limit_error`,
   * `overloaded_error`, `context_length_exceeded`, `exceed_context_size_error`, …).
   */
  errorType?: string;
  /** A short human-readable reason (`HTTP 429 rate_limit_error: …`, `connection refused`, …). */
  reason: string;
}

/**
 * The error classes of one official SDK (`openai` or `@anthropic-ai/sdk`), as loaded at run time.
 * Classification goes by class, never by `name`: the `openai` client's `APIConnectionError`
 * has the `name` `"Error"`.
 */
export interface SdkErrorClasses {
  /** `APIConnectionError`: the request never got an HTTP answer. */
  // deno-lint-ignore no-explicit-any
  APIConnectionError?: abstract new (...args: any[]) => unknown;
  /** `APIConnectionTimeoutError` (a subclass of `APIConnectionError`): the SDK's own timeout. */
  // deno-lint-ignore no-explicit-any
  APIConnectionTimeoutError?: abstract new (...args: any[]) => unknown;
}

/** What {@linkcode classifyHttpFailure} may know beyond the error itself. */
export interface ClassifyContext {
  /** The loaded SDK's error classes. */
  classes?: SdkErrorClasses;
  /**
   * The message read from the raw error body (see {@linkcode describeErrorBody}); the SDKs keep
   * only part of a body that is not in their API's error format.
   */
  bodyMessage?: string;
}

/**
 * Classifies an error thrown by the official `@anthropic-ai/sdk` and `openai` clients or by
 * `fetch`, by class, status and cause (never by `name`):
 * - the SDK's `APIConnectionTimeoutError` is a retryable `timeout`;
 * - an error with a numeric `status` is `http`, retryable for 408/409/429/5xx — the server's
 *   `x-should-retry` header, when present, overrides the status rule;
 * - the SDK's `APIConnectionError`, a `TypeError` (how `fetch` fails), or an error whose `cause`
 *   chain holds one, is a retryable `network` failure, reported with the innermost cause
 *   (`Connection refused (os error 111)`);
 * - anything else is not retried.
 *
 * @example
 * ```ts
 * import { classifyHttpFailure } from "./retry.ts";
 * classifyHttpFailure({ status: 503, headers: new Headers(), message: "busy" }).retryable; // true
 * ```
 */
export function classifyHttpFailure(error: unknown, context: ClassifyContext = {}): FailureClass {
  const { classes = {} } = context;
  if (classes.APIConnectionTimeoutError && error instanceof classes.APIConnectionTimeoutError) {
    return { retryable: true, kind: "timeout", reason: "the request timed out" };
  }
  const e = error as {
    status?: unknown;
    headers?: HeadersLike;
    message?: string;
    error?: unknown;
  };
  if (e && typeof e === "object" && typeof e.status === "number") {
    const status = e.status;
    const shouldRetry = headerValue(e.headers, "x-should-retry");
    const retryable = shouldRetry === "true"
      ? true
      : shouldRetry === "false"
      ? false
      : isRetryableStatus(status);
    const text = context.bodyMessage !== undefined ? ` ${context.bodyMessage}` : apiErrorText(e);
    const errorType = apiErrorType(e);
    return {
      retryable,
      kind: "http",
      status,
      retryAfterMs: serverWaitMs(status, e.headers),
      ...(errorType !== undefined ? { errorType } : {}),
      reason: `HTTP ${status}${text}`,
    };
  }
  const connection = classes.APIConnectionError !== undefined &&
    error instanceof classes.APIConnectionError;
  if (connection || causeChain(error).some((c) => c instanceof TypeError)) {
    return { retryable: true, kind: "network", reason: `network error: ${innermost(error)}` };
  }
  return {
    retryable: false,
    kind: "other",
    reason: errorMessage(error),
  };
}

/** The error and its `cause`s, outermost first (at most 8: a cycle must not hang us). */
function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && e !== null && chain.length < 8;) {
    chain.push(e);
    e = typeof e === "object" ? (e as { cause?: unknown }).cause : undefined;
  }
  return chain;
}

/**
 * The message of the innermost cause that has one. Deno's `fetch` says `error sending request for
 * url (<url>): client error (Connect): tcp connect error: Connection refused (os error 111)`; that
 * shape is shortened to `Connection refused (os error 111) (<url>)`.
 */
function innermost(error: unknown): string {
  const messages = causeChain(error)
    .map((c) => (c instanceof Error ? c.message : typeof c === "string" ? c : ""))
    .filter((m) => m.trim() !== "");
  const message = messages.at(-1) ?? "no details";
  const fetchShape = /^error sending request for url \(([^()\s]+)\): .*: ([^:]+)$/s.exec(message);
  return clip(fetchShape ? `${fetchShape[2]} (${fetchShape[1]})` : message, 300);
}

/**
 * The API's name of an HTTP error from the body the SDK parsed: the OpenAI shape's `code` (which
 * names `context_length_exceeded`) else its `type`, the Anthropic shape's `error.type`.
 */
function apiErrorType(e: { error?: unknown }): string | undefined {
  const body = e.error as { error?: unknown } | null | undefined;
  const inner = (body !== null && typeof body === "object" && body.error !== null &&
      typeof body.error === "object"
    ? body.error
    : body) as { type?: unknown; code?: unknown } | null | undefined;
  if (inner === null || typeof inner !== "object") return undefined;
  for (const value of [inner.code, inner.type]) {
    if (typeof value === "string" && value.trim() !== "" && value !== "error") {
      return value.slice(0, 100);
    }
  }
  return undefined;
}

function apiErrorText(e: { error?: unknown; message?: string }): string {
  const body = e.error as { error?: { type?: string; message?: string }; message?: string } | null;
  const inner = body?.error ?? body;
  const type = (inner as { type?: string } | undefined)?.type;
  const message = (inner as { message?: string } | undefined)?.message;
  if (type || message) return ` ${[type, message].filter(Boolean).join(": ")}`;
  const text = e.message?.replace(/^\d{3}\s*/, "").trim();
  return text ? ` ${text}` : "";
}

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
 * import { describeErrorBody } from "./retry.ts";
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
  if (/^<(!doctype|html|head|body|\?xml)/i.test(trimmed) || /<\/[a-z]+>/i.test(trimmed)) {
    // `[^<>]*`, not `[^>]*`: a body of many `<` without `>` must not make these scans quadratic.
    const title = /<title[^<>]*>([^<]*)<\/title>/i.exec(trimmed)?.[1];
    const textOnly = (title && title.trim() !== "" ? title : trimmed).replace(/<[^<>]*>/g, " ");
    return clip(`${textOnly} (an HTML page)`, ERROR_BODY_MESSAGE_MAX);
  }
  return clip(trimmed, ERROR_BODY_MESSAGE_MAX);
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

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Reported once per retry, before the backoff wait. */
export interface RetryInfo {
  /** The backend name (`anthropic`, `openai`, `claude-code`). */
  backend: string;
  /** The attempt that failed (1-based). */
  attempt: number;
  /** Total attempts allowed. */
  maxAttempts: number;
  /** The wait before the next attempt, in ms. */
  delayMs: number;
  /** HTTP status of the failure, when the server answered. */
  status?: number;
  /** Why the attempt failed, in words. */
  reason: string;
  /** The error of the failed attempt. */
  error: unknown;
  /** The step being executed (from the request), when known. */
  stepId?: string;
  /** The run iteration (from the request), when known. */
  iteration?: number;
  /**
   * Set when the wait is the server's (its `Retry-After` or rate-limit reset): when the next
   * attempt may be made (ISO time). A run shows it as a rate-limit wait.
   */
  waitUntil?: string;
  /**
   * True when the call does not wait in place: it ends with {@linkcode RateLimitYield} so that the
   * run's driver continues it at `waitUntil` (see {@linkcode WithRetryOptions.yieldWaitsFromMs}).
   */
  yielded?: boolean;
}

/** Receives every retry; see {@linkcode RetryInfo}. A throwing listener is ignored. */
export type RetryListener = (info: RetryInfo) => void;

/** Options of {@linkcode withRetry}. */
export interface WithRetryOptions {
  /** Backend name for reports. */
  backend: string;
  /** The policy (see {@linkcode resolveRetryPolicy}). */
  policy: RetryPolicy;
  /** Classifies a failure (default {@linkcode classifyHttpFailure}). */
  classify?: (error: unknown) => FailureClass;
  /** Cancels the call; never retried. */
  signal?: AbortSignal;
  /** Per-attempt timeout in ms (0 or absent: none). */
  timeoutMs?: number;
  /** Whether a timed-out attempt is retried (default true). */
  retryTimeouts?: boolean;
  /** Retry listeners (the backend's and the call's). */
  onRetry?: (RetryListener | undefined)[];
  /** Request context copied into {@linkcode RetryInfo}. */
  context?: { stepId?: string; iteration?: number };
  /** Uniform random source for the jitter (tests). */
  random?: () => number;
  /**
   * A wait the server asked for that is at least this long (ms) is not slept: the call ends with
   * {@linkcode RateLimitYield} (after its report) so that the caller can give its slot back and
   * continue at the reset time. Unset: every wait within the bound is slept.
   */
  yieldWaitsFromMs?: number;
}

/** The final failure of {@linkcode withRetry}: the last error and how it was classified. */
export class RetryExhausted extends Error {
  /** The last attempt's error. */
  readonly lastError: unknown;
  /** Its classification. */
  readonly failure: FailureClass;
  /** Attempts made. */
  readonly attempts: number;
  /** Why no further attempt was made. */
  readonly stopReason: "not_retryable" | "attempts_exhausted" | "wait_too_long";

  /**
   * Creates the failure report.
   *
   * @param lastError the last attempt's error
   * @param failure its classification
   * @param attempts attempts made
   * @param stopReason why the retries stopped
   */
  constructor(
    lastError: unknown,
    failure: FailureClass,
    attempts: number,
    stopReason: RetryExhausted["stopReason"],
  ) {
    super(failure.reason, { cause: lastError });
    this.name = "RetryExhausted";
    this.lastError = lastError;
    this.failure = failure;
    this.attempts = attempts;
    this.stopReason = stopReason;
  }
}

/**
 * Not a failure: a call that stops because the server asked it to wait until `until`, and its
 * caller asked for such waits to be given back rather than slept
 * ({@linkcode WithRetryOptions.yieldWaitsFromMs}; a worker's runs). The run stops where a taken-over
 * run would, and its driver continues it at `until`.
 *
 * @example
 * ```ts
 * import { RateLimitYield } from "./retry.ts";
 * const y = new RateLimitYield({ backend: "openai", attempt: 1, maxAttempts: 3, delayMs: 30_000,
 *   reason: "HTTP 429", error: undefined, waitUntil: "2026-03-01T12:03:10.000Z" });
 * console.log(y.code, y.until); // RATE_LIMIT_YIELD 2026-03-01T12:03:10.000Z
 * ```
 */
export class RateLimitYield extends StepflowError {
  /** When the call may be made again (ISO time). */
  readonly until: string;
  /** The report of the refused attempt. */
  readonly retry: RetryInfo;

  /**
   * Creates the notice.
   *
   * @param retry the report of the refused attempt (its `waitUntil` is the time to continue)
   */
  constructor(retry: RetryInfo) {
    const until = retry.waitUntil ?? new Date(Date.now() + retry.delayMs).toISOString();
    super(
      "RATE_LIMIT_YIELD",
      `${retry.backend} backend${
        retry.stepId ? ` in step "${retry.stepId}"` : ""
      }: the server asked to wait until ${until} (${retry.reason}); the run gives its slot back and continues then.`,
      {
        cause: retry.error,
        details: {
          backend: retry.backend,
          until,
          delayMs: retry.delayMs,
          ...(retry.stepId !== undefined ? { stepId: retry.stepId } : {}),
        },
      },
    );
    this.until = until;
    this.retry = retry;
  }
}

/** The rejection used when the caller's signal aborts: its reason, or a DOMException `AbortError`. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/**
 * Runs `attempt` until it succeeds, a failure is not retryable, or the attempts run out.
 *
 * Each attempt gets its own `AbortSignal` that fires on the caller's signal or on the per-attempt
 * timeout. A caller abort rejects at once with the signal's reason (never retried, no report).
 * Otherwise the final failure rejects with {@linkcode RetryExhausted}, for the backend to turn into
 * a user-facing error.
 *
 * The wait before a retry is the one the server asked for (its `Retry-After`, or on a 429 the
 * reset of its rate limit) when it named one within `maxRateLimitWaitMs`, else the jittered
 * backoff. Every retry is reported to the listeners first; a server-asked wait carries its end
 * (`waitUntil`), and with `yieldWaitsFromMs` a long one ends the call with
 * {@linkcode RateLimitYield} instead of being slept.
 *
 * @example
 * ```ts
 * import { resolveRetryPolicy, withRetry } from "./retry.ts";
 * let calls = 0;
 * const value = await withRetry(async () => {
 *   if (++calls < 2) throw Object.assign(new Error("busy"), { status: 503 });
 *   return "ok";
 * }, { backend: "demo", policy: resolveRetryPolicy({ initialDelayMs: 1 }) });
 * console.log(value, calls); // ok 2
 * ```
 */
export async function withRetry<T>(
  attempt: (signal: AbortSignal, attemptNumber: number) => Promise<T>,
  options: WithRetryOptions,
): Promise<T> {
  const { policy, signal } = options;
  const classify = options.classify ?? classifyHttpFailure;
  for (let n = 1;; n++) {
    if (signal?.aborted) throw abortReason(signal);
    const controller = new AbortController();
    let timedOut = false;
    const onAbort = () => controller.abort(abortReason(signal!));
    signal?.addEventListener("abort", onAbort, { once: true });
    const timer = options.timeoutMs && options.timeoutMs > 0
      ? setTimeout(() => {
        timedOut = true;
        controller.abort(
          new DOMException(`timed out after ${options.timeoutMs} ms`, "TimeoutError"),
        );
      }, options.timeoutMs)
      : undefined;
    let failure: FailureClass;
    let error: unknown;
    try {
      return await attempt(controller.signal, n);
    } catch (caught) {
      if (signal?.aborted) throw abortReason(signal);
      error = caught;
      failure = timedOut
        ? {
          retryable: options.retryTimeouts ?? true,
          kind: "timeout",
          reason: `no answer within the per-call timeout of ${options.timeoutMs} ms`,
        }
        : classify(caught);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
    if (!failure.retryable) throw new RetryExhausted(error, failure, n, "not_retryable");
    if (n >= policy.maxAttempts) throw new RetryExhausted(error, failure, n, "attempts_exhausted");
    const serverWait = failure.retryAfterMs;
    if (serverWait !== undefined && serverWait > policy.maxRateLimitWaitMs) {
      throw new RetryExhausted(error, failure, n, "wait_too_long");
    }
    const delayMs = serverWait ?? jitteredBackoff(n, policy, options.random);
    const yields = serverWait !== undefined && options.yieldWaitsFromMs !== undefined &&
      delayMs >= options.yieldWaitsFromMs;
    const info: RetryInfo = {
      backend: options.backend,
      attempt: n,
      maxAttempts: policy.maxAttempts,
      delayMs,
      reason: failure.reason,
      error,
      ...(failure.status !== undefined ? { status: failure.status } : {}),
      ...(options.context?.stepId !== undefined ? { stepId: options.context.stepId } : {}),
      ...(options.context?.iteration !== undefined ? { iteration: options.context.iteration } : {}),
      ...(serverWait !== undefined
        ? { waitUntil: new Date(Date.now() + delayMs).toISOString() }
        : {}),
      ...(yields ? { yielded: true } : {}),
    };
    for (const listener of options.onRetry ?? []) {
      try {
        listener?.(info);
      } catch {
        // A listener must never change the outcome of the call.
      }
    }
    if (yields) throw new RateLimitYield(info);
    await sleep(delayMs, signal);
  }
}
