/**
 * Compiling output JSON Schemas with ajv, the same way at load time (`--validate`, the loader) and
 * at run time (the runner's output validation), so a schema that loads is a schema that runs.
 *
 * @module
 */
import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { errorMessage } from "../errors.ts";
import { closestMatch } from "./suggest.ts";

/** Compiles one JSON Schema (draft-07 unless `$schema` names 2020-12); throws when it does not compile. */
export type SchemaCompiler = (schema: Record<string, unknown>) => ValidateFunction;

/**
 * A compiler with its own ajv instances (`allErrors`, non-strict, ajv-formats, meta-schema
 * validation on — so `"type": "objcet"` is refused). Keep one per owner (a loader pass, a run):
 * ajv keeps every schema it compiled, so a shared instance would grow forever.
 *
 * @example
 * ```ts
 * import { createSchemaCompiler } from "./schema_compiler.ts";
 * const validate = createSchemaCompiler()({ type: "object", required: ["a"] });
 * validate({ a: 1 }); // true
 * ```
 */
export function createSchemaCompiler(): SchemaCompiler {
  const instances = ajvInstances();
  return (schema) => {
    const { ajv, schema: prepared } = instances(schema);
    try {
      return ajv.compile(prepared);
    } catch (error) {
      const hints = typeHints(prepared);
      throw hints === "" ? error : new Error(`${errorMessage(error)}${hints}`);
    }
  };
}

/** Checks one JSON Schema without compiling it; throws what {@linkcode SchemaCompiler} would. */
export type SchemaChecker = (schema: Record<string, unknown>) => void;

/**
 * A fast load-time check with the run time's ajv configuration: the schema is validated against
 * its draft's meta-schema (so `"type": "objcet"`, a bad `pattern` or `required: "x"` are refused
 * with ajv's own message), every `pattern` must be a valid regular expression, and every `$ref`
 * that is a JSON Pointer (`#/definitions/x`) must resolve inside the schema (`can't resolve reference … from id #`, as ajv says). A schema that uses other
 * reference forms (`$id`, anchors, `$dynamicRef`) is compiled in full instead. About 50x cheaper
 * than compiling, which matters for agents with hundreds of steps; `--validate` compiles in full.
 *
 * @example
 * ```ts
 * import { createSchemaChecker } from "./schema_compiler.ts";
 * createSchemaChecker()({ type: "objcet" }); // throws "schema is invalid: data/type must be …"
 * ```
 */
export function createSchemaChecker(): SchemaChecker {
  const instances = ajvInstances();
  let compile: SchemaCompiler | undefined;
  return (schema) => {
    const { ajv, schema: prepared } = instances(schema);
    if (!ajv.validateSchema(prepared)) {
      throw new Error(`schema is invalid: ${ajv.errorsText(ajv.errors)}${typeHints(prepared)}`);
    }
    let plain = true;
    walkRefs(prepared, 0, (ref, node) => {
      // ajv builds each pattern with the "u" flag when compiling; a broken one throws there.
      const patterns = typeof node.pattern === "string" ? [node.pattern] : [];
      const byPattern = node.patternProperties;
      if (byPattern && typeof byPattern === "object") patterns.push(...Object.keys(byPattern));
      for (const pattern of patterns) new RegExp(pattern, "u");
      if (node.$id !== undefined || node.$anchor !== undefined || node.$dynamicRef !== undefined) {
        plain = false;
      }
      if (ref === undefined) return;
      if (ref !== "#" && !ref.startsWith("#/")) {
        plain = false;
        return;
      }
      if (!pointerResolves(prepared, ref)) {
        throw new Error(`can't resolve reference ${ref} from id #`);
      }
    });
    if (!plain) (compile ??= createSchemaCompiler())(schema);
  };
}

