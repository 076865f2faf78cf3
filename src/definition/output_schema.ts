/**
 * Resolves an `outputSchemaRef` (`{ file, schema: "#/definitions/<stepId>" }`) to a self-contained
 * JSON Schema. The runner calls this at every iteration (the two-strike rule); the loader calls it
 * once per step at load time.
 *
 * A schema may `$ref` other files in the agent's `schemas/` folder
 * (`"$ref": "common.schema.json#/$defs/verdict"`); those are bundled into the result (under
 * `$defs`), so the schema stays self-contained for ajv and for backends. Every file read —
 * the step's own and the ones it references — must stay inside `schemas/`, and `schemas/` inside the
 * agent folder, symbolic links resolved.
 *
 * @module
 */
import { dirname, relative, resolve } from "node:path";
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
  /** The schema at the pointer, with the document's `definitions`/`$defs` attached so local `$ref`s work. */
  schema: Record<string, unknown>;
  /** Modification time of the file when read (for stat-based caches). */
  mtimeMs: number;
  /**
   * Every file the schema was built from — the step's own file first, then each file reached
   * through a `$ref` — with its modification time and size when read (for stat-based caches).
   */
  files: readonly SchemaFileStamp[];
}

/** A file an output schema was built from, as it was when read. */
export interface SchemaFileStamp {
  /** Absolute file. */
  file: string;
  /** Modification time in ms. */
  mtimeMs: number;
  /** Size in bytes. */
  size: number;
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
  /** Size of the file when read. */
  size?: number;
}

/**
 * Reads a schema file given relative to the schemas folder (`common.schema.json`); the same file is
 * read once per loader (see {@linkcode createSchemaDocumentLoader}).
 */
export type SchemaDocumentLoader = (file: string) => Promise<SchemaDocument>;

/**
 * A {@linkcode SchemaDocumentLoader} that reads each file of `<agentDir>/schemas/` at most once.
 * The loader shares one across every step of an agent; the runner uses one per resolution.
 *
 * @param agentDir absolute agent folder
 * @param stepId named in error messages
 */
export function createSchemaDocumentLoader(
  agentDir: string,
  stepId?: string,
): SchemaDocumentLoader {
  const cache = new Map<string, Promise<SchemaDocument>>();
  return (file) => {
    const key = resolve(agentDir, SCHEMAS_DIR, file);
    let pending = cache.get(key);
    if (!pending) {
      pending = loadSchemaDocument(agentDir, { file, schema: "#" }, stepId);
      cache.set(key, pending);
    }
    return pending;
  };
}

/**
 * Reads `<agentDir>/schemas/<ref.file>` and returns the schema at `ref.schema`, with every `$ref`
 * to another file of `schemas/` bundled in.
 *
 * @param agentDir absolute agent folder
 * @param ref the step's `outputSchemaRef`
 * @param stepId named in error messages
 * @param load reads schema files (default: a fresh {@linkcode createSchemaDocumentLoader})
 * @throws SchemaResolutionError naming the file and pointer, with a hint on how to fix it
 */
