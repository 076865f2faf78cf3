/**
 * The tool registry shared by tool plans and QPlan scripts.
 *
 * @module
 */
export * from "./types.ts";
export * from "./registry.ts";
export * from "./workspace.ts";
export * from "./builtin.ts";
export * from "./builtin_fs.ts";
export * from "./builtin_http.ts";
export * from "./builtin_command.ts";
