/**
 * The redaction rule of replay files: the values of the environment's credentials never land in a
 * recording. A variable is a credential when its name contains `KEY`, `TOKEN`, `SECRET`,
 * `PASSWORD`, `PASSWD`, `CREDENTIAL` or `AUTH` (any case); its value, when at least
 * {@linkcode MIN_SECRET_LENGTH} characters long, is replaced by `[redacted:NAME]` wherever it
 * appears. The password of a URL held by any variable (`postgres://user:pw@host/db`) is a
 * credential too, under the variable's name.
 *
 * @module
 */

/** Shorter values are not redacted: they would match ordinary words of prompts and answers. */
export const MIN_SECRET_LENGTH = 8;

const CREDENTIAL_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i;

/** One secret value and the variable that holds it. */
export interface Secret {
  /** The variable's name. */
  name: string;
  /** Its value (or the password of the URL it holds). */
  value: string;
}

/**
 * The secrets of `env` under the redaction rule, longest first (so a secret that contains another
 * is replaced whole).
 *
 * @example
 * ```ts
 * import { credentialSecrets } from "./redact.ts";
 * credentialSecrets({ OPENAI_API_KEY: "sk-abcdefgh123", HOME: "/home/me" });
 * // [{ name: "OPENAI_API_KEY", value: "sk-abcdefgh123" }]
 * ```
 */
export function credentialSecrets(env: Record<string, string | undefined>): Secret[] {
  const secrets: Secret[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (typeof value !== "string") continue;
    if (CREDENTIAL_NAME.test(name) && value.length >= MIN_SECRET_LENGTH) {
      secrets.push({ name, value });
    }
    const password = urlPassword(value);
    if (password !== undefined && password.length >= MIN_SECRET_LENGTH) {
      secrets.push({ name, value: password });
    }
  }
  return secrets.sort((a, b) => b.value.length - a.value.length);
}

/**
 * `text` with every secret replaced by `[redacted:NAME]`.
 *
 * @example
 * ```ts
 * import { redactText } from "./redact.ts";
 * redactText("key sk-abcdefgh123", [{ name: "OPENAI_API_KEY", value: "sk-abcdefgh123" }]);
 * // "key [redacted:OPENAI_API_KEY]"
 * ```
 */
export function redactText(text: string, secrets: readonly Secret[]): string {
  let out = text;
  for (const { name, value } of secrets) {
    if (out.includes(value)) out = out.split(value).join(`[redacted:${name}]`);
  }
  return out;
}

/** `value` with every string in it (keys included) redacted; the input is not changed. */
export function redactDeep(value: unknown, secrets: readonly Secret[]): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === "string") return redactText(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, secrets));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      Object.defineProperty(out, redactText(k, secrets), {
        value: redactDeep(v, secrets),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

function urlPassword(value: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\s]*:[^/\s]*@/i.test(value)) return undefined;
  try {
    const password = decodeURIComponent(new URL(value).password);
    return password === "" ? undefined : password;
  } catch {
    return undefined;
  }
}