export async function resolveOutputSchema(
  agentDir: string,
  ref: OutputSchemaRef,
  stepId?: string,
  load: SchemaDocumentLoader = createSchemaDocumentLoader(agentDir, stepId),
): Promise<ResolvedOutputSchema> {
  const root = await load(ref.file);
  const resolved = schemaAtPointer(root, ref, stepId);
  const used = new Map<string, SchemaDocument>([[root.file, root]]);
  resolved.schema = await bundleExternalRefs(resolved.schema, {
    agentDir,
    rootFile: root.file,
    stepId,
    load: async (file) => {
      const doc = await load(file);
      used.set(doc.file, doc);
      return doc;
    },
  });
  resolved.files = [...used.values()].map((d) => ({
    file: d.file,
    mtimeMs: d.mtimeMs,
    size: d.size ?? -1,
  }));
  return resolved;
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
  let size = -1;
  try {
    const realDir = await realpath(dir);
    const realAgentDir = await realpath(agentDir);
    if (!isWithin(realAgentDir, realDir)) {
      throw new SchemaResolutionError(
        `Refused schemas folder ${dir}${where}: it is a symbolic link to ${realDir}, outside the agent folder ${realAgentDir}. Make schemas/ a real folder inside the agent.`,
        details,
      );
    }
    const real = await realpath(file);
    if (!isWithin(realDir, real)) {
      throw new SchemaResolutionError(
        `Schema file ${file}${where} is a link to ${real}, outside the schemas folder.`,
        details,
      );
    }
    const info = await Deno.stat(real);
    mtimeMs = info.mtime?.getTime() ?? 0;
    size = info.size;
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
  return { file, document, mtimeMs, size };
}

/**
 * Applies the JSON Pointer of `ref` to a loaded schema document and returns a self-contained schema
 * (the document's `definitions`/`$defs` attached so local `$ref`s work).
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
  return {
    file,
    pointer: ref.schema,
    schema: selfContained(document, node),
    mtimeMs,
    files: [{ file, mtimeMs, size: loaded.size ?? -1 }],
  };
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
 * The schema at a pointer with the document's definitions it uses — the ones its local `$ref`s
 * (`#/definitions/x`, `#/$defs/x`) reach, transitively — attached, so it stands alone. Other
 * steps' definitions stay out: they are not sent to a backend, and a typo in one is blamed on the
 * step that uses it. A `$ref` to an anchor (`#node`) keeps every definition.
 */
function selfContained(document: unknown, node: object): Record<string, unknown> {
  const root = document as Record<string, unknown>;
  const out: Record<string, unknown> = { ...(node as Record<string, unknown>) };
  if (node === document) return out;
  const attached = new Map<string, Record<string, unknown>>();
  const pending: unknown[] = [node];
  let anchored = false;
  while (pending.length > 0) {
    forEachRef(pending.pop(), 0, (ref) => {
      // An anchor (`#node`) names a definition by its `$anchor`/`$id`, which is not followed here.
      if (ref.startsWith("#") && ref !== "#" && !ref.startsWith("#/")) anchored = true;
      if (!ref.startsWith("#/")) return;
      const [container, name] = parseJsonPointerSafe(ref);
      if ((container !== "definitions" && container !== "$defs") || name === undefined) return;
      const defs = root[container];
      if (defs === null || typeof defs !== "object" || !Object.hasOwn(defs, name)) return;
      let into = attached.get(container);
      if (!into) attached.set(container, into = {});
      if (Object.hasOwn(into, name)) return;
      const definition = (defs as Record<string, unknown>)[name];
      into[name] = definition;
      pending.push(definition);
    });
  }
  if (anchored) {
    // Keep every definition rather than drop the one the anchor names.
    for (const container of ["definitions", "$defs"]) {
      const defs = root[container];
      if (defs !== null && typeof defs === "object") attached.set(container, { ...defs });
    }
  }
  for (const [container, defs] of attached) {
    out[container] = { ...defs, ...(out[container] as object | undefined) };
  }
  if (typeof root.$schema === "string" && out.$schema === undefined) out.$schema = root.$schema;
  return out;
}

/** Calls `visit` with every `$ref` string in a schema (not inside data keywords such as `enum`). */
function forEachRef(value: unknown, depth: number, visit: (ref: string) => void): void {
  if (value === null || typeof value !== "object" || depth > MAX_SCHEMA_NESTING) return;
  if (Array.isArray(value)) {
    for (const item of value) forEachRef(item, depth + 1, visit);
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    if (key === "$ref" && typeof child === "string") visit(child);
    else if (!DATA_KEYWORDS.has(key)) forEachRef(child, depth + 1, visit);
  }
}

/** Schemas nested deeper than this are refused while bundling (a schema is configuration, not data). */
export const MAX_SCHEMA_NESTING = 512;

interface BundleContext {
  agentDir: string;
  rootFile: string;
  stepId?: string;
  load: SchemaDocumentLoader;
}

/** Keywords whose values are data, not schemas: a `$ref` key inside them is not a reference. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

/**
 * Rewrites every `$ref` that names another file of `schemas/` (`common.schema.json#/$defs/x`,
 * relative to the file it is written in) into a local `#/$defs/<name>` and copies the target in —
 * transitively, cycles included. Returns `schema` itself when it references no other file.
 */
async function bundleExternalRefs(
  schema: Record<string, unknown>,
  ctx: BundleContext,
): Promise<Record<string, unknown>> {
  if (!hasExternalRef(schema, 0)) return schema;
  const container = schema.definitions !== undefined && schema.$defs === undefined
    ? "definitions"
    : "$defs";
  const existing = schema[container];
  const taken = new Set(
    existing && typeof existing === "object" ? Object.keys(existing as object) : [],
  );
  const bundled: Record<string, unknown> = {};
  const names = new Map<string, string>();
  const schemasDir = resolve(ctx.agentDir, SCHEMAS_DIR);
  const where = ctx.stepId ? ` (step "${ctx.stepId}")` : "";

  const targetName = async (file: string, fragment: string, ref: string, from: string) => {
    const key = `${file}${fragment}`;
    const known = names.get(key);
    if (known !== undefined) return known;
    const stem = relative(schemasDir, file).replace(/\.(schema\.)?jsonc?$/, "");
    const last = parseJsonPointerSafe(fragment).at(-1) ?? "root";
    const base = `${stem}.${last}`.replace(/[^A-Za-z0-9_.-]/g, "_");
    let name = base;
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
    taken.add(name);
    names.set(key, name);
    const document = await ctx.load(relative(schemasDir, file));
    let node: Record<string, unknown>;
    try {
      node = findSchemaNode(document, { file: relative(schemasDir, file), schema: fragment });
    } catch (error) {
      throw new SchemaResolutionError(
        `$ref ${JSON.stringify(ref)} in ${from}${where} does not resolve: ${
          (error as Error).message.replace(
            / Fix outputSchemaRef\.schema or add the definition\.$/,
            "",
          )
        } Fix the $ref, or add the definition.`,
        { file: from, ref, stepId: ctx.stepId },
      );
    }
    bundled[name] = await rewrite(node, file, 0);
    return name;
  };

  const refTarget = async (ref: string, from: string): Promise<string> => {
    const hash = ref.indexOf("#");
    const filePart = hash < 0 ? ref : ref.slice(0, hash);
    const fragment = hash < 0 ? "#" : ref.slice(hash);
    if (filePart === "") {
      if (from === ctx.rootFile) return ref;
      return `#/${container}/${await targetName(from, fragment, ref, from)}`;
    }
    const file = refFile(filePart, from, schemasDir, ref, where);
    return `#/${container}/${await targetName(file, fragment, ref, from)}`;
  };

  const rewrite = async (value: unknown, from: string, depth: number): Promise<unknown> => {
    if (depth > MAX_SCHEMA_NESTING) {
      throw new SchemaResolutionError(
        `Schema in ${from}${where} is nested more than ${MAX_SCHEMA_NESTING} levels deep.`,
        { file: from, stepId: ctx.stepId },
      );
    }
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const item of value) out.push(await rewrite(item, from, depth + 1));
      return out;
    }
    if (value === null || typeof value !== "object") return value;
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) {
      if (key === "$ref" && typeof child === "string") out[key] = await refTarget(child, from);
      else if ((key === "$id" || key === "$schema") && from !== ctx.rootFile) continue;
      else if (DATA_KEYWORDS.has(key)) out[key] = child;
      else out[key] = await rewrite(child, from, depth + 1);
    }
    return out;
  };

  const out = await rewrite(schema, ctx.rootFile, 0) as Record<string, unknown>;
  out[container] = { ...(out[container] as object | undefined), ...bundled };
  return out;
}

