/**
 * The dashboard's responses: the security headers every one of them carries (a strict
 * Content-Security-Policy, no sniffing, no referrer, no framing) and the helpers that build a page,
 * an asset, JSON or plain text with them.
 *
 * @module
 */
import type { Html } from "./html.ts";

/** The Content-Security-Policy of every response: only the app's own script and styles. */
export const CONTENT_SECURITY_POLICY: string = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The headers every response carries: the CSP, no sniffing, no referrer, no framing. */
export function securityHeaders(): Record<string, string> {
  return {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-resource-policy": "same-origin",
  };
}

/** An HTML page (never cached). */
export function page(status: number, body: string | Html): Response {
  return new Response(String(body), {
    status,
    headers: {
      ...securityHeaders(),
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
    },
  });
}

/** One of the app's own assets (revalidated on every load). */
export function asset(body: string, type: string): Response {
  return new Response(body, {
    headers: { ...securityHeaders(), "content-type": type, "cache-control": "no-cache" },
  });
}

/** A JSON answer. */
export function jsonResponse(value: unknown): Response {
  return new Response(JSON.stringify(value), {
    headers: { ...securityHeaders(), "content-type": "application/json; charset=utf-8" },
  });
}

/** A plain-text answer (errors and refusals say what was wrong in it). */
export function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { ...securityHeaders(), "content-type": "text/plain; charset=utf-8", ...headers },
  });
}
