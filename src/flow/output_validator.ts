/**
 * Output schemas for gate-routed steps: resolved from disk at every iteration (the two-strike rule
 * needs that), with a stat-based cache so an unchanged file is not re-read, and each schema compiled
 * by ajv once.
 *
 * @module
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { resolve } from "node:path";
import type { OutputSchemaRef } from "../definition/schema.ts";
import {
  resolveOutputSchema,
  SchemaResolutionError,
  SCHEMAS_DIR,
} from "../definition/output_schema.ts";

/** A resolved, compiled output schema. */
export interface CompiledOutputSchema {
  /** Self-contained JSON Schema (sent to the backend). */
  schema: Record<string, unknown>;
  /** Absolute schema file. */
  file: string;
  /** The pointer. */
  pointer: string;
  /** Validates an output; errors are in `validate.errors`. */
  validate: ValidateFunction;
}

interface CacheEntry {
  mtimeMs: number;
  size: number;
  compiled: CompiledOutputSchema;
}

/**
 * Resolves and compiles output schemas, re-reading a file only when its mtime or size changed.
 *
 * @example
 * ```ts ignore
 * const schemas = new OutputSchemaCache("/repo/.agent/issue-solver");
 * const s = await schemas.resolve({ file: "issue.schema.json", schema: "#/definitions/initial.issue" });
 * s.validate(output) || console.log(formatValidationErrors(s.validate.errors));
 * ```
 */
export class OutputSchemaCache {
  readonly #agentDir: string;
  readonly #entries = new Map<string, CacheEntry>();
  #draft07?: Ajv;
  #draft2020?: Ajv2020;

  /** @param agentDir absolute agent folder */
  constructor(agentDir: string) {
    this.#agentDir = agentDir;
  }

  /**
   * Resolves `ref` now. Throws {@linkcode SchemaResolutionError} when the file or pointer is missing,
   * the file is not JSON, or the schema does not compile.
   */
  async resolve(ref: OutputSchemaRef, stepId?: string): Promise<CompiledOutputSchema> {
    const key = `${ref.file}\0${ref.schema}`;
    const file = resolve(this.#agentDir, SCHEMAS_DIR, ref.file);
    const cached = this.#entries.get(key);
    if (cached) {
      // A sync stat is ~20x cheaper than an async one and this runs on every iteration.
      let info: Deno.FileInfo | undefined;
      try {
        info = Deno.statSync(file);
      } catch {
        info = undefined;
      }
      if (info && (info.mtime?.getTime() ?? 0) === cached.mtimeMs && info.size === cached.size) {
        return cached.compiled;
      }
      this.#entries.delete(key);
    }
    const resolved = await resolveOutputSchema(this.#agentDir, ref, stepId);
    let validate: ValidateFunction;
    try {
      validate = this.#compile(resolved.schema);
    } catch (error) {
      throw new SchemaResolutionError(
        `Schema ${ref.schema} in ${resolved.file}${
          stepId ? ` (step "${stepId}")` : ""
        } does not compile: ${(error as Error).message}`,
        { file: resolved.file, pointer: ref.schema, stepId },
      );
    }
    const compiled: CompiledOutputSchema = {
      schema: resolved.schema,
      file: resolved.file,
      pointer: ref.schema,
      validate,
    };
    const info = await Deno.stat(resolved.file).catch(() => undefined);
    this.#entries.set(key, {
      mtimeMs: info?.mtime?.getTime() ?? resolved.mtimeMs,
      size: info?.size ?? -1,
      compiled,
    });
    return compiled;
  }

  #compile(schema: Record<string, unknown>): ValidateFunction {
    // $id would clash when the same file is compiled again after an edit.
    const { $id: _id, ...withoutId } = schema;
    const is2020 = typeof schema.$schema === "string" && schema.$schema.includes("2020-12");
    if (is2020) {
      this.#draft2020 ??= withFormats(new Ajv2020({ allErrors: true, strict: false }));
      return this.#draft2020.compile(withoutId);
    }
    this.#draft07 ??= withFormats(new Ajv({ allErrors: true, strict: false }));
    const { $schema: _s, ...draft07 } = withoutId;
    return this.#draft07.compile(draft07);
  }
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
