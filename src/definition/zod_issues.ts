/**
 * Turns zod issues into messages that name the file and the JSON path of each problem, e.g.
 * `steps_registry.json: steps.s_a8f3.check.onPass: unknown key "nxt" (did you mean "next"?)`.
 *
 * @module
 */
import type { z } from "zod";
import type { JsonSchemaDocument } from "./json_schemas.ts";
import { closestMatch } from "./suggest.ts";

type Issue = z.core.$ZodIssue;
type PathKey = PropertyKey;

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * Formats a JSON path the way a reader would write it: `steps.s_a8f3.check.onPass`,
 * `steps["initial.issue"].structuredGate.allowedIntents[1]`.
 *
 * @example
 * ```ts
 * import { formatJsonPath } from "./zod_issues.ts";
 * formatJsonPath(["steps", "initial.issue", "c2"]); // 'steps["initial.issue"].c2'
 * ```
 */
export function formatJsonPath(path: readonly PathKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && PLAIN_KEY.test(key)) out += out === "" ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/**
 * One message per problem in `issues`, each starting with `<file>: <json path>: `.
 *
 * @param issues the zod issues
 * @param file the file label (e.g. `steps_registry.json`; "" for none)
 * @param data the parsed file (to show the offending value)
 * @param schema the JSON Schema of the file (to suggest the key that was meant)
 */
export function formatZodIssues(
  issues: readonly Issue[],
  file: string,
  data: unknown,
  schema?: JsonSchemaDocument,
): string[] {
  const out: Entry[] = [];
  for (const issue of issues) collect(issue, [], file, data, schema, out);
  // A misspelt key shows up twice — unknown "nxt" and missing "next"; keep only the first.
  const suggested = new Set(out.flatMap((e) => e.suggests ? [e.suggests] : []));
  return out.filter((e) => !e.missing || !suggested.has(e.missing)).map((e) => e.message);
}

interface Entry {
  message: string;
  /** JSON path of the required key this entry reports missing. */
  missing?: string;
  /** JSON path of the key an unknown-key entry suggests. */
  suggests?: string;
}

function collect(
  issue: Issue,
  base: readonly PathKey[],
  file: string,
  data: unknown,
  schema: JsonSchemaDocument | undefined,
  out: Entry[],
): void {
  const path = [...base, ...issue.path];
  const at = (p: readonly PathKey[]) => {
    const head = [file, formatJsonPath(p)].filter((part) => part !== "").join(": ");
    return head === "" ? "" : `${head}: `;
  };
  switch (issue.code) {
    case "invalid_union": {
      const value = valueAt(data, path);
      if (value !== null && typeof value === "object" && !Array.isArray(value)) {
        const keys = Object.keys(value);
        const mixed = objectForms(schema, path).filter((form) =>
          form.some((k) => keys.includes(k))
        );
        if (mixed.length >= 2) {
          const forms = mixed.map((form) => `{ ${form.join(", ")} }`).join(" and ");
          out.push({ message: `${at(path)}mixes the forms ${forms}; use exactly one of them.` });
          return;
        }
      }
      const branch = bestBranch(issue.errors);
      if (branch) {
        for (const sub of branch) collect(sub, path, file, data, schema, out);
      } else out.push({ message: `${at(path)}${issue.message}` });
      return;
    }
    case "unrecognized_keys": {
      const allowed = allowedKeys(schema, path, data);
      for (const key of issue.keys) {
        const suggestion = allowed.length > 0 ? closestMatch(key, allowed) : undefined;
        const hint = suggestion
          ? ` (did you mean "${suggestion}"?)`
          : allowed.length > 0
          ? ` (allowed: ${allowed.join(", ")})`
          : "";
        out.push({
          message: `${at(path)}unknown key "${key}"${hint}.`,
          suggests: suggestion ? formatJsonPath([...path, suggestion]) : undefined,
        });
      }
      return;
    }
    case "invalid_type": {
      const value = valueAt(data, path);
      if (value === undefined) {
        out.push({
          message: `${at(path)}required ${issue.expected} is missing.`,
          missing: formatJsonPath(path),
        });
      } else {
        out.push({ message: `${at(path)}expected ${issue.expected}, got ${describe(value)}.` });
      }
      return;
    }
    case "invalid_value": {
      const value = valueAt(data, path);
      const options = issue.values.map((v) => JSON.stringify(v)).join(", ");
      out.push({
        message: `${at(path)}${describe(value)} is not allowed; expected one of ${options}.`,
      });
      return;
    }
    default: {
      const message = issue.message.replace(/^Invalid input: /, "");
      out.push({ message: `${at(path)}${message}${/[.!?]$/.test(message) ? "" : "."}` });
    }
  }
}