function hasExternalRef(value: unknown, depth: number): boolean {
  let found = false;
  forEachRef(value, depth, (ref) => {
    if (!ref.startsWith("#")) found = true;
  });
  return found;
}

/** The absolute file a `$ref`'s file part names, refused when it could leave `schemas/`. */
function refFile(
  filePart: string,
  from: string,
  schemasDir: string,
  ref: string,
  where: string,
): string {
  let path: string;
  try {
    path = decodeURIComponent(filePart);
  } catch {
    path = filePart;
  }
  const refuse = (why: string) =>
    new SchemaResolutionError(
      `$ref ${
        JSON.stringify(ref)
      } in ${from}${where} is refused: ${why}. A $ref may name another file of the agent's schemas/ folder, relative to the file it is in (e.g. "common.schema.json#/$defs/x").`,
      { file: from, ref },
    );
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(path)) throw refuse("it is a URL, not a file of schemas/");
  if (path.startsWith("/") || path.startsWith("\\")) throw refuse("it is an absolute path");
  if (path.split(/[\\/]/).includes("..")) throw refuse('it holds ".."');
  const file = resolve(dirname(from), path);
  if (!isWithin(schemasDir, file)) throw refuse(`it resolves to ${file}, outside ${schemasDir}`);
  return file;
}

function parseJsonPointerSafe(pointer: string): string[] {
  try {
    return parseJsonPointer(pointer);
  } catch {
    return [];
  }
}
