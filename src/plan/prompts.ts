/**
 * The planning and recovery prompt templates in `prompts/plan/`, loaded relative to this module so
 * they are found both in a checkout and in the published package.
 *
 * @module
 */
import { errorMessage, StepflowError } from "../errors.ts";

/** The prompt templates of tool plans. */
export type PlanPromptName = "generate" | "recover" | "revise";

const cache = new Map<PlanPromptName, Promise<string>>();

/**
 * Loads `prompts/plan/<name>.md` (cached).
 *
 * @example
 * ```ts
 * import { loadPlanPrompt } from "./prompts.ts";
 * const template = await loadPlanPrompt("generate");
 * console.log(template.includes("{{task}}")); // true
 * ```
 */
export function loadPlanPrompt(name: PlanPromptName): Promise<string> {
  let pending = cache.get(name);
  if (!pending) {
    pending = readTemplate(new URL(`../../prompts/plan/${name}.md`, import.meta.url));
    cache.set(name, pending);
    pending.catch(() => cache.delete(name));
  }
  return pending;
}

async function readTemplate(url: URL): Promise<string> {
  try {
    if (url.protocol === "file:") return await Deno.readTextFile(url);
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.text();
  } catch (error) {
    throw new StepflowError(
      "PROMPT_NOT_FOUND",
      `Cannot load the built-in prompt ${url.href}: ${
        errorMessage(error)
      }. The package installation may be incomplete.`,
      { details: { url: url.href } },
    );
  }
}

/**
 * Replaces `{{name}}` placeholders. Every placeholder must have a value (a missing one is a bug in
 * the caller, reported by name); other braces are left alone.
 *
 * @example
 * ```ts
 * import { renderTemplate } from "./prompts.ts";
 * renderTemplate('Task: "{{task}}" {json: 1}', { task: "Bump version" }); // 'Task: "Bump version" {json: 1}'
 * ```
 */
export function renderTemplate(template: string, values: Readonly<Record<string, string>>): string {
  const missing = new Set<string>();
  const out = template.replace(/\{\{([a-z_]+)\}\}/g, (match, name: string) => {
    if (Object.hasOwn(values, name)) return values[name];
    missing.add(name);
    return match;
  });
  if (missing.size > 0) {
    throw new StepflowError(
      "PROMPT_VARIABLES_MISSING",
      `Plan prompt placeholders without a value: ${[...missing].join(", ")}.`,
      { details: { missing: [...missing] } },
    );
  }
  return out;
}

/** Formats tool descriptions for a prompt: `- name: description`, then the JSON Schema of its args. */
export function formatToolList(
  tools: ReadonlyArray<
    { name: string; description: string; inputSchema: unknown; requiresApproval: boolean }
  >,
): string {
  if (tools.length === 0) return "(no tools)";
  return tools.map((t) => {
    const schema = { ...(t.inputSchema as Record<string, unknown>) };
    delete schema.$schema;
    return `- ${t.name}: ${t.description}${
      t.requiresApproval ? " (always needs approval)" : ""
    }\n  args: ${JSON.stringify(schema)}`;
  }).join("\n");
}