/**
 * The union branch that best explains a failure: branches whose only complaint is the value's type
 * at the union itself are skipped (the value was clearly meant for another branch); of the rest,
 * the one with the fewest issues wins, the first on a tie.
 */
function bestBranch(branches: readonly (readonly Issue[])[]): readonly Issue[] | undefined {
  let best: readonly Issue[] | undefined;
  for (const branch of branches) {
    const typeMismatch = branch.length === 1 && branch[0].code === "invalid_type" &&
      branch[0].path.length === 0;
    if (typeMismatch) continue;
    if (!best || branch.length < best.length) best = branch;
  }
  return best ?? branches[0];
}

function valueAt(data: unknown, path: readonly PathKey[]): unknown {
  let node = data;
  for (const key of path) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, key)) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key as string];
  }
  return node;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/** The JSON Schema nodes that describe the value at `path` (several where unions branch). */
function schemaNodesAt(
  schema: JsonSchemaDocument | undefined,
  path: readonly PathKey[],
): Record<string, unknown>[] {
  if (!schema) return [];
  let nodes: Record<string, unknown>[] = [schema];
  for (const key of path) {
    const next: Record<string, unknown>[] = [];
    for (const node of nodes.flatMap(branches)) {
      const properties = node.properties as Record<string, unknown> | undefined;
      // Keys come from the file: a step named "constructor" is not Object's constructor.
      const child = typeof key === "number"
        ? node.items
        : (properties && Object.hasOwn(properties, key) ? properties[key as string] : undefined) ??
          (typeof node.additionalProperties === "object" ? node.additionalProperties : undefined);
      if (child && typeof child === "object") next.push(child as Record<string, unknown>);
    }
    nodes = next;
  }
  return nodes;
}

/** The key sets of the object forms a union at `path` accepts (`[["next"], ["complete"]]`). */
function objectForms(schema: JsonSchemaDocument | undefined, path: readonly PathKey[]): string[][] {
  return schemaNodesAt(schema, path).flatMap(branches).flatMap((node) =>
    node.properties ? [Object.keys(node.properties as object)] : []
  );
}

/** The property names the JSON Schema allows for the object at `path` (all union branches). */
function allowedKeys(
  schema: JsonSchemaDocument | undefined,
  path: readonly PathKey[],
  data: unknown,
): string[] {
  const keys = new Set<string>();
  const present = valueAt(data, path);
  for (const node of schemaNodesAt(schema, path).flatMap(branches)) {
    const props = node.properties as Record<string, unknown> | undefined;
    if (!props) continue;
    // Prefer the branch that shares a key with what was written (the prompt forms, onPass, …).
    for (const k of Object.keys(props)) keys.add(k);
    if (
      present && typeof present === "object" &&
      Object.keys(present).some((k) => Object.hasOwn(props, k))
    ) {
      return Object.keys(props);
    }
  }
  return [...keys];
}

function branches(node: Record<string, unknown>): Record<string, unknown>[] {
  const alternatives = (node.anyOf ?? node.oneOf) as Record<string, unknown>[] | undefined;
  return alternatives ? alternatives.flatMap(branches) : [node];
}
