/**
 * Normalises climpt output-schema files into stepflow's layout: each step's schema under
 * `definitions/<stepId>`, `$ref`s into other files (climpt's shared `common.schema.json`) bundled
 * into the file's own `$defs`, and the intents renamed in every intent enum.
 *
 * @module
 */

/** Keys of a schema document that are JSON Schema keywords, not step definitions. */
const SCHEMA_KEYWORDS = new Set([
  "$schema",
  "$id",
  "$comment",
  "$defs",
  "definitions",
  "title",
  "description",
  "type",
  "properties",
  "required",
  "additionalProperties",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
  "items",
  "enum",
  "const",
  "examples",
  "default",
]);

/** Gate intents and climpt's intents; an enum holding one of these is an intent enum. */
const INTENT_WORDS = new Set(["next", "repeat", "jump", "complete", "abort", "closing", "handoff"]);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Applies `fn` to every object in `value` (depth first), including `value` itself. */
function walk(value: unknown, fn: (node: Json) => void, depth = 0): void {
  if (depth > 200) return;
  if (Array.isArray(value)) {
    for (const item of value) walk(item, fn, depth + 1);
  } else if (isObject(value)) {
    fn(value);
    for (const key of Object.keys(value)) walk(value[key], fn, depth + 1);
  }
}

/** Result of {@linkcode normalizeSchemaFile}. */
export interface NormalizedSchema {
  /** The document to write. */
  document: Json;
  /** What was done, for the report. */
  changes: string[];
  /** Pointers that did not resolve: `[sourceName, reason]`. */
  missing: { name: string; reason: string }[];
  /** Other schema files bundled in. */
  bundled: string[];
}

/**
 * Normalises one schema file.
 *
 * @param document the parsed file
 * @param steps the steps that point into it: the source pointer (`closure.consider` or
 *   `#/definitions/x`) and the stepflow step id it is stored under
 * @param readOther reads another file of the same `schemas/` folder (for `$ref: "common.schema.json#…"`)
 * @param intentRenames climpt intent → stepflow intent (`closing` → `complete`, …)
 */
