/**
 * The `json` module: parse, stringify, get, set, keys, values, entries.
 *
 * @module
 */
import { z } from "zod";
import type { Tool } from "../../tools/types.ts";
import { describeValue } from "../core/evaluate.ts";
import { ownValue, setOwn } from "../../own_record.ts";
import { ModuleArgumentError, toNumber } from "./values.ts";

/** The arguments of `json`. */
export interface JsonArgs {
  /** The operation. */
  op: "parse" | "stringify" | "get" | "set" | "keys" | "values" | "entries";
  /** The value (JSON text is parsed first, except by `parse` which requires text). */
  data?: unknown;
  /** Dotted path for get/set, e.g. `a.b.0`. */
  path?: string;
  /** The value `set` puts at `path`. */
  value?: unknown;
  /** Indentation of `stringify`. */
  space?: unknown;
}

/**
 * `json parse data=text -> obj`, `json get data=obj path="a.b" -> v`,
 * `json set data=obj path="a.b" value=1 -> updated` (a copy; the original is unchanged),
 * `json stringify data=obj space=2 -> text`, `json keys|values|entries data=obj -> list`.
 */
export const jsonTool: Tool<JsonArgs, unknown> = {
  name: "json",
  description:
    'JSON helpers: json parse data=text -> obj; json stringify data=obj space=2 -> text; json get data=obj path="a.b" -> v; json set data=obj path="a.b" value=1 -> copy; json keys|values|entries data=obj -> list.',
  inputSchema: z.strictObject({
    op: z.enum(["parse", "stringify", "get", "set", "keys", "values", "entries"]).describe(
      "The operation.",
    ),
    data: z.unknown().optional().describe("The value or JSON text."),
    path: z.string().optional().describe('Dotted path for get/set, e.g. "a.b.0".'),
    value: z.unknown().optional().describe("set: the new value."),
    space: z.unknown().optional().describe("stringify: indentation (number)."),
  }),
  execute({ op, data, path, value, space }) {
    switch (op) {
      case "parse":
        if (typeof data !== "string") {
          throw new ModuleArgumentError(
            "json parse",
            `data must be text, got ${describeValue(data)}`,
          );
        }
        try {
          return JSON.parse(data);
        } catch (error) {
          throw new ModuleArgumentError("json parse", `invalid JSON: ${(error as Error).message}`);
        }
      case "stringify":
        return JSON.stringify(
          autoParse(data),
          null,
          space === undefined ? 0 : toNumber(space, "space", "json stringify"),
        ) ?? "null";
      case "get":
        return getPath(autoParse(data), requirePath(path, "get"));
      case "set":
        return setPath(structuredClone(autoParse(data) ?? {}), requirePath(path, "set"), value);
      case "keys":
        return Object.keys(container(data, op));
      case "values":
        return Object.values(container(data, op));
      case "entries":
        return Object.entries(container(data, op));
    }
  },
};

function autoParse(data: unknown): unknown {
  if (typeof data !== "string") return data;
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function container(data: unknown, op: string): object {
  const v = autoParse(data);
  if (v === null || typeof v !== "object") {
    throw new ModuleArgumentError(
      `json ${op}`,
      `data must be an object or a list, got ${describeValue(v)}`,
    );
  }
  return v;
}

function requirePath(path: string | undefined, op: string): string[] {
  if (path === undefined || path === "") {
    throw new ModuleArgumentError(`json ${op}`, 'path= is required (e.g. path="a.b")');
  }
  return path.split(".");
}

function getPath(value: unknown, keys: string[]): unknown {
  let cur = value;
  for (const k of keys) {
    if (cur === null || typeof cur !== "object" || !Object.hasOwn(cur, k)) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

function setPath(root: unknown, keys: string[], value: unknown): unknown {
  if (root === null || typeof root !== "object") {
    throw new ModuleArgumentError(
      "json set",
      `data must be an object or a list, got ${describeValue(root)}`,
    );
  }
  let cur = root as Record<string, unknown>;
  for (let i = 0; i < keys.length - 1; i++) {
    const k = keys[i];
    const next = ownValue(cur, k);
    if (next === null || typeof next !== "object") {
      const created = {};
      setOwn(cur, k, created);
      cur = created;
    } else cur = next as Record<string, unknown>;
  }
  setOwn(cur, keys[keys.length - 1], value);
  return root;
}
