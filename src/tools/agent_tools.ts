/**
 * The agent tools — `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash` — named and shaped as Claude
 * Code's, so an agent.json's `allowedTools` means the same on every backend. They act on the run's
 * working folder (`ctx.workspaceRoot`) under the same rules as the tool plans' file tools.
 *
 * @module
 */
import { createBashTool } from "./agent_bash.ts";
import { createEditTool, createReadTool, createWriteTool } from "./agent_files.ts";
import { createGlobTool, createGrepTool } from "./agent_search.ts";
import type { AnyTool } from "./types.ts";

export { AGENT_TOOL_NAMES } from "../definition/permission_rule.ts";

/**
 * Creates the six agent tools.
 *
 * @example
 * ```ts
 * import { createAgentTools } from "./agent_tools.ts";
 * console.log(createAgentTools().map((t) => t.name)); // ["Read", "Write", "Edit", "Glob", "Grep", "Bash"]
 * ```
 */
export function createAgentTools(): AnyTool[] {
  return [
    createReadTool(),
    createWriteTool(),
    createEditTool(),
    createGlobTool(),
    createGrepTool(),
    createBashTool(),
  ];
}
