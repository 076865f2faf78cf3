/**
 * The converters of the rest of a climpt agent folder: the output schemas the steps use (each
 * definition renamed to its stepflow step, `$ref`s into other files bundled), the schema files no
 * step uses, and the folder's other files.
 *
 * @module
 */
import { join } from "node:path";
import {
  type ConvertContext,
  INTENT_RENAMES,
  type Json,
  type SchemaUse,
} from "./convert_context.ts";
import { normalizeSchemaFile } from "./schemas.ts";

/** The file that holds the generated schemas of steps that had none in climpt. */
export const GENERATED_SCHEMA_FILE = "migrated.schema.json";

/** The generated schema file: a permissive definition (any object with a `summary`) per step. */
export function generatedSchemaFile(uses: readonly SchemaUse[]): Json {
  const doc: Json = { $schema: "http://json-schema.org/draft-07/schema#", definitions: {} };
  for (const use of uses) {
    (doc.definitions as Json)[use.stepId] = {
      type: "object",
      required: ["summary"],
      properties: { summary: { type: "string", description: "What the step did" } },
    };
  }
  return doc;
}

/**
 * Writes every schema file a step uses (`ctx.schemaUses`) and returns the documents by file name;
 * then reports the source's schema files no step uses.
 */
export async function convertSchemas(ctx: ConvertContext): Promise<Map<string, Json>> {
  const { source, schemaUses, files, notes, rel, registrySrc: R } = ctx;
  const schemas = new Map<string, Json>();
  const schemaDir = join(source.dir, "schemas");
  const readSchema = (file: string): Json | undefined => {
    if (!/^[A-Za-z0-9._-]+$/.test(file)) return undefined;
    try {
      return JSON.parse(Deno.readTextFileSync(join(schemaDir, file)));
    } catch {
      return undefined;
    }
  };
  const bundledFiles = new Set<string>();
  for (const [file, uses] of schemaUses) {
    if (file === GENERATED_SCHEMA_FILE) {
      const doc = generatedSchemaFile(uses);
      schemas.set(file, doc);
      files.set(`schemas/${file}`, `${JSON.stringify(doc, null, 2)}\n`);
      continue;
    }
    const doc = readSchema(file);
    if (!doc) {
      notes.add(
        "defect",
        `schemas/${file}`,
        "missing or not JSON; the steps that use it cannot load",
        R.at(`"${file}"`),
      );
      continue;
    }
    const normalized = normalizeSchemaFile(doc, uses, readSchema, INTENT_RENAMES);
    for (const m of normalized.missing) {
      notes.add("defect", `schemas/${file}`, `${m.name}: ${m.reason}`, rel(join(schemaDir, file)));
    }
    for (const b of normalized.bundled) bundledFiles.add(b);
    if (normalized.changes.length > 0) {
      notes.add(
        "mapped",
        `schemas/${file}`,
        normalized.changes.join("; "),
        rel(join(schemaDir, file)),
      );
    }
    schemas.set(file, normalized.document);
    files.set(`schemas/${file}`, `${JSON.stringify(normalized.document, null, 2)}\n`);
  }
  await reportUnusedSchemaFiles(ctx, bundledFiles);
  return schemas;
}

async function reportUnusedSchemaFiles(
  ctx: ConvertContext,
  bundledFiles: ReadonlySet<string>,
): Promise<void> {
  const schemaDir = join(ctx.source.dir, "schemas");
  try {
    for await (const entry of Deno.readDir(schemaDir)) {
      if (!entry.isFile || ctx.schemaUses.has(entry.name)) continue;
      ctx.notes.add(
        "dropped",
        `schemas/${entry.name}`,
        bundledFiles.has(entry.name) ? "bundled into the files that $ref it" : "no step uses it",
        ctx.rel(join(schemaDir, entry.name)),
      );
    }
  } catch {
    // No schemas folder.
  }
}

/** The folder's files stepflow does not read; `README.md` is copied. */
export async function convertOtherFiles(ctx: ConvertContext): Promise<void> {
  const { source, files, notes, rel } = ctx;
  for await (const entry of Deno.readDir(source.dir)) {
    if (["agent.json", "steps_registry.json", "prompts", "schemas"].includes(entry.name)) continue;
    notes.add(
      "dropped",
      entry.name,
      entry.name === "README.md"
        ? "copied as README.md (documentation)"
        : "climpt-specific file (breakdown CLI config, registry, frontmatter schemas); not read by stepflow",
      rel(join(source.dir, entry.name)),
    );
    if (entry.name === "README.md" && entry.isFile) {
      files.set("README.md", await Deno.readTextFile(join(source.dir, entry.name)));
    }
  }
}
