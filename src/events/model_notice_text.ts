/**
 * The words of a model chain's fall-through and of a rate-limit wait, the same in the progress
 * lines, the live view, the worker's log and error messages.
 *
 * @module
 */
import type { FallbackReason, ModelFallbackEvent, ModelRef, RateLimitWaitEvent } from "./types.ts";

/**
 * `anthropic claude-sonnet-5-5`, `openai gpt-5.4 at http://127.0.0.1:8000/v1`: a model of a chain
 * in words.
 *
 * @example
 * ```ts
 * import { modelRefText } from "./model_notice_text.ts";
 * modelRefText({ backend: "openai", model: "gpt-5.4" }); // "openai gpt-5.4"
 * ```
 */
export function modelRefText(ref: ModelRef): string {
  return `${ref.backend}${ref.model !== undefined ? ` ${ref.model}` : ""}${
    ref.baseUrl !== undefined ? ` at ${ref.baseUrl}` : ""
  }`;
}

/** `rate limit`, `overload`, `server error`, `context length`: a fallback's reason in words. */
export function fallbackReasonText(reason: FallbackReason): string {
  return reason.replace("_", " ");
}

/**
 * `fell back from anthropic claude-sonnet-5-5 to openai gpt-5.4 (rate limit: …)`.
 *
 * @example
 * ```ts
 * import { fallbackText } from "./model_notice_text.ts";
 * fallbackText({
 *   from: { backend: "anthropic", model: "a" }, to: { backend: "openai", model: "b" },
 *   reason: "overload", detail: "HTTP 529",
 * }); // "fell back from anthropic a to openai b (overload: HTTP 529)"
 * ```
 */
export function fallbackText(fallback: ModelFallbackEvent): string {
  return `fell back from ${modelRefText(fallback.from)} to ${modelRefText(fallback.to)} (${
    fallbackReasonText(fallback.reason)
  }: ${fallback.detail})`;
}

/**
 * `12:03:10`: the local time of day of `at` (an ISO time or a `Date`), as a wait's end is shown;
 * the text as given when it is not a time.
 */
export function clockTime(at: string | Date): string {
  const date = typeof at === "string" ? new Date(at) : at;
  if (Number.isNaN(date.getTime())) return String(at);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/**
 * `waiting for the rate limit until 12:03:10` (a 429), `waiting for the server until 12:03:10`
 * (another status whose answer named a time): what a wait is called on screen.
 *
 * @example
 * ```ts
 * import { rateLimitWaitText } from "./model_notice_text.ts";
 * const until = new Date(2026, 2, 1, 12, 3, 10).toISOString();
 * rateLimitWaitText({ until, status: 429 }); // "waiting for the rate limit until 12:03:10"
 * ```
 */
export function rateLimitWaitText(wait: Pick<RateLimitWaitEvent, "until" | "status">): string {
  const what = wait.status === undefined || wait.status === 429 ? "the rate limit" : "the server";
  return `waiting for ${what} until ${clockTime(wait.until)}`;
}
