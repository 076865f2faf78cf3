/**
 * The tools of plans, as this module exposes them: the built-in registry and the structural tool
 * contract (so the public types do not expose zod's; a zod schema fits `PlanArgSchema`).
 *
 * @module
 */
import { type BuiltinToolOptions, createToolRegistry } from "../tools/builtin.ts";
import type { ArgIssue, PlanToolContext, PlanToolRegistry } from "./types.ts";

/** Validates a tool's arguments: a zod schema in practice (`z.object({ … })`). */
export interface PlanArgSchema {
  /** Validates (and may transform) `value`. */
  safeParse(
    value: unknown,
  ): { success: true; data: unknown } | { success: false; error: { issues: readonly ArgIssue[] } };
}

/** A tool a plan step can call (the `Tool` contract of the project's tool registry). */
export interface PlanTool {
  /** Unique name, used in plans. */
  name: string;
  /** One-line description shown to LLMs and people. */
  description: string;
  /** Validates the arguments; the JSON Schema for prompts is generated from it. */
  inputSchema: PlanArgSchema;
  /** Always ask for approval before running. */
  requiresApproval?: boolean;
  /** Safe to run again after a crash (see the `Tool` contract). */
  idempotent?: boolean;
  /** Ask for approval for these arguments: `true` or a reason to ask, `false` not to. */
  // deno-lint-ignore no-explicit-any
  needsApproval?(args: any, ctx: PlanToolContext): boolean | string | Promise<boolean | string>;
  /** Runs the tool with validated arguments. */
  // deno-lint-ignore no-explicit-any
  execute(args: any, ctx: PlanToolContext): unknown;
}

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
