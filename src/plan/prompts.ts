/**
 * The planning and recovery prompt templates in `prompts/plan/`, read and filled (`{variable}`)
 * by the engine kit's one prompt-template code (`src/engine/prompt_template.ts`), so they are
 * found both in a checkout and in the published package.
 *
 * @module
 */
import { readBuiltinPrompt } from "../engine/prompt_template.ts";

/** The prompt templates of tool plans. */
export type PlanPromptName = "generate" | "recover" | "revise";

/**
 * Loads `prompts/plan/<name>.md` (cached).
 *
 * @example
 * ```ts
 * import { loadPlanPrompt } from "./prompts.ts";
 * const template = await loadPlanPrompt("generate");
 * console.log(template.includes("{task}")); // true
 * ```
 */
export function loadPlanPrompt(name: PlanPromptName): Promise<string> {
  return readBuiltinPrompt(`plan/${name}.md`);
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
