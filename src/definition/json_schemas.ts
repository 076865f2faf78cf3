/**
 * JSON Schemas of `agent.json` and `steps_registry.json`, generated from the zod schemas
 * (`z.toJSONSchema`) — never written by hand. `deno task schemas` writes them to `agents/schemas/`;
 * a test fails when the committed files drift from {@linkcode generateSchemas}.
 *
 * @module
 */
import { z } from "zod";
import { AgentConfigSchema, StepsRegistrySchema } from "./schema.ts";
import { deepFreeze } from "./deep_freeze.ts";

/** File name of the generated agent.json schema. */
export const AGENT_SCHEMA_FILE = "agent.schema.json";
/** File name of the generated steps_registry.json schema. */
export const REGISTRY_SCHEMA_FILE = "steps_registry.schema.json";

/** A JSON Schema document. */
export type JsonSchemaDocument = Record<string, unknown>;

let agentSchema: JsonSchemaDocument | undefined;
let registrySchema: JsonSchemaDocument | undefined;

/** The JSON Schema of `agent.json` (computed once, frozen). */
export function agentJsonSchema(): JsonSchemaDocument {
  return agentSchema ??= build(AgentConfigSchema, "stepflow agent.json");
}

/** The JSON Schema of `steps_registry.json` (computed once, frozen). */
export function registryJsonSchema(): JsonSchemaDocument {
  return registrySchema ??= build(StepsRegistrySchema, "stepflow steps_registry.json");
}

/** zod names its string checks as formats that no JSON Schema tool knows; each comes with a pattern. */
const ZOD_ONLY_FORMATS = new Set(["starts_with", "ends_with", "includes"]);

function build(schema: z.ZodType, title: string): JsonSchemaDocument {
  const generated = z.toJSONSchema(schema) as JsonSchemaDocument;
  dropZodFormats(generated);
  const { $schema, ...rest } = generated;
  // $schema first, then a title so editors show what the file is.
  return deepFreeze({ $schema, title, ...rest });
}

function dropZodFormats(node: unknown): void {
  if (node === null || typeof node !== "object") return;
  const record = node as Record<string, unknown>;
  if (
    typeof record.format === "string" && ZOD_ONLY_FORMATS.has(record.format) &&
    typeof record.pattern === "string"
  ) {
    delete record.format;
  }
  for (const value of Object.values(record)) dropZodFormats(value);
}

/**
 * The text of both generated JSON Schema files, keyed by file name: two-space indented JSON ending in
 * a newline, exactly what `deno task schemas` writes to `agents/schemas/`.
 *
 * @example
 * ```ts
 * import { generateSchemas } from "./json_schemas.ts";
 * const files = generateSchemas();
 * console.log(Object.keys(files)); // ["agent.schema.json", "steps_registry.schema.json"]
 * ```
 */
export function generateSchemas(): Record<string, string> {
  return {
    [AGENT_SCHEMA_FILE]: `${JSON.stringify(agentJsonSchema(), null, 2)}\n`,
    [REGISTRY_SCHEMA_FILE]: `${JSON.stringify(registryJsonSchema(), null, 2)}\n`,
  };
}
