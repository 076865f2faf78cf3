/**
 * Resolves an `outputSchemaRef` (`{ file, schema: "#/definitions/<stepId>" }`) to a self-contained
 * JSON Schema. The runner calls this at every iteration (the two-strike rule); the loader calls it
 * once per step at load time.
 *
 * @module
 */
import { resolve } from "node:path";
import { realpath } from "node:fs/promises";
import { StepflowError } from "../errors.ts";
import { isWithin } from "../prompt/c3l_path.ts";
import { parseJsonc } from "./jsonc.ts";
import type { OutputSchemaRef } from "./schema.ts";

/** The folder (relative to the agent folder) that holds output schema files. */
export const SCHEMAS_DIR = "schemas";

/** A resolved output schema. */
export interface ResolvedOutputSchema {
  /** Absolute schema file. */
  file: string;
  /** The JSON Pointer as written. */
  pointer: string;
  /**
   * The schema at the pointer, with the document's `definitions`/`$defs` that it references
   * (transitively) attached, so local `$ref`s work and nothing else is sent to the model.
   */
  schema: Record<string, unknown>;
  /** Modification time of the file when read (for stat-based caches). */
  mtimeMs: number;
}

/** Thrown when an output schema cannot be resolved: missing file, bad JSON, or a pointer that misses. */
export class SchemaResolutionError extends StepflowError {
  /**
   * Creates the error.
   *
   * @param message what failed
   * @param details file, pointer, step
   */
  constructor(message: string, details: Record<string, unknown>) {
    super("SCHEMA_RESOLUTION_FAILED", message, { details });
  }
}

/**
 * Decodes a JSON Pointer fragment (`#/definitions/initial.issue`) into its tokens.
 *
 * @example
 * ```ts
 * import { parseJsonPointer } from "./output_schema.ts";
 * parseJsonPointer("#/definitions/a~1b"); // ["definitions", "a/b"]
 * ```
 */
export function parseJsonPointer(pointer: string): string[] {
  const body = pointer.startsWith("#") ? pointer.slice(1) : pointer;
  if (body === "") return [];
  if (!body.startsWith("/")) {
    throw new SyntaxError(`JSON Pointer ${JSON.stringify(pointer)} must start with "#/"`);
  }
  return body.slice(1).split("/").map((t) =>
    decodeURIComponent(t).replaceAll("~1", "/").replaceAll("~0", "~")
  );
}

/** A parsed schema file, before a pointer is applied (see {@linkcode loadSchemaDocument}). */
export interface SchemaDocument {
  /** Absolute schema file. */
  file: string;
  /** The parsed file. */
  document: unknown;
  /** Modification time of the file when read. */
  mtimeMs: number;
}

/**
 * Reads `<agentDir>/schemas/<ref.file>` and returns the schema at `ref.schema`.
 *
 * @throws SchemaResolutionError naming the file and pointer, with a hint on how to fix it
 */
export async function resolveOutputSchema(
  agentDir: string,
  ref: OutputSchemaRef,
  stepId?: string,
): Promise<ResolvedOutputSchema> {
  return schemaAtPointer(await loadSchemaDocument(agentDir, ref, stepId), ref, stepId);
}

/**
 * Reads and parses the schema file of `ref` (`<agentDir>/schemas/<ref.file>`), refusing files that
 * leave the schemas folder. Callers that resolve many pointers into one file (the loader) read it
 * once with this and apply each pointer with {@linkcode schemaAtPointer}.
 *
 * @throws SchemaResolutionError when the file is missing, outside the folder, or not JSON
 */
export async function loadSchemaDocument(
  agentDir: string,
  ref: OutputSchemaRef,
  stepId?: string,
): Promise<SchemaDocument> {
  const dir = resolve(agentDir, SCHEMAS_DIR);
  const file = resolve(dir, ref.file);
  const where = stepId ? ` (step "${stepId}")` : "";
  const details = { file, pointer: ref.schema, stepId };
  if (!isWithin(dir, file)) {
    throw new SchemaResolutionError(
      `outputSchemaRef.file ${JSON.stringify(ref.file)}${where} leaves the schemas folder ${dir}.`,
      details,
    );
  }
  let text: string;
  let mtimeMs = 0;
  try {
    const real = await realpath(file);
    if (!isWithin(await realpath(dir), real)) {
      throw new SchemaResolutionError(
        `Schema file ${file}${where} is a link to ${real}, outside the schemas folder.`,
        details,
      );
    }
    const info = await Deno.stat(real);
    mtimeMs = info.mtime?.getTime() ?? 0;
    text = await Deno.readTextFile(real);
  } catch (error) {
    if (error instanceof SchemaResolutionError) throw error;
    throw new SchemaResolutionError(
      `Schema file not found: ${file}${where}. Create it, or fix outputSchemaRef.file.`,
      details,
    );
  }
  let document: unknown;
  try {
    document = parseJsonc(text, file);
  } catch (error) {
    throw new SchemaResolutionError(
      `Schema file ${file}${where} is not valid JSON: ${(error as Error).message}`,
      details,
    );
  }
  return { file, document, mtimeMs };
}

/**
 * Applies the JSON Pointer of `ref` to a loaded schema document and returns a self-contained schema:
 * the document's `definitions`/`$defs` that the schema references (transitively) are attached, so
 * local `$ref`s work; other steps' definitions are left out.
 *
 * @throws SchemaResolutionError when the pointer is malformed or does not lead to an object
 */
