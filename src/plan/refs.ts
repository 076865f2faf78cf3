/**
 * `$step` references inside step arguments (docs/tool-plans.md, "Plan format"):
 *
 * - a whole string `"$step_1"` is replaced by step_1's result, `"$step_1.a.b[0]"` by a part of it
 *   (any type);
 * - inside longer text, `"${step_1.a}"` is replaced by that value as text (JSON for non-strings);
 * - a string starting with `$$` is a literal starting with `$` (`"$$HOME"` → `"$HOME"`), and `$${` in
 *   text is a literal `${`.
 *
 * References are found anywhere inside the arguments: nested objects and arrays included.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";

/** A parsed reference. */
export interface StepRef {
  /** The referenced step. */
  stepId: string;
  /** Keys and indexes into its result. */
  path: (string | number)[];
  /** The reference as written, e.g. `$step_1.a[0]`. */
  text: string;
}

/** A reference found in arguments, with where it sits. */
export interface FoundRef {
  /** The reference. */
  ref: StepRef;
  /** Path of the string holding it, inside the arguments. */
  argPath: (string | number)[];
  /** True when the whole string is the reference (its value keeps its type). */
  whole: boolean;
}

const ID = "[A-Za-z_][A-Za-z0-9_-]*";
const PATH = "(?:\\.[A-Za-z0-9_-]+|\\[\\d+\\])*";
const WHOLE = new RegExp(`^\\$(${ID})(${PATH})$`);
const TEMPLATE = new RegExp(`\\$\\$\\{|\\$\\{(${ID})(${PATH})\\}`, "g");
const SEGMENT = /\.([A-Za-z0-9_-]+)|\[(\d+)\]/g;

/**
 * Parses a whole-string reference like `$step_1.a.b[0]`; undefined when `text` is not one.
 *
 * @example
 * ```ts
 * import { parseRef } from "./refs.ts";
 * parseRef("$step_1.a.b[0]"); // { stepId: "step_1", path: ["a", "b", 0], text: "$step_1.a.b[0]" }
 * parseRef("$$literal"); // undefined
 * ```
 */
export function parseRef(text: string): StepRef | undefined {
  const m = WHOLE.exec(text);
  return m ? { stepId: m[1], path: parsePath(m[2]), text } : undefined;
}

/** Every reference inside `args`, in document order. */
export function collectRefs(args: unknown): FoundRef[] {
  const out: FoundRef[] = [];
  walk(args, [], out);
  return out;
}

function walk(value: unknown, at: (string | number)[], out: FoundRef[]): void {
  if (typeof value === "string") {
    if (!value.includes("$")) return;
    const escaped = value.startsWith("$$");
    const whole = escaped ? undefined : parseRef(value);
    if (whole) {
      out.push({ ref: whole, argPath: at, whole: true });
      return;
    }
    for (const m of (escaped ? value.slice(2) : value).matchAll(TEMPLATE)) {
      if (m[1] === undefined) continue;
      out.push({
        ref: { stepId: m[1], path: parsePath(m[2]), text: m[0] },
        argPath: at,
        whole: false,
      });
    }
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, [...at, i], out));
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) walk(v, [...at, k], out);
  }
}

/** True when some string inside `value` contains `$` (cheap pre-check before resolving). */
export function mayHaveRefs(value: unknown): boolean {
  if (typeof value === "string") return value.includes("$");
  if (Array.isArray(value)) return value.some(mayHaveRefs);
  if (value !== null && typeof value === "object") {
    for (const k in value) {
      if (mayHaveRefs((value as Record<string, unknown>)[k])) return true;
    }
  }
  return false;
}

/** Looks up a step's result value; `found: false` when the step has no usable result. */
export type RefLookup = (stepId: string) => { found: true; value: unknown } | { found: false };

