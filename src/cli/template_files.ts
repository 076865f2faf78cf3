/**
 * The files of each agent template under `agents/templates/`, so `--init` can fetch a template when
 * this package runs from a URL (JSR), where a folder cannot be listed. `tests/cli/init_test.ts`
 * fails when this list and the folders drift apart.
 *
 * @module
 */

/** Template name → file paths relative to the template folder, sorted. */
export const TEMPLATE_FILES: Readonly<Record<string, readonly string[]>> = {
  "gate-routed": [
    "agent.json",
    "demo.script.yaml",
    "prompts/steps/complete/task/f_default.md",
    "prompts/steps/continuation/task/f_default.md",
    "prompts/steps/initial/task/f_default.md",
    "prompts/system.md",
    "schemas/task.schema.json",
    "steps_registry.json",
  ],
};
