/**
 * The built-in tool set: `read_file`, `write_file`, `list_dir` always; `http_get` and `run_command`
 * only when enabled; the agent tools (`Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash`) on request.
 *
 * @module
 */
import { createFsTools } from "./builtin_fs.ts";
import { createHttpGetTool, type HttpToolOptions } from "./builtin_http.ts";
import { type CommandToolOptions, createRunCommandTool } from "./builtin_command.ts";
import { createAgentTools } from "./agent_tools.ts";
import { ToolRegistry } from "./registry.ts";
import type { AnyTool } from "./types.ts";

/** Which built-in tools to create, and how. */
export interface BuiltinToolOptions {
  /** A fixed workspace root for the file tools and `run_command`; defaults to `ctx.workspaceRoot`. */
  workspaceRoot?: string;
  /** Adds `http_get` (off by default). An object enables it with options. */
  enableHttp?: boolean | HttpToolOptions;
  /** Adds `run_command` (off by default; always needs approval). An object enables it with options. */
  enableCommands?: boolean | CommandToolOptions;
  /**
   * Adds the agent tools `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash` (off by default), shaped as
   * Claude Code's. They act on `ctx.workspaceRoot`, the run's working folder.
   */
  agentTools?: boolean;
}

/** The names of every built-in tool. */
export const BUILTIN_TOOL_NAMES: readonly string[] = [
  "read_file",
  "write_file",
  "list_dir",
  "http_get",
  "run_command",
];

/**
 * Creates the built-in tools.
 *
 * @example
 * ```ts
 * import { createBuiltinTools } from "./builtin.ts";
 * const tools = createBuiltinTools({ enableHttp: true });
 * console.log(tools.map((t) => t.name)); // ["read_file", "write_file", "list_dir", "http_get"]
 * ```
 */
export function createBuiltinTools(options: BuiltinToolOptions = {}): AnyTool[] {
  const fs = { workspaceRoot: options.workspaceRoot };
  const tools: AnyTool[] = [...createFsTools(fs)];
  if (options.enableHttp) {
    tools.push(createHttpGetTool(options.enableHttp === true ? {} : options.enableHttp));
  }
  if (options.enableCommands) {
    const extra = options.enableCommands === true ? {} : options.enableCommands;
    tools.push(createRunCommandTool({ workspaceRoot: options.workspaceRoot, ...extra }));
  }
  if (options.agentTools) tools.push(...createAgentTools());
  return tools;
}

/**
 * A {@linkcode ToolRegistry} holding the built-in tools (and nothing else yet).
 *
 * @example
 * ```ts
 * import { createToolRegistry } from "./builtin.ts";
 * const registry = createToolRegistry();
 * console.log(registry.has("read_file"), registry.has("run_command")); // true false
 * ```
 */
export function createToolRegistry(options: BuiltinToolOptions = {}): ToolRegistry {
  const registry = new ToolRegistry();
  for (const tool of createBuiltinTools(options)) registry.register(tool);
  return registry;
}
