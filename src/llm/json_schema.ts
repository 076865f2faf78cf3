/**
 * Compiling JSON Schemas with ajv, the same way for every caller (the runner's output schemas and
 * QPlan's `ai … schema=…`), and formatting ajv's findings as lines a model can act on.
 *
 * @module
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020";
import addFormats from "ajv-formats";

/** Compiles one JSON Schema (draft-07 unless `$schema` names 2020-12); throws when it does not compile. */
export type SchemaCompiler = (schema: Record<string, unknown>) => ValidateFunction;

/**
 * A compiler with its own ajv instances (`allErrors`, non-strict, ajv-formats). Keep one per owner:
 * ajv keeps every schema it compiled, so a shared instance would grow forever.
 *
 * @example
 * ```ts
 * import { createSchemaCompiler, formatValidationErrors } from "./json_schema.ts";
 * const validate = createSchemaCompiler()({ type: "object", required: ["a"] });
 * validate({}) || console.log(formatValidationErrors(validate.errors)); // ["(root): must have required property 'a'"]
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
