/**
 * The tool registry shared by tool plans and QPlan scripts.
 *
 * @module
 */
export * from "./types.ts";
export * from "./registry.ts";
export * from "./workspace.ts";