export function schemaAtPointer(
  loaded: SchemaDocument,
  ref: OutputSchemaRef,
  stepId?: string,
): ResolvedOutputSchema {
  const node = findSchemaNode(loaded, ref, stepId);
  const { file, document, mtimeMs } = loaded;
  return { file, pointer: ref.schema, schema: selfContained(document, node), mtimeMs };
}

/**
 * The object the JSON Pointer of `ref` names in a loaded schema document, as is (no copy) — what
 * load-time validation needs to know that a pointer resolves.
 *
 * @throws SchemaResolutionError when the pointer is malformed or does not lead to an object
 */
export function findSchemaNode(
  loaded: SchemaDocument,
  ref: OutputSchemaRef,
  stepId?: string,
): Record<string, unknown> {
  const { file, document } = loaded;
  const where = stepId ? ` (step "${stepId}")` : "";
  const details = { file, pointer: ref.schema, stepId };
  let tokens: string[];
  try {
    tokens = parseJsonPointer(ref.schema);
  } catch (error) {
    throw new SchemaResolutionError(`${(error as Error).message}${where}.`, details);
  }
  let node: unknown = document;
  for (const token of tokens) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, token)) {
      node = undefined;
      break;
    }
    node = (node as Record<string, unknown>)[token];
  }
  if (node === null || typeof node !== "object" || Array.isArray(node)) {
    const defs = listDefinitions(document);
    throw new SchemaResolutionError(
      `Schema pointer ${ref.schema} not found in ${file}${where}.${
        defs.length ? ` Available: ${defs.join(", ")}.` : ""
      } Fix outputSchemaRef.schema or add the definition.`,
      details,
    );
  }
  return node as Record<string, unknown>;
}

function listDefinitions(document: unknown): string[] {
  if (document === null || typeof document !== "object") return [];
  const out: string[] = [];
  for (const key of ["definitions", "$defs"]) {
    const defs = (document as Record<string, unknown>)[key];
    if (defs && typeof defs === "object") {
      for (const name of Object.keys(defs)) out.push(`#/${key}/${name}`);
    }
  }
  return out;
}

/**
 * The schema at `node` made self-contained: the definitions of the document (and of the node
 * itself) that the node references through local `$ref`s (`#/definitions/x`, `#/$defs/x`),
 * transitively — not every step's definition of a shared file, since the schema is sent to the
 * model with every call. A local `$ref` that is not a definitions pointer (an anchor such as
 * `#node`) keeps every definition, as it cannot be followed here.
 */
function selfContained(document: unknown, node: object): Record<string, unknown> {
  const root = document as Record<string, unknown>;
  const out: Record<string, unknown> = { ...(node as Record<string, unknown>) };
  const pools: Partial<Record<DefinitionsKey, Record<string, unknown>>> = {};
  for (const key of DEFINITIONS_KEYS) {
    const own = isRecord(out[key]) ? out[key] : undefined;
    const shared = node !== document && isRecord(root[key]) ? root[key] : undefined;
    if (own || shared) pools[key] = { ...shared, ...own };
    delete out[key];
  }
  const used = referencedDefinitions(out, pools);
  for (const key of DEFINITIONS_KEYS) {
    const pool = pools[key];
    if (!pool) continue;
    const names = used === "all" ? Object.keys(pool) : [...(used.get(key) ?? [])];
    if (names.length === 0) continue;
    const kept: Record<string, unknown> = {};
    for (const name of names) kept[name] = pool[name];
    out[key] = kept;
  }
  if (node !== document && typeof root.$schema === "string" && out.$schema === undefined) {
    out.$schema = root.$schema;
  }
  return out;
}

const DEFINITIONS_KEYS = ["definitions", "$defs"] as const;
type DefinitionsKey = typeof DEFINITIONS_KEYS[number];

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The definitions `schema` reaches through local `$ref`s, following each definition's own refs;
 * `"all"` when a local `$ref` is not a definitions pointer. Walks with an explicit stack and
 * visits each definition once, so cycles and deep schemas are safe.
 */
function referencedDefinitions(
  schema: Record<string, unknown>,
  pools: Partial<Record<DefinitionsKey, Record<string, unknown>>>,
): Map<DefinitionsKey, Set<string>> | "all" {
  const used = new Map<DefinitionsKey, Set<string>>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== "object") continue;
    if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
      continue;
    }
    for (const [key, child] of Object.entries(value)) {
      if (key === "$ref" && typeof child === "string" && child.startsWith("#")) {
        if (child === "#") continue;
        // An anchor (`#node`) cannot be followed here: keep every definition.
        if (!child.startsWith("#/")) return "all";
        const [defsKey, name] = safePointer(child) ?? [];
        // A pointer into the schema itself (`#/properties/a`) is walked with the schema.
        if (!DEFINITIONS_KEYS.includes(defsKey as DefinitionsKey) || name === undefined) continue;
        const pool = pools[defsKey as DefinitionsKey];
        if (!pool || !Object.hasOwn(pool, name)) continue; // the schema compiler reports it
        const names = used.get(defsKey as DefinitionsKey) ?? new Set<string>();
        used.set(defsKey as DefinitionsKey, names);
        if (!names.has(name)) {
          names.add(name);
          stack.push(pool[name]);
        }
      } else stack.push(child);
    }
  }
  return used;
}

function safePointer(pointer: string): string[] | undefined {
  try {
    return parseJsonPointer(pointer);
  } catch {
    return undefined;
  }
}
