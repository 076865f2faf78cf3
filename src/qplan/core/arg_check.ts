/**
 * Argument validation for one call site, with a fast path: when every argument that changes from
 * call to call is checked by a "type-only" schema (number, string, boolean, unknown, … without
 * refinements), a successful zod parse is remembered by the types of those values, and later
 * calls with the same types skip zod. Everything else is parsed by zod on every call.
 *
 * @module
 */
import type { ArgIssue, ArgSchema } from "./tool_types.ts";

/** The outcome of checking one call's arguments. */
export type ArgCheckResult =
  | { ok: true; args: Record<string, unknown> }
  | { ok: false; issues: readonly ArgIssue[] };

/** Checks the arguments of one call site. */
export interface ArgChecker {
  /** Validates `args`; returns the parsed arguments or zod's issues. */
  check(args: Record<string, unknown>): ArgCheckResult;
  /** True when this site may skip zod for argument types it has already seen. */
  readonly cacheable: boolean;
}

interface Def {
  type: string;
  checks?: unknown[];
  innerType?: { _zod: { def: Def } };
  options?: { _zod: { def: Def } }[];
  shape?: Record<string, { _zod: { def: Def } }>;
  catchall?: { _zod: { def: Def } };
  valueType?: { _zod: { def: Def } };
  keyType?: { _zod: { def: Def } };
  element?: { _zod: { def: Def } };
}

const PRIMITIVE = new Set(["number", "string", "boolean", "null", "undefined", "unknown", "any"]);
const profiles = new WeakMap<object, SchemaProfile>();

interface SchemaProfile {
  /** Keys whose schema only checks the value's type; `"*"` when every key qualifies. */
  typeOnly: Set<string> | "*";
}

function typeOnly(def: Def): boolean {
  const keys = Object.keys(def);
  if (PRIMITIVE.has(def.type)) {
    return keys.every((k) => k === "type" || k === "checks") && (def.checks?.length ?? 0) === 0;
  }
  if (def.type === "optional" || def.type === "nullable") {
    return keys.length === 2 && def.innerType !== undefined && typeOnly(def.innerType._zod.def);
  }
  if (def.type === "union") return (def.options ?? []).every((o) => typeOnly(o._zod.def));
  return false;
}

function profileOf(schema: ArgSchema): SchemaProfile {
  let p = profiles.get(schema);
  if (p) return p;
  const def = (schema as unknown as { _zod?: { def: Def } })._zod?.def;
  if (!def) {
    const opaque: SchemaProfile = { typeOnly: new Set() };
    profiles.set(schema, opaque);
    return opaque;
  }
  const typeOnlyKeys = new Set<string>();
  let profile: SchemaProfile = { typeOnly: typeOnlyKeys };
  if (def.type === "object" && def.shape) {
    for (const [key, field] of Object.entries(def.shape)) {
      if (typeOnly(field._zod.def)) typeOnlyKeys.add(key);
    }
  } else if (
    def.type === "record" && def.valueType && typeOnly(def.valueType._zod.def) &&
    def.keyType?._zod.def.type === "string" && (def.keyType._zod.def.checks?.length ?? 0) === 0
  ) {
    profile = { typeOnly: "*" };
  }
  profiles.set(schema, profile);
  p = profile;
  return p;
}

/** One character per value type; finite numbers differ from NaN and ±Infinity. */
function tag(v: unknown): number {
  switch (typeof v) {
    case "number":
      return Number.isFinite(v) ? 1 : 2;
    case "string":
      return 3;
    case "boolean":
      return 4;
    case "undefined":
      return 5;
    case "object":
      return v === null ? 6 : Array.isArray(v) ? 7 : 8;
    default:
      return 9;
  }
}

/** How many argument-type combinations one site remembers. */
const MAX_SHAPES = 8;

/**
 * Creates the checker of a call site.
 *
 * @param schema the tool's input schema
 * @param dynamicKeys the argument names whose values are computed at run time (variables,
 *   expressions); the others are constants written in the script
 * @param fastPath false to parse with zod on every call
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { createArgChecker } from "./arg_check.ts";
 * const schema = z.strictObject({ op: z.enum(["add"]), a: z.number(), b: z.number() });
 * const checker = createArgChecker(schema, ["a"]);
 * console.log(checker.cacheable, checker.check({ op: "add", a: 1, b: 2 }).ok); // true true
 * console.log(checker.check({ op: "add", a: "x", b: 2 }).ok); // false
 * ```
 */
export function createArgChecker(
  schema: ArgSchema,
  dynamicKeys: readonly string[],
  fastPath = true,
): ArgChecker {
  const profile = profileOf(schema);
  const cacheable = fastPath && dynamicKeys.length <= 12 &&
    dynamicKeys.every((k) => profile.typeOnly === "*" || profile.typeOnly.has(k));
  const seen: number[] = [];
  const keys = [...dynamicKeys];

  const parse = (args: Record<string, unknown>): ArgCheckResult => {
    const parsed = schema.safeParse(args);
    if (!parsed.success) return { ok: false, issues: parsed.error.issues };
    return { ok: true, args: parsed.data as Record<string, unknown> };
  };

  if (!cacheable) return { cacheable, check: parse };

  return {
    cacheable,
    check(args) {
      let shape = 0;
      for (let i = 0; i < keys.length; i++) shape = shape * 16 + tag(args[keys[i]]);
      for (let i = 0; i < seen.length; i++) if (seen[i] === shape) return { ok: true, args };
      const result = parse(args);
      if (result.ok && seen.length < MAX_SHAPES && sameArgs(args, result.args)) seen.push(shape);
      return result;
    },
  };
}

/** True when zod returned the arguments unchanged (no defaults, coercions or stripped keys). */
function sameArgs(input: Record<string, unknown>, output: Record<string, unknown>): boolean {
  const inKeys = Object.keys(input);
  if (inKeys.length !== Object.keys(output).length) return false;
  for (const k of inKeys) if (!Object.is(input[k], output[k])) return false;
  return true;
}
