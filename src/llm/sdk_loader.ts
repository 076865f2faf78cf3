/**
 * Loads the official SDKs on first use. The specifiers are not string literals at the `import()`
 * site, so neither `deno info mod.ts` nor a consumer's module graph pulls an SDK in: importing
 * stepflow, or running the scripted backend, never downloads or loads one.
 *
 * The specifiers are full `npm:` specifiers (not the deno.json aliases) so that they resolve for
 * JSR consumers too, who do not have this repository's import map. A test checks that they match
 * the aliases in deno.json.
 *
 * @module
 */
import { errorMessage } from "../errors.ts";
import { BackendError } from "./backend_error.ts";

/** The npm specifier of each SDK, equal to its alias in deno.json `imports`. */
export const SDK_SPECIFIERS: Readonly<Record<SdkName, string>> = Object.freeze({
  "@anthropic-ai/sdk": "npm:@anthropic-ai/sdk@^1.0.0",
  "openai": "npm:openai@^7.0.0",
  "@anthropic-ai/claude-agent-sdk": "npm:@anthropic-ai/claude-agent-sdk@^0.3.0",
});

/** The SDKs stepflow can load. */
export type SdkName = "@anthropic-ai/sdk" | "openai" | "@anthropic-ai/claude-agent-sdk";

const cache = new Map<SdkName, Promise<unknown>>();

/**
 * Imports an SDK once per process and returns its module namespace.
 *
 * @param backend the backend that needs it (named in the error message)
 * @throws {BackendError} `BACKEND_NOT_INSTALLED` when the package cannot be downloaded or loaded
 */
export function loadSdk<T>(name: SdkName, backend: string): Promise<T> {
  let pending = cache.get(name);
  if (!pending) {
    const specifier = SDK_SPECIFIERS[name];
    pending = import(specifier).catch((error) => {
      cache.delete(name);
      throw new BackendError(
        "BACKEND_NOT_INSTALLED",
        `The ${backend} backend needs the npm package ${name} (${specifier}), which could not be loaded: ${
          errorMessage(error)
        }. Deno downloads it from the npm registry on first use: check network access to registry.npmjs.org, or run \`deno cache\` on a file that imports it while online.`,
        { backend },
        error,
      );
    });
    cache.set(name, pending);
  }
  return pending as Promise<T>;
}
