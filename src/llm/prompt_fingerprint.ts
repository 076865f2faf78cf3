import { createHash } from "node:crypto";
import { redactText, type Secret } from "./redact.ts";

/**
 * The fingerprint of a prompt as sent: `sha256:` and the hex SHA-256 of the system prompt (empty
 * when none), a NUL character, and the prompt — both redacted first (see `redact.ts`), so a
 * recording holds no hash of a credential and a replay in another environment computes the same
 * value.
 *
 * @example
 * ```ts
 * import { promptFingerprint } from "./prompt_fingerprint.ts";
 * promptFingerprint(undefined, "Hello").startsWith("sha256:"); // true
 * ```
 */
export function promptFingerprint(
  systemPrompt: string | undefined,
  prompt: string,
  secrets: readonly Secret[] = [],
): string {
  const text = `${redactText(systemPrompt ?? "", secrets)}\u0000${redactText(prompt, secrets)}`;
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
}