/** Lazily created ajv instances (draft-07, 2020-12) and the schema as each expects it. */
function ajvInstances(): (
  schema: Record<string, unknown>,
) => { ajv: Ajv; schema: Record<string, unknown> } {
  let draft07: Ajv | undefined;
  let draft2020: Ajv2020 | undefined;
  return (schema) => {
    // $id would clash when the same file is compiled again after an edit.
    const { $id: _id, ...withoutId } = schema;
    const is2020 = typeof schema.$schema === "string" && schema.$schema.includes("2020-12");
    if (is2020) {
      draft2020 ??= withFormats(new Ajv2020({ allErrors: true, strict: false }));
      return { ajv: draft2020, schema: withoutId };
    }
    draft07 ??= withFormats(new Ajv({ allErrors: true, strict: false }));
    const { $schema: _s, ...rest } = withoutId;
    return { ajv: draft07, schema: rest };
  };
}

/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

function walkRefs(
  value: unknown,
  depth: number,
  visit: (ref: string | undefined, node: Record<string, unknown>) => void,
): void {
  if (value === null || typeof value !== "object" || depth > 512) return;
  if (Array.isArray(value)) {
    for (const item of value) walkRefs(item, depth + 1, visit);
    return;
  }
  const node = value as Record<string, unknown>;
  visit(typeof node.$ref === "string" ? node.$ref : undefined, node);
  for (const [key, child] of Object.entries(node)) {
    if (!DATA_KEYWORDS.has(key)) walkRefs(child, depth + 1, visit);
  }
}

/** The types a JSON Schema `type` may name. */
const JSON_TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"];

/**
 * `; "arary" is not a JSON Schema type (did you mean "array"?)` for each misspelt `type` of the
 * schema (at most five), or "" — ajv only says the value "must be equal to one of the allowed
 * values".
 */
function typeHints(schema: Record<string, unknown>): string {
  const hints = new Map<string, string>();
  walkRefs(schema, 0, (_ref, node) => {
    const types = typeof node.type === "string"
      ? [node.type]
      : Array.isArray(node.type)
      ? node.type.filter((t): t is string => typeof t === "string")
      : [];
    for (const type of types) {
      if (JSON_TYPES.includes(type) || hints.size >= 5) continue;
      const guess = closestMatch(type, JSON_TYPES);
      if (guess !== undefined) hints.set(type, guess);
    }
  });
  return [...hints].map(([type, guess]) =>
    `; "${type}" is not a JSON Schema type (did you mean "${guess}"?)`
  ).join("");
}

function pointerResolves(root: unknown, ref: string): boolean {
  let node = root;
  for (const raw of ref.slice(2).split("/")) {
    if (ref === "#") break;
    let token: string;
    try {
      token = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    } catch {
      return false;
    }
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, token)) return false;
    node = (node as Record<string, unknown>)[token];
  }
  return node !== null && (typeof node === "object" || typeof node === "boolean");
}

function withFormats<T extends Ajv>(ajv: T): T {
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

/**
 * Makes an ajv compile error readable: `schema is invalid: data/properties/a/type must be …` names
 * the place in the schema as a JSON Pointer (`/properties/a/type must be …`), once per place (ajv
 * reports each branch of its meta-schema's `anyOf`; the first says what is wrong).
 */
export function compileErrorMessage(error: unknown): string {
  const message = errorMessage(error);
  const prefix = "schema is invalid: ";
  if (!message.startsWith(prefix)) return message;
  // The type hints of typeHints() ride at the end; keep them out of the per-place dedup.
  const hints = /(?:; "[^"]*" is not a JSON Schema type \(did you mean "[a-z]+"\?\))+$/.exec(
    message,
  );
  const body = hints ? message.slice(0, hints.index) : message;
  const seen = new Set<string>();
  const parts: string[] = [];
  for (const part of body.slice(prefix.length).split(", data")) {
    const text = part.startsWith("data") ? part.slice(4) : part;
    const place = text.split(" ")[0];
    if (seen.has(place)) continue;
    seen.add(place);
    parts.push(text.startsWith(" ") ? `(root)${text}` : text);
  }
  return `${prefix}${parts.join("; ")}${hints?.[0] ?? ""}`;
}
