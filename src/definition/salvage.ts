/**
 * Salvaging what parsed from a file that failed its zod schema, so that one load reports every
 * problem: the schema's issues AND the flow rules on the rest, instead of one fix-and-reload round
 * per problem. Unknown keys never hide the flow rules.
 *
 * @module
 */
import type { z } from "zod";

/** What {@linkcode salvageParse} kept. */
export interface Salvaged<T> {
  /** The value parsed with the offending parts removed, when that parses. */
  data?: T;
  /** Keys of `dropWhole` records whose entries were dropped whole (e.g. malformed steps). */
  dropped: string[];
}

/** Options of {@linkcode salvageParse}. */
export interface SalvageOptions {
  /**
   * A top-level record (e.g. `steps`) whose entries are dropped whole when they hold a problem
   * other than an unknown key: half a step would only produce misleading follow-up problems.
   */
  dropWhole?: string;
  /** Values for required top-level keys that are missing or invalid (already reported). */
  fill?: Record<string, unknown>;
  /** Rounds of removal before giving up (default 8). */
  maxRounds?: number;
}

/**
 * Parses `raw` with `schema`, removing each part zod complains about — unknown keys, invalid
 * optional values, whole entries of `dropWhole` — until the rest parses. The problems themselves are
 * reported from the first parse by the caller; this only recovers the part that is sound.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { salvageParse } from "./salvage.ts";
 * const schema = z.strictObject({ a: z.number(), b: z.string().optional() });
 * salvageParse(schema, { a: 1, b: 2, typo: true }).data; // { a: 1 }
 * ```
 */
export function salvageParse<T>(
  schema: z.ZodType<T>,
  raw: unknown,
  options: SalvageOptions = {},
): Salvaged<T> {
  const dropped = new Set<string>();
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { dropped: [] };
  let value: Record<string, unknown>;
  try {
    value = structuredClone(raw) as Record<string, unknown>;
  } catch {
    return { dropped: [] };
  }
  const rounds = options.maxRounds ?? 8;
  for (let round = 0; round < rounds; round++) {
    const parsed = schema.safeParse(value);
    if (parsed.success) return { data: parsed.data, dropped: [...dropped] };
    let changed = false;
    for (const issue of parsed.error.issues) {
      const path = issue.path.map((k) => (typeof k === "symbol" ? String(k) : k));
      if (issue.code === "unrecognized_keys") {
        const owner = at(value, path);
        if (owner && typeof owner === "object") {
          for (const key of issue.keys) {
            if (Object.hasOwn(owner, key)) {
              delete (owner as Record<string, unknown>)[key];
              changed = true;
            }
          }
        }
        continue;
      }
      if (options.dropWhole !== undefined && path[0] === options.dropWhole && path.length >= 2) {
        const record = value[options.dropWhole];
        const key = String(path[1]);
        if (record && typeof record === "object" && Object.hasOwn(record, key)) {
          delete (record as Record<string, unknown>)[key];
          dropped.add(key);
          changed = true;
        }
        continue;
      }
      if (path.length === 1 && options.fill && Object.hasOwn(options.fill, path[0])) {
        const key = String(path[0]);
        if (value[key] !== options.fill[key]) {
          value[key] = options.fill[key];
          changed = true;
        }
        continue;
      }
      if (path.length === 0) continue;
      changed = removeAt(value, path) || changed;
    }
    if (!changed) break;
  }
  return { dropped: [...dropped] };
}

function at(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** Deletes the value at `path`; an array element takes its whole array with it. */
function removeAt(root: Record<string, unknown>, path: readonly PropertyKey[]): boolean {
  let end = path.length;
  for (let i = 0; i < path.length; i++) {
    if (typeof path[i] === "number") {
      end = i;
      break;
    }
  }
  if (end === 0) return false;
  const owner = at(root, path.slice(0, end - 1));
  const key = path[end - 1];
  if (owner === null || typeof owner !== "object" || !Object.hasOwn(owner, key)) return false;
  delete (owner as Record<PropertyKey, unknown>)[key];
  return true;
}
