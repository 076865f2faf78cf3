/**
 * The one `onError` grammar of the engines. A step says what happens when it fails: `fail` (the
 * default), `continue`, `retry=N`, `jump=<stepId>` or `recover` (ask the model), as text or as an
 * object (`{ retry: N, backoffMs? }`, `{ jump: id }`, `{ recover: N }`). Each engine accepts a
 * subset, written here as data ({@linkcode OnErrorDialect}): step flows
 * ({@linkcode FLOW_ON_ERROR}), tool plans ({@linkcode PLAN_ON_ERROR}) and QPlan scripts
 * ({@linkcode QPLAN_ON_ERROR}). The engines keep their own error messages; this file only says
 * what a value means.
 *
 * A leaf file: the agent-definition loader (below the engines) parses `onError` at load time.
 *
 * @module
 */

/** A parsed `onError`: what happens when a step fails. */
export type OnErrorPolicy =
  | { kind: "fail" }
  | { kind: "continue" }
  | { kind: "retry"; count: number; backoffMs?: number }
  | { kind: "jump"; target: string }
  | { kind: "recover"; maxAttempts?: number };

/** One way of writing `onError`: a text form or an object form. */
export type OnErrorForm =
  | "fail"
  | "continue"
  | "retry=N"
  | "jump=<id>"
  | "recover"
  | "{ retry }"
  | "{ retry, backoffMs? }"
  | "{ jump }"
  | "{ recover }";

/** The `onError` an engine accepts. */
export interface OnErrorDialect {
  /** The accepted forms; the text forms in this order make {@linkcode onErrorTextPattern}. */
  readonly forms: readonly OnErrorForm[];
  /**
   * Script syntax (QPlan): the value is trimmed, keywords match in any case, spaces may surround
   * `=`, the retry count may be quoted and a jump target is trimmed.
   */
  readonly relaxed: boolean;
}

/** Step flows (steps_registry.json): `fail`, `continue`, `retry=N`, `jump=<id>`, `{ retry }`, `{ jump }`. */
export const FLOW_ON_ERROR: OnErrorDialect = Object.freeze({
  forms: Object.freeze(
    ["fail", "continue", "retry=N", "jump=<id>", "{ retry }", "{ jump }"] as const,
  ),
  relaxed: false,
});

/**
 * What a fan-out step does when one of its children fails (`onItemError`): `fail`, `continue`,
 * `retry=N`, `{ retry }` — a step flow's `onError` without the jump (an item has nowhere to go).
 */
export const ITEM_ON_ERROR: OnErrorDialect = Object.freeze({
  forms: Object.freeze(["fail", "continue", "retry=N", "{ retry }"] as const),
  relaxed: false,
});

/** Tool plans: `fail`, `continue`, `recover`, `retry=N`, `{ retry, backoffMs? }`, `{ recover }`. */
export const PLAN_ON_ERROR: OnErrorDialect = Object.freeze({
  forms: Object.freeze(
    ["fail", "continue", "recover", "retry=N", "{ retry, backoffMs? }", "{ recover }"] as const,
  ),
  relaxed: false,
});

/** QPlan `step … onError="…"`: `fail`, `continue`, `retry=N`, `jump=<id>`, in the relaxed syntax. */
export const QPLAN_ON_ERROR: OnErrorDialect = Object.freeze({
  forms: Object.freeze(["fail", "continue", "retry=N", "jump=<id>"] as const),
  relaxed: true,
});

/** The regular-expression source of each text form as written in files (strict syntax). */
const TEXT_SOURCE: Partial<Record<OnErrorForm, string>> = {
  "fail": "fail",
  "continue": "continue",
  "recover": "recover",
  "retry=N": "retry=\\d+",
  "jump=<id>": `jump=("[^"]+"|'[^']+'|[^"'\\s]+)`,
};

const RELAXED_RETRY = /^retry\s*=\s*["']?(\d+)["']?$/i;
const RELAXED_JUMP = /^jump\s*=\s*(?:"([^"]*)"|'([^']*)'|([^"'\s]+))$/i;
const STRICT_JUMP = /^jump=(?:"([^"]+)"|'([^']+)'|([^"'\s]+))$/;

