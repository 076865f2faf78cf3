/**
 * When the server says the next attempt may be made: its `Retry-After` (`retry-after-ms`,
 * `retry-after` in seconds or as an HTTP date), and on a 429 its rate-limit reset headers — the
 * Anthropic API's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset` (RFC 3339
 * times) and the OpenAI API's `x-ratelimit-reset-{requests,tokens}` (durations such as `1s`,
 * `6m0s`, `20ms`). Pure functions of the headers and the clock.
 *
 * @module
 */

/** Headers as the SDKs expose them: a `Headers` object or a plain record. */
export type HeadersLike = Headers | Record<string, string | string[] | null | undefined>;

/** The value of header `name` (lower case), whatever the shape of `headers`. */
export function headerValue(headers: HeadersLike | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | null | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value ?? undefined;
}

/**
 * Reads how long the server asks the client to wait, in ms: `retry-after-ms` (milliseconds, sent
 * by the OpenAI and Anthropic APIs), else `Retry-After` as seconds or as an HTTP date.
 * Returns `undefined` when neither header is present or parseable.
 *
 * @example
 * ```ts
 * import { parseRetryAfter } from "./rate_limit_reset.ts";
 * parseRetryAfter(new Headers({ "retry-after": "2" })); // 2000
 * ```
 */
export function parseRetryAfter(
  headers: HeadersLike | undefined,
  now: number = Date.now(),
): number | undefined {
  const ms = headerValue(headers, "retry-after-ms");
  if (ms !== undefined && ms.trim() !== "") {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const raw = headerValue(headers, "retry-after")?.trim();
  if (raw === undefined || raw === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw) * 1000;
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** The limits whose reset the Anthropic API reports (`anthropic-ratelimit-<limit>-reset`). */
const ANTHROPIC_LIMITS = ["requests", "tokens", "input-tokens", "output-tokens"] as const;
/** The limits whose reset the OpenAI API reports (`x-ratelimit-reset-<limit>`). */
const OPENAI_LIMITS = ["requests", "tokens"] as const;

/**
 * A duration as the OpenAI API writes its resets (`6m0s`, `1s`, `20ms`, `1h2m3.5s`), or plain
 * seconds (`"30"`), in ms; undefined for anything else.
 *
 * @example
 * ```ts
 * import { parseResetDuration } from "./rate_limit_reset.ts";
 * parseResetDuration("6m0s"); // 360000
 * parseResetDuration("20ms"); // 20
 * ```
 */
export function parseResetDuration(raw: string): number | undefined {
  const text = raw.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  if (text === "" || text.length > 64 || !/^(\d+(\.\d+)?(h|ms|m|s))+$/.test(text)) return undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  let total = 0;
  for (const [, value, , name] of text.matchAll(/(\d+(\.\d+)?)(h|ms|m|s)/g)) {
    total += Number(value) * unit[name];
  }
  return Math.round(total);
}

/**
 * How long until the rate limit a 429 hit resets, in ms, from the reset headers alone (see the
 * module documentation). Among the limits the headers name, those whose `remaining` is `0` are
 * the ones hit; the latest of their resets is the wait (when no limit says it is spent, the
 * latest reset of all: an attempt sent earlier would be refused again). Undefined when no reset
 * header is present or parseable.
 *
 * @example
 * ```ts
 * import { parseRateLimitReset } from "./rate_limit_reset.ts";
 * parseRateLimitReset(new Headers({
 *   "x-ratelimit-remaining-requests": "12", "x-ratelimit-reset-requests": "1s",
 *   "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "6m0s",
 * })); // 360000
 * ```
 */
export function parseRateLimitReset(
  headers: HeadersLike | undefined,
  now: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const resets: { ms: number; spent: boolean }[] = [];
  for (const limit of ANTHROPIC_LIMITS) {
    const raw = headerValue(headers, `anthropic-ratelimit-${limit}-reset`)?.trim();
    if (!raw) continue;
    const at = Date.parse(raw);
    if (Number.isNaN(at)) continue;
    const remaining = headerValue(headers, `anthropic-ratelimit-${limit}-remaining`);
    resets.push({ ms: Math.max(0, at - now), spent: remaining?.trim() === "0" });
  }
  for (const limit of OPENAI_LIMITS) {
    const raw = headerValue(headers, `x-ratelimit-reset-${limit}`);
    const ms = raw === undefined ? undefined : parseResetDuration(raw);
    if (ms === undefined) continue;
    const remaining = headerValue(headers, `x-ratelimit-remaining-${limit}`);
    resets.push({ ms, spent: remaining?.trim() === "0" });
  }
  if (resets.length === 0) return undefined;
  const spent = resets.filter((r) => r.spent);
  return Math.max(...(spent.length > 0 ? spent : resets).map((r) => r.ms));
}

/**
 * How long the server asks to wait before the next attempt, in ms: its `Retry-After` when it
 * sent one, else — on a 429 only (the reset headers come with every answer, and say nothing about
 * an overloaded server) — the rate-limit reset ({@linkcode parseRateLimitReset}).
 *
 * @example
 * ```ts
 * import { serverWaitMs } from "./rate_limit_reset.ts";
 * const now = Date.parse("2026-03-01T12:00:00Z");
 * serverWaitMs(429, new Headers({ "anthropic-ratelimit-tokens-reset": "2026-03-01T12:00:30Z" }), now);
 * // 30000
 * ```
 */
export function serverWaitMs(
  status: number | undefined,
  headers: HeadersLike | undefined,
  now: number = Date.now(),
): number | undefined {
  const retryAfter = parseRetryAfter(headers, now);
  if (retryAfter !== undefined || status !== 429) return retryAfter;
  return parseRateLimitReset(headers, now);
}
