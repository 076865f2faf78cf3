/**
 * Compiling output JSON Schemas with ajv, the same way at load time (`--validate`, the loader) and
 * at run time (the runner's output validation), so a schema that loads is a schema that runs.
 *
 * @module
 */
import { Ajv, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020";
import addFormats from "ajv-formats";

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
  let draft07: Ajv | undefined;
  let draft2020: Ajv2020 | undefined;
  return (schema) => {
    // $id would clash when the same file is compiled again after an edit.
    const { $id: _id, ...withoutId } = schema;
    const is2020 = typeof schema.$schema === "string" && schema.$schema.includes("2020-12");
    if (is2020) {
      draft2020 ??= withFormats(new Ajv2020({ allErrors: true, strict: false }));
      return draft2020.compile(withoutId);
    }
    draft07 ??= withFormats(new Ajv({ allErrors: true, strict: false }));
    const { $schema: _s, ...rest } = withoutId;
    return draft07.compile(rest);
  };
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
  const message = error instanceof Error ? error.message : String(error);
  const prefix = "schema is invalid: ";
  if (!message.startsWith(prefix)) return message;
  const seen = new Set<string>();
  const parts: string[] = [];
  for (const part of message.slice(prefix.length).split(", data")) {
    const text = part.startsWith("data") ? part.slice(4) : part;
    const place = text.split(" ")[0];
    if (seen.has(place)) continue;
    seen.add(place);
    parts.push(text.startsWith(" ") ? `(root)${text}` : text);
  }
  return `${prefix}${parts.join("; ")}`;
}