/**
 * The pattern a text `onError` of `dialect` matches in strict syntax, for the zod schemas (and the
 * JSON Schemas generated from them).
 *
 * @example
 * ```ts
 * import { onErrorTextPattern, PLAN_ON_ERROR } from "./on_error.ts";
 * onErrorTextPattern(PLAN_ON_ERROR).source; // "^(fail|continue|recover|retry=\\d+)$"
 * ```
 */
export function onErrorTextPattern(dialect: OnErrorDialect): RegExp {
  const sources = dialect.forms.flatMap((form) => TEXT_SOURCE[form] ?? []);
  return new RegExp(`^(${sources.join("|")})$`);
}

/**
 * Parses an `onError` value of `dialect`: absent means `fail`; `undefined` for anything the
 * dialect does not accept (the engine's schema or validator says why, in its own words).
 *
 * @example
 * ```ts
 * import { FLOW_ON_ERROR, parseOnErrorPolicy, PLAN_ON_ERROR, QPLAN_ON_ERROR } from "./on_error.ts";
 * parseOnErrorPolicy('jump="cleanup"', FLOW_ON_ERROR); // { kind: "jump", target: "cleanup" }
 * parseOnErrorPolicy({ recover: 2 }, PLAN_ON_ERROR); // { kind: "recover", maxAttempts: 2 }
 * parseOnErrorPolicy(" Retry = '3' ", QPLAN_ON_ERROR); // { kind: "retry", count: 3 }
 * parseOnErrorPolicy("recover", FLOW_ON_ERROR); // undefined
 * ```
 */
export function parseOnErrorPolicy(
  value: unknown,
  dialect: OnErrorDialect,
): OnErrorPolicy | undefined {
  if (value === undefined) return { kind: "fail" };
  const accepts = (form: OnErrorForm) => dialect.forms.includes(form);
  if (typeof value === "string") return parseText(value, dialect.relaxed, accepts);
  if (value === null || typeof value !== "object") return undefined;
  const record = value as Record<string, unknown>;
  if ("retry" in record && typeof record.retry === "number") {
    if (accepts("{ retry, backoffMs? }")) {
      const policy: OnErrorPolicy = { kind: "retry", count: record.retry };
      if (typeof record.backoffMs === "number") policy.backoffMs = record.backoffMs;
      return policy;
    }
    return accepts("{ retry }") ? { kind: "retry", count: record.retry } : undefined;
  }
  if ("jump" in record && typeof record.jump === "string" && accepts("{ jump }")) {
    return { kind: "jump", target: record.jump };
  }
  if ("recover" in record && typeof record.recover === "number" && accepts("{ recover }")) {
    return { kind: "recover", maxAttempts: record.recover };
  }
  return undefined;
}

function parseText(
  raw: string,
  relaxed: boolean,
  accepts: (form: OnErrorForm) => boolean,
): OnErrorPolicy | undefined {
  const value = relaxed ? raw.trim() : raw;
  const keyword = relaxed ? value.toLowerCase() : value;
  if (keyword === "fail" && accepts("fail")) return { kind: "fail" };
  if (keyword === "continue" && accepts("continue")) return { kind: "continue" };
  if (keyword === "recover" && accepts("recover")) return { kind: "recover" };
  if (accepts("retry=N")) {
    const retry = relaxed ? RELAXED_RETRY.exec(value) : /^retry=(\d+)$/.exec(value);
    if (retry) return { kind: "retry", count: Number(retry[1]) };
  }
  if (accepts("jump=<id>")) {
    const jump = (relaxed ? RELAXED_JUMP : STRICT_JUMP).exec(value);
    if (jump) {
      const written = jump[1] ?? jump[2] ?? jump[3];
      const target = relaxed ? written.trim() : written;
      return target ? { kind: "jump", target } : undefined;
    }
  }
  return undefined;
}
