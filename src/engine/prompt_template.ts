/**
 * The built-in prompts (`prompts/plan/*.md`, `prompts/planspec/*.md`) and their one template
 * syntax: `{name}`, one brace, as in agent prompts (`{uv-topic}`, `{step_id}`). They are read
 * relative to this module, with `Deno.readTextFile` for local files and `fetch` when the module is
 * loaded from a URL (a published package).
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";

/** A placeholder (`{name}`), or the old double-brace form (`{{name}}`, `{{ name }}`) to refuse. */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Fills the `{name}` placeholders of a built-in prompt template in one pass (a substituted value
 * is never scanned again). Every placeholder must have a value; other braces — JSON examples,
 * `{ "a": 1 }` — are left alone.
 *
 * @throws {StepflowError} `PROMPT_VARIABLES_MISSING` naming every placeholder without a value;
 * `PROMPT_TEMPLATE_INVALID` when the template uses the double-brace form `{{name}}`
 *
 * @example
 * ```ts
 * import { renderPromptTemplate } from "./prompt_template.ts";
 * renderPromptTemplate('Do {task}. Answer {"ok": true}.', { task: "{x}" });
 * // 'Do {x}. Answer {"ok": true}.'
 * ```
 */
export function renderPromptTemplate(
  template: string,
  values: Readonly<Record<string, string>>,
): string {
  const missing = new Set<string>();
  const doubled = new Set<string>();
  const out = template.replace(PLACEHOLDER, (match, old: string | undefined, name: string) => {
    if (old !== undefined) {
      doubled.add(old);
      return match;
    }
    if (Object.hasOwn(values, name)) return values[name];
    missing.add(name);
    return match;
  });
  if (doubled.size > 0) {
    const names = [...doubled];
    throw new StepflowError(
      "PROMPT_TEMPLATE_INVALID",
      `Prompt template uses ${names.map((n) => `{{${n}}}`).join(", ")}: placeholders are written ` +
        `with one brace, as in agent prompts — ${names.map((n) => `{${n}}`).join(", ")}.`,
      { details: { doubled: names } },
    );
  }
  if (missing.size > 0) {
    const names = [...missing];
    throw new StepflowError(
      "PROMPT_VARIABLES_MISSING",
      `Prompt template uses ${names.map((n) => `{${n}}`).join(", ")}, which ${
        names.length === 1 ? "has" : "have"
      } no value (known: ${Object.keys(values).join(", ")}).`,
      { details: { missing: names } },
    );
  }
  return out;
}

const cache = new Map<string, Promise<string>>();

/**
 * Reads a built-in prompt, `prompts/<path>` of this package (cached; a failed read is retried on
 * the next call).
 *
 * @throws {StepflowError} `PROMPT_NOT_FOUND` when the file cannot be read
 *
 * @example
 * ```ts
 * import { readBuiltinPrompt } from "./prompt_template.ts";
 * const template = await readBuiltinPrompt("plan/generate.md");
 * console.log(template.includes("{task}")); // true
 * ```
 */
export function readBuiltinPrompt(path: string): Promise<string> {
  let pending = cache.get(path);
  if (!pending) {
    pending = readPrompt(new URL(`../../prompts/${path}`, import.meta.url));
    pending.catch(() => cache.delete(path));
    cache.set(path, pending);
  }
  return pending;
}

async function readPrompt(url: URL): Promise<string> {
  try {
    if (url.protocol === "file:") return await Deno.readTextFile(url);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.text();
  } catch (error) {
    throw new StepflowError(
      "PROMPT_NOT_FOUND",
      `Cannot read the built-in prompt ${url.href}: ${
        errorMessage(error)
      }. The package installation may be incomplete.`,
      { cause: error, details: { url: url.href } },
    );
  }
}
