/**
 * The tool contract and registry shared by tool plans and QPlan scripts, the built-in tools, and
 * {@linkcode resolveInWorkspace} for custom tools that must stay inside the workspace.
 *
 * @module
 */
export type {
  AnyTool,
  ArgIssue,
  PathGuard,
  ReachedPath,
  Tool,
  ToolArgsSchema,
  ToolContext,
} from "./types.ts";
export { type ToolDescriptor, ToolRegistry } from "./registry.ts";
export { reachPath, resolveInWorkspace } from "./workspace.ts";
export {
  BUILTIN_TOOL_NAMES,
  type BuiltinToolOptions,
  createBuiltinTools,
  createToolRegistry,
} from "./builtin.ts";
export {
  createFsTools,
  createListDirTool,
  createReadFileTool,
  createWriteFileTool,
  type DirEntry,
  type FsToolOptions,
  type ListDirArgs,
  type ListDirResult,
  type ReadFileArgs,
  type WriteFileArgs,
  type WriteFileResult,
} from "./builtin_fs.ts";
export {
  createHttpGetTool,
  type HttpGetArgs,
  type HttpGetResult,
  type HttpToolOptions,
} from "./builtin_http.ts";
export { AGENT_TOOL_NAMES, createAgentTools } from "./agent_tools.ts";
export { AGENT_TOOL_LIMITS } from "./agent_limits.ts";
export {
  createEditTool,
  createReadTool,
  createWriteTool,
  type EditArgs,
  type ReadArgs,
  type WriteArgs,
} from "./agent_files.ts";
export { createGlobTool, createGrepTool, type GlobArgs, type GrepArgs } from "./agent_search.ts";
export { type BashArgs, createBashTool } from "./agent_bash.ts";
export {
  CLAUDE_CODE_ONLY_TOOLS,
  type ParsedRule,
  parsePermissionMode,
  parsePermissionRule,
  parsePermissionRules,
  parsePermissionRulesOrThrow,
  PERMISSION_MODES,
  type PermissionMode,
  type PermissionRule,
} from "../definition/permission_rule.ts";
export {
  decidePermission,
  offeredTools,
  type PermissionDecision,
  type PermissionPolicy,
  type PermissionRequest,
} from "./permissions.ts";
export { globMatches } from "./glob_pattern.ts";
export {
  type CommandToolOptions,
  createRunCommandTool,
  type RunCommandArgs,
  type RunCommandResult,
} from "./builtin_command.ts";
