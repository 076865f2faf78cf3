/**
 * Loads the PostgreSQL client (`pg`) and the queue (`pg-boss`) on first use, like the LLM SDKs
 * (`src/llm/sdk_loader.ts`): the specifiers are not string literals at the `import()` site, so
 * `deno info mod.ts` lists neither and the file store (the default) never downloads them.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";

/** The npm specifier of each package, equal to its alias in deno.json `imports`. */
export const PG_SPECIFIERS: Readonly<Record<PgPackage, string>> = Object.freeze({
  "pg": "npm:pg@^8.23.1",
  "pg-boss": "npm:pg-boss@^12.38.0",
});

/** The PostgreSQL packages stepflow can load. */
export type PgPackage = "pg" | "pg-boss";

const cache = new Map<PgPackage, Promise<unknown>>();

/**
 * Imports a PostgreSQL package once per process and returns its module namespace.
 *
 * @param name the package
 * @param purpose what needs it, for the error message ("the PostgreSQL run store")
 * @throws {StepflowError} `RUN_STORE_NOT_INSTALLED` when the package cannot be downloaded or loaded
 */
export function loadPgPackage<T>(name: PgPackage, purpose: string): Promise<T> {
  let pending = cache.get(name);
  if (!pending) {
    const specifier = PG_SPECIFIERS[name];
    pending = import(specifier).catch((error) => {
      cache.delete(name);
      throw new StepflowError(
        "RUN_STORE_NOT_INSTALLED",
        `${purpose} needs the npm package ${name} (${specifier}), which could not be loaded: ${
          errorMessage(error)
        }. Deno downloads it from the npm registry on first use: check network access to the registry, or run \`deno cache\` on a file that imports it while online.`,
        { cause: error, details: { package: name } },
      );
    });
    cache.set(name, pending);
  }
  return pending as Promise<T>;
}
