/**
 * The smoke script of a migrated agent: the main path of its flow (entry → `next` … → a step that
 * may `complete` → its closing step) with one schema-valid answer per step, in the scripted
 * backend's format (`run-agent --backend scripted --script smoke.script.yaml`).
 *
 * @module
 */
import type { StepsRegistry } from "../definition/schema.ts";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function resolveRef(ref: string, root: Json): unknown {
  if (!ref.startsWith("#/")) return undefined;
  return ref.slice(2).split("/").reduce<unknown>(
    (at, t) => isObject(at) ? at[t.replaceAll("~1", "/").replaceAll("~0", "~")] : undefined,
    root,
  );
}

/**
 * A value that satisfies `schema` in the common cases: `const`, first `enum` value, required
 * properties, `allOf` merged, first `anyOf`/`oneOf` branch, `$ref` within `root`, minimum
 * lengths and counts. `if`/`then` is satisfied by the first enum choices not triggering it in
 * practice; the converter validates every sample and reports those it could not make valid.
 */
export function sampleFor(schema: unknown, root: Json, depth = 0): unknown {
  if (!isObject(schema) || depth > 30) return null;
  if (typeof schema.$ref === "string") {
    const target = resolveRef(schema.$ref, root);
    const { $ref: _r, ...rest } = schema;
    const base = sampleFor(target, root, depth + 1);
    if (Object.keys(rest).length === 0) return base;
    return merge(base, sampleFor(rest, root, depth + 1));
  }
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  let value: unknown = undefined;
  if (Array.isArray(schema.allOf)) {
    for (const part of schema.allOf) {
      if (isObject(part) && "if" in part) continue; // conditionals apply once the object exists
      value = merge(value, sampleFor(part, root, depth + 1));
    }
  }
  const branch = Array.isArray(schema.anyOf)
    ? schema.anyOf[0]
    : Array.isArray(schema.oneOf)
    ? schema.oneOf[0]
    : undefined;
  if (branch !== undefined) value = merge(value, sampleFor(branch, root, depth + 1));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const isObj = type === "object" || (type === undefined && (schema.properties || schema.required));
  if (isObj) {
    const out: Json = isObject(value) ? value : {};
    const props = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required as string[] : [];
    for (const key of required) {
      if (Object.hasOwn(out, key) && out[key] !== null) {
        if (Object.hasOwn(props, key)) {
          out[key] = merge(out[key], sampleFor(props[key], root, depth + 1));
        }
        continue;
      }
      out[key] = Object.hasOwn(props, key) ? sampleFor(props[key], root, depth + 1) : "x";
    }
    const conditionals = [schema, ...(Array.isArray(schema.allOf) ? schema.allOf : [])];
    for (const c of conditionals) {
      if (!isObject(c) || !isObject(c.if) || !isObject(c.then)) continue;
      if (matchesCondition(c.if, out)) {
        // `then` usually only adds `required`; the property schemas are the parent's.
        const thenProps = isObject(c.then.properties) ? c.then.properties : {};
        const extra = sampleFor(
          { type: "object", ...c.then, properties: { ...props, ...thenProps } },
          root,
          depth + 1,
        );
        if (isObject(extra)) Object.assign(out, extraOnly(extra, out));
      }
    }
    return out;
  }
  if (value !== undefined) return value;
  switch (type) {
    case "string": {
      const min = typeof schema.minLength === "number" ? schema.minLength : 1;
      if (schema.format === "uri" || schema.format === "url") return "https://example.com/";
      if (schema.format === "date-time") return "2026-01-01T00:00:00Z";
      return "smoke".padEnd(min, "x");
    }
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return true;
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0;
      return Array.from({ length: min }, () => sampleFor(schema.items, root, depth + 1));
    }
    case "null":
      return null;
    default:
      return "smoke";
  }
}

/** The keys of `extra` that `out` lacks. */
function extraOnly(extra: Json, out: Json): Json {
  const only: Json = {};
  for (const [k, v] of Object.entries(extra)) if (!Object.hasOwn(out, k)) only[k] = v;
  return only;
}

/** A simple reading of an `if` schema: required keys present and const/enum values equal. */
function matchesCondition(condition: Json, value: Json): boolean {
  const required = Array.isArray(condition.required) ? condition.required as string[] : [];
  if (required.some((k) => !Object.hasOwn(value, k))) return false;
  const props = isObject(condition.properties) ? condition.properties : {};
  for (const [k, p] of Object.entries(props)) {
    if (!isObject(p) || !Object.hasOwn(value, k)) continue;
    if ("const" in p && p.const !== value[k]) return false;
    if (Array.isArray(p.enum) && !p.enum.includes(value[k])) return false;
  }
  return true;
}

function merge(a: unknown, b: unknown): unknown {
  if (isObject(a) && isObject(b)) {
    const out: Json = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = Object.hasOwn(out, k) ? merge(out[k], v) : v;
    return out;
  }
  return b === undefined || b === null ? a ?? b : b;
}

/** Sets `value` at the dot path `path`, creating objects on the way. */
export function setPath(target: Json, path: string, value: unknown): void {
  const parts = path.split(".");
  let at = target;
  for (const part of parts.slice(0, -1)) {
    if (!isObject(at[part])) at[part] = {};
    at = at[part] as Json;
  }
  at[parts[parts.length - 1]] = value;
}

/** One step of the main path and the intent it answers. */
export interface SmokeStep {
  /** Step id. */
  stepId: string;
  /** The intent answered (absent for closing and command steps). */
  intent?: string;
}

/**
 * The main path: from the entry, follow `next` while it leads to a step not yet visited; where it
 * does not, answer `complete` (into the closing step, or ending the run). Ends at a closing step,
 * a command step without `next`, or a dead end.
 */
export function mainPath(registry: StepsRegistry, entry: string): SmokeStep[] {
  const path: SmokeStep[] = [];
  const seen = new Set<string>();
  let id: string | undefined = entry;
  while (id && !seen.has(id) && Object.hasOwn(registry.steps, id)) {
    seen.add(id);
    const step: StepsRegistry["steps"][string] = registry.steps[id];
    if (id.startsWith("complete.") && step.kind !== "command") {
      path.push({ stepId: id });
      break;
    }
    const intents = step.structuredGate?.allowedIntents ?? [];
    const next: string | undefined = step.transitions?.next?.target;
    if (
      next !== undefined && !seen.has(next) && (intents.includes("next") || step.kind === "command")
    ) {
      path.push({ stepId: id, intent: step.kind === "command" ? undefined : "next" });
      id = next;
      continue;
    }
    if (intents.includes("complete")) {
      path.push({ stepId: id, intent: "complete" });
      id = step.transitions?.complete?.target;
      continue;
    }
    path.push({ stepId: id });
    break;
  }
  return path;
}

/** Steps reachable from `entries` over transitions (gate targets and validation retries aside). */
export function reachableFrom(registry: StepsRegistry, entries: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length > 0) {
    const id = queue.pop()!;
    if (seen.has(id) || !Object.hasOwn(registry.steps, id)) continue;
    seen.add(id);
    for (const t of Object.values(registry.steps[id].transitions ?? {})) queue.push(t.target);
  }
  return seen;
}
