/**
 * Which failures move a model chain on to its next entry — the one rule, a pure function of the
 * error a backend call ended with (the table in docs/backends.md, "Model fallback chains"). Only
 * failures that another model may not have: a rate limit or an overload the retry policy could not
 * wait out, a server error that stayed through the retries, a prompt longer than the model's
 * context. Never an answer that is wrong (bad JSON, a schema miss), a refused key, a model that
 * refused, a server that cannot be reached, or a cancelled call.
 *
 * @module
 */
import type { FallbackReason } from "../events/types.ts";
import { BackendError } from "./backend_error.ts";

/**
 * What servers say when a prompt does not fit the model's context: the Anthropic API ("prompt is
 * too long: 210000 tokens > 200000 maximum", "input length and `max_tokens` exceed context limit"),
 * OpenAI and vLLM ("This model's maximum context length is 8192 tokens"), llama.cpp ("the request
 * exceeds the available context size"), LiteLLM (`ContextWindowExceededError`).
 */
const CONTEXT_LENGTH_TEXT =
  /context[ _-]?(length|window|size|limit)|maximum context|prompt is too long|exceeds? (the )?(available )?context|input tokens exceed|too many input tokens/i;

/** API error names that mean the prompt does not fit (OpenAI's `code`, llama.cpp's `type`). */
const CONTEXT_LENGTH_TYPES = /context_length|context_window|exceed_context|prompt_too_long/i;

/** Error types of a stream's `error` event, by the class they belong to. */
const STREAM_TYPES: readonly [RegExp, FallbackReason][] = [
  [/rate_limit/i, "rate_limit"],
  [/overloaded/i, "overload"],
  [/^(api_error|server_error|internal_server_error|internal_error)$/i, "server_error"],
];

/**
 * The documented failure class of `error` that lets a model chain fall through to its next entry,
 * or `undefined` when the chain must stop there (see the module documentation):
 *
 * | the call ended with | class |
 * | --- | --- |
 * | `BACKEND_UNAVAILABLE`, HTTP 429 (the retry policy's attempts, or a reset beyond `maxRateLimitWaitMs`) | `rate_limit` |
 * | `BACKEND_UNAVAILABLE`, HTTP 529 or 503, or an `overloaded_error` | `overload` |
 * | `BACKEND_UNAVAILABLE`, another 5xx | `server_error` |
 * | `BACKEND_STREAM_INTERRUPTED` by a `rate_limit_error` / `overloaded_error` / `api_error` event | `rate_limit` / `overload` / `server_error` |
 * | `BACKEND_HTTP_ERROR` (400, 413, 422) or a stream `error` event saying the prompt exceeds the context | `context_length` |
 * | anything else | none |
 *
 * @example
 * ```ts
 * import { BackendError } from "./backend_error.ts";
 * import { fallbackReason } from "./fallback_class.ts";
 * fallbackReason(new BackendError("BACKEND_UNAVAILABLE", "…", { backend: "openai", status: 429 }));
 * // "rate_limit"
 * fallbackReason(new BackendError("BACKEND_AUTH", "…", { backend: "openai", status: 401 }));
 * // undefined
 * ```
 */
export function fallbackReason(error: unknown): FallbackReason | undefined {
  if (!(error instanceof BackendError)) return undefined;
  const { status, errorType } = error.details;
  switch (error.code) {
    case "BACKEND_UNAVAILABLE":
      if (status === 429 || /rate_limit/i.test(errorType ?? "")) return "rate_limit";
      if (status === 529 || status === 503 || /overloaded/i.test(errorType ?? "")) {
        return "overload";
      }
      return status !== undefined && status >= 500 ? "server_error" : undefined;
    case "BACKEND_STREAM_INTERRUPTED": {
      if (errorType === undefined) return undefined;
      if (CONTEXT_LENGTH_TYPES.test(errorType)) return "context_length";
      return STREAM_TYPES.find(([pattern]) => pattern.test(errorType))?.[1];
    }
    case "BACKEND_HTTP_ERROR":
      if (status !== 400 && status !== 413 && status !== 422) return undefined;
      return CONTEXT_LENGTH_TYPES.test(errorType ?? "") || CONTEXT_LENGTH_TEXT.test(error.message)
        ? "context_length"
        : undefined;
    default:
      return undefined;
  }
}