/**
 * Returns `args` with every reference replaced (new objects only where something changed).
 *
 * @throws StepflowError `REF_UNRESOLVED` naming the step, the reference and the missing part
 *
 * @example
 * ```ts
 * import { resolveRefs } from "./refs.ts";
 * const values = new Map<string, unknown>([["step_1", { files: ["a.txt"] }]]);
 * const lookup = (id: string) =>
 *   values.has(id) ? { found: true as const, value: values.get(id) } : { found: false as const };
 * resolveRefs({ path: "$step_1.files[0]", note: "first: ${step_1.files[0]}" }, lookup, "step_2");
 * // { path: "a.txt", note: "first: a.txt" }
 * ```
 */
export function resolveRefs<T>(args: T, lookup: RefLookup, stepId: string): T {
  return resolveValue(args, lookup, stepId) as T;
}

function resolveValue(value: unknown, lookup: RefLookup, stepId: string): unknown {
  if (typeof value === "string") {
    if (!value.includes("$")) return value;
    if (value.startsWith("$$")) return `$${unescapeTemplate(value.slice(2), lookup, stepId)}`;
    const whole = parseRef(value);
    if (whole) return valueOf(whole, lookup, stepId);
    return unescapeTemplate(value, lookup, stepId);
  }
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const r = resolveValue(value[i], lookup, stepId);
      if (r !== value[i]) (out ??= value.slice())[i] = r;
    }
    return out ?? value;
  }
  if (value !== null && typeof value === "object") {
    let out: Record<string, unknown> | undefined;
    for (const [k, v] of Object.entries(value)) {
      const r = resolveValue(v, lookup, stepId);
      if (r !== v) (out ??= { ...value as Record<string, unknown> })[k] = r;
    }
    return out ?? value;
  }
  return value;
}

function unescapeTemplate(text: string, lookup: RefLookup, stepId: string): string {
  if (!text.includes("${")) return text;
  return text.replace(TEMPLATE, (match, id: string | undefined, path: string) => {
    if (id === undefined) return "${"; // "$${" is a literal "${"
    const v = valueOf({ stepId: id, path: parsePath(path), text: match }, lookup, stepId);
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

function valueOf(ref: StepRef, lookup: RefLookup, stepId: string): unknown {
  const found = lookup(ref.stepId);
  if (!found.found) {
    throw refError(
      stepId,
      ref,
      `step "${ref.stepId}" has no result (it has not completed). Add it to dependsOn.`,
    );
  }
  let current = found.value;
  let at = `$${ref.stepId}`;
  for (const key of ref.path) {
    const container = current;
    if (container === null || typeof container !== "object") {
      throw refError(
        stepId,
        ref,
        `${at} is ${describe(container)}, so it has no ${
          typeof key === "number" ? `[${key}]` : `"${key}"`
        }.`,
      );
    }
    if (!Object.hasOwn(container, key)) {
      throw refError(
        stepId,
        ref,
        `${at} has no ${typeof key === "number" ? `index ${key}` : `key "${key}"`}${
          Array.isArray(container)
            ? ` (it is a list of ${container.length})`
            : `; its keys are: ${Object.keys(container).join(", ") || "(none)"}`
        }.`,
      );
    }
    current = (container as Record<string | number, unknown>)[key];
    at += typeof key === "number" ? `[${key}]` : `.${key}`;
  }
  if (current === undefined) throw refError(stepId, ref, `${at} has no value.`);
  return current;
}

function parsePath(text: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of text.matchAll(SEGMENT)) out.push(m[1] !== undefined ? m[1] : Number(m[2]));
  return out;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "string") return `the text ${JSON.stringify(value.slice(0, 40))}`;
  return `a ${typeof value}`;
}

function refError(stepId: string, ref: StepRef, why: string): StepflowError {
  return new StepflowError(
    "REF_UNRESOLVED",
    `Step "${stepId}": cannot resolve ${ref.text}: ${why}`,
    { details: { stepId, ref: ref.text, refStepId: ref.stepId } },
  );
}