export function normalizeSchemaFile(
  document: Json,
  steps: readonly { source: string; stepId: string }[],
  readOther: (file: string) => Json | undefined,
  intentRenames: Readonly<Record<string, string>>,
): NormalizedSchema {
  const doc = structuredClone(document);
  const changes: string[] = [];
  const missing: { name: string; reason: string }[] = [];
  const bundled: string[] = [];
  const defs: Json = isObject(doc.$defs) ? doc.$defs : {};
  const definitions: Json = isObject(doc.definitions) ? doc.definitions : {};

  // 1. Bundle other files' $defs/definitions, rewriting `file#/$defs/X` to `#/$defs/<X or renamed>`.
  const external = new Set<string>();
  walk(doc, (node) => {
    if (typeof node.$ref === "string" && /^[^#]+#/.test(node.$ref)) {
      external.add(node.$ref.slice(0, node.$ref.indexOf("#")));
    }
  });
  const refMap = new Map<string, string>();
  for (const file of [...external].sort()) {
    const other = readOther(file);
    if (!other) {
      missing.push({ name: file, reason: `$ref names ${file}, which is not in schemas/` });
      continue;
    }
    bundled.push(file);
    const stem = file.replace(/\.schema\.json$|\.json$/, "").replace(/[^A-Za-z0-9_-]/g, "_");
    const local = new Map<string, string>();
    for (const section of ["$defs", "definitions"] as const) {
      const table = other[section];
      if (!isObject(table)) continue;
      for (const [name, schema] of Object.entries(table)) {
        let target = name;
        if (
          Object.hasOwn(defs, target) && JSON.stringify(defs[target]) !== JSON.stringify(schema)
        ) {
          target = `${stem}.${name}`;
        }
        local.set(`#/${section}/${name}`, `#/$defs/${target}`);
        refMap.set(`${file}#/${section}/${name}`, `#/$defs/${target}`);
        defs[target] = structuredClone(schema);
      }
    }
    // The bundled definitions' own local refs now point into this file's $defs.
    for (const target of new Set(local.values())) {
      walk(defs[target.slice("#/$defs/".length)], (node) => {
        if (typeof node.$ref === "string" && local.has(node.$ref)) {
          node.$ref = local.get(node.$ref);
        }
      });
    }
  }
  walk(doc, (node) => {
    if (typeof node.$ref !== "string" || !/^[^#]+#/.test(node.$ref)) return;
    const mapped = refMap.get(node.$ref);
    if (mapped) node.$ref = mapped;
    else if (bundled.includes(node.$ref.slice(0, node.$ref.indexOf("#")))) {
      missing.push({ name: node.$ref, reason: "the pointer is not in the referenced file" });
    } // else: the file itself is missing, reported once above
  });
  if (bundled.length > 0) {
    changes.push(`bundled ${bundled.join(", ")} into $defs (stepflow resolves refs within a file)`);
  }

  // 2. Step definitions move under definitions/<stepId>.
  for (const { source, stepId } of steps) {
    let schema: unknown;
    if (source.startsWith("#/")) {
      schema = source.slice(2).split("/").reduce<unknown>(
        (at, token) =>
          isObject(at) ? at[token.replaceAll("~1", "/").replaceAll("~0", "~")] : undefined,
        doc,
      );
    } else {
      schema = Object.hasOwn(doc, source) && !SCHEMA_KEYWORDS.has(source)
        ? doc[source]
        : Object.hasOwn(definitions, source)
        ? definitions[source]
        : Object.hasOwn(defs, source)
        ? defs[source]
        : undefined;
    }
    if (!isObject(schema)) {
      missing.push({ name: source, reason: "no schema of that name in the file" });
      continue;
    }
    definitions[stepId] = schema;
    if (source !== `#/definitions/${stepId}`) {
      changes.push(`"${source}" → #/definitions/${stepId}`);
    }
  }
  // Other top-level step schemas (not referenced) keep their name under definitions.
  for (const key of Object.keys(doc)) {
    if (SCHEMA_KEYWORDS.has(key) || !isObject(doc[key])) continue;
    if (!Object.hasOwn(definitions, key)) definitions[key] = doc[key];
    delete doc[key];
  }

  // 3. Intent enums: `closing`/`handoff` become `complete` (deduplicated).
  let renamed = 0;
  const renameIn = (node: Json) => {
    if (Array.isArray(node.enum) && node.enum.some((v) => INTENT_WORDS.has(v as string))) {
      const values = node.enum as unknown[];
      if (values.some((v) => typeof v === "string" && Object.hasOwn(intentRenames, v))) {
        const next: unknown[] = [];
        for (const v of values) {
          const mapped = typeof v === "string" && Object.hasOwn(intentRenames, v)
            ? intentRenames[v]
            : v;
          if (!next.includes(mapped)) next.push(mapped);
        }
        node.enum = next;
        renamed++;
      }
    }
    if (typeof node.const === "string" && Object.hasOwn(intentRenames, node.const)) {
      node.const = intentRenames[node.const];
      renamed++;
    }
  };
  walk(definitions, renameIn);
  walk(defs, renameIn);
  if (renamed > 0) {
    changes.push(
      `${renamed} intent enum/const value(s) renamed (${
        Object.entries(intentRenames).map(([a, b]) => `${a} → ${b}`).join(", ")
      })`,
    );
  }

  // 4. $id is dropped: stepflow compiles each step's schema on its own, and ids would collide.
  if (doc.$id !== undefined) {
    delete doc.$id;
    changes.push("$id dropped (schemas are addressed by file name)");
  }
  const out: Json = {};
  for (const key of ["$schema", "title", "description"]) if (key in doc) out[key] = doc[key];
  for (const [key, value] of Object.entries(doc)) if (!(key in out)) out[key] = value;
  if (Object.keys(defs).length > 0) out.$defs = defs;
  out.definitions = definitions;
  return { document: out, changes, missing, bundled };
}
