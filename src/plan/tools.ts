/**
 * The tools of plans, as this module exposes them: the built-in registry and the structural tool
 * contract (so the public types do not expose zod's; a zod schema fits `PlanArgSchema`).
 *
 * @module
 */
import { type BuiltinToolOptions, createToolRegistry } from "../tools/builtin.ts";
import type { AnyTool, ToolArgsSchema } from "../tools/types.ts";
import type { PlanToolRegistry } from "./types.ts";

/** Validates a tool's arguments: a zod schema in practice (`z.object({ … })`). */
export type PlanArgSchema = ToolArgsSchema<unknown>;

/** A tool a plan step can call: the `Tool` contract of the project's tool registry. */
export type PlanTool = AnyTool;

/** A tool registry that plans can run on and that accepts more tools. */
export interface PlanToolbox extends PlanToolRegistry {
  /** Adds a tool; a name that is taken is an error. */
  register(tool: PlanTool): unknown;
}

/**
 * The project's tool registry with the built-in tools: `read_file`, `write_file`, `list_dir`, and
 * `http_get` / `run_command` when enabled. Add your own tools with `register`.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { createPlanTools } from "./tools.ts";
 * const tools = createPlanTools({ enableHttp: true });
 * tools.register({
 *   name: "shout",
 *   description: "Upper-cases a text",
 *   inputSchema: z.object({ text: z.string() }),
 *   execute: ({ text }: { text: string }) => text.toUpperCase(),
 * });
 * console.log(tools.describe().map((t) => t.name)); // read_file, write_file, list_dir, http_get, shout
 * ```
 */
export function createPlanTools(options: BuiltinToolOptions = {}): PlanToolbox {
  const registry: PlanToolbox = createToolRegistry(options);
  return registry;
}
