/**
 * A store URL as stepflow shows it: the password of `postgres://user:secret@host/db` hidden. A leaf
 * at the bottom layer, so that the printed commands (`src/invocation.ts`) and the stores share it.
 *
 * @module
 */

/**
 * `postgres://user:secret@host/db` → `postgres://user:***@host/db`; a URL without a password, or
 * text that is not a URL, comes back unchanged (a malformed one still loses what looks like one).
 *
 * @example
 * ```ts
 * import { redactUrl } from "./redact_url.ts";
 * redactUrl("postgres://me:secret@db:5432/runs"); // "postgres://me:***@db:5432/runs"
 * ```
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, "//$1:***@");
  }
}
