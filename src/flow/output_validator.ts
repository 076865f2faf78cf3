/**
 * Output schemas for gate-routed steps: resolved from disk at every iteration (the two-strike rule
 * needs that), with a stat-based cache so an unchanged file is not re-read, and each schema compiled
 * by ajv once.
 *
 * @module
 */
import type { ValidateFunction } from "ajv";
import type { OutputSchemaRef } from "../definition/schema.ts";
import {
  resolveOutputSchema,
  type SchemaFileStamp,
  SchemaResolutionError,
} from "../definition/output_schema.ts";
import { compileErrorMessage, createSchemaCompiler } from "../definition/schema_compiler.ts";
import { formatValidationErrors } from "../llm/json_schema.ts";
import { PERMISSION_ANSWER_SCHEMA } from "./input_request.ts";

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
  /** The step's schema file and every file it `$ref`s, as they were when compiled. */
  files: readonly SchemaFileStamp[];
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
  readonly #keys = new WeakMap<OutputSchemaRef, { file: string; schema: string; key: string }>();
  // The loader compiles with the same compiler, so a schema that loads is one that runs.
  readonly #compile = createSchemaCompiler();

  /** @param agentDir absolute agent folder */
  constructor(agentDir: string) {
    this.#agentDir = agentDir;
  }

  /**
   * The cache key of `ref`: a step's reference is the same object at every iteration, so its key
   * is made once (the fields are compared too: a reference changed in place gets a new key).
   */
  #keyOf(ref: OutputSchemaRef): string {
    const known = this.#keys.get(ref);
    if (known !== undefined && known.file === ref.file && known.schema === ref.schema) {
      return known.key;
    }
    const key = `${ref.file}\0${ref.schema}`;
    this.#keys.set(ref, { file: ref.file, schema: ref.schema, key });
    return key;
  }

  /**
   * Resolves `ref` now. Throws {@linkcode SchemaResolutionError} when the file or pointer is missing,
   * the file is not JSON, or the schema does not compile.
   */
  async resolve(ref: OutputSchemaRef, stepId?: string): Promise<CompiledOutputSchema> {
    const key = this.#keyOf(ref);
    const cached = this.#entries.get(key);
    if (cached) {
      if (allUnchanged(cached.files)) return cached.compiled;
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
        } does not compile: ${compileErrorMessage(error)}`,
        { file: resolved.file, pointer: ref.schema, stepId },
      );
    }
    const compiled: CompiledOutputSchema = {
      schema: resolved.schema,
      file: resolved.file,
      pointer: ref.schema,
      validate,
    };
    this.#entries.set(key, { files: resolved.files, compiled });
    return compiled;
  }
}

let permissionSchema: CompiledOutputSchema | undefined;

/** The compiled answer schema of a permission request (`{ "decision": "allow" | "deny" }`). */
export function permissionAnswerSchema(): CompiledOutputSchema {
  if (permissionSchema) return permissionSchema;
  const schema = { ...PERMISSION_ANSWER_SCHEMA };
  return permissionSchema = {
    schema,
    file: "the permission answer schema",
    pointer: '{ "decision": "allow" | "deny" }',
    validate: createSchemaCompiler()(schema),
  };
}

/** True when every file still has the mtime and size it had when read. */
function allUnchanged(files: readonly SchemaFileStamp[]): boolean {
  for (const stamp of files) if (!unchanged(stamp)) return false;
  return true;
}

/** True when `stamp.file` still has the mtime and size it had when read. */
function unchanged(stamp: SchemaFileStamp): boolean {
  // A sync stat is ~20x cheaper than an async one and this runs on every iteration.
  try {
    const info = Deno.statSync(stamp.file);
    return (info.mtime?.getTime() ?? 0) === stamp.mtimeMs && info.size === stamp.size;
  } catch {
    return false;
  }
}

/** Formats ajv errors as one line each (see `src/llm/json_schema.ts`). */
export { formatValidationErrors };
