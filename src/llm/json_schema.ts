/**
 * Compiling JSON Schemas with ajv, the same way for every caller (the runner's output schemas and
 * QPlan's `ai … schema=…`), and formatting ajv's findings as lines a model can act on.
 *
 * @module
 */
import type { ErrorObject, ValidateFunction } from "ajv";

/**
 * The one JSON Schema compiler (ajv: draft-07 unless `$schema` names 2020-12, `allErrors`,
 * non-strict, ajv-formats), shared with the agent loader so that a schema that loads is a schema
 * that runs. It lives in `src/definition/` because the loader may not import `llm`.
 */
export { createSchemaCompiler, type SchemaCompiler } from "../definition/schema_compiler.ts";

/**
 * Formats ajv errors as one line each: `/next_action/action: must be equal to one of the allowed values (next, repeat)`.
 */
export function formatValidationErrors(errors: ErrorObject[] | null | undefined): string[] {
  if (!errors) return [];
  return errors.map((e) => {
    const where = e.instancePath === "" ? "(root)" : e.instancePath;
    const extra = e.keyword === "enum"
      ? ` (${
        (e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(
          ", ",
        )
      })`
      : e.keyword === "const"
      ? ` (${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)})`
      : e.keyword === "additionalProperties"
      ? ` ("${(e.params as { additionalProperty: string }).additionalProperty}")`
      : "";
    return `${where}: ${e.message ?? e.keyword}${extra}`;
  });
}

/** The problems `validate` found in `value` (empty when it is valid), for `askStructured`. */
export function validationProblems(validate: ValidateFunction, value: unknown): string[] {
  return validate(value) ? [] : formatValidationErrors(validate.errors);
}
