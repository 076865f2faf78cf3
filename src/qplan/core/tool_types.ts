/**
 * The view QPlan has of the project's tool registry (`ToolRegistry` of `src/tools`), written
 * structurally so QPlan's public types do not expose zod's. Any `ToolRegistry` fits.
 *
 * @module
 */
import type { ToolContext } from "../../tools/types.ts";
import type { ToolDescriptor } from "../../tools/registry.ts";

/** One problem with a tool's arguments (a zod issue in practice). */
export interface ArgIssue {
  /** Where in the arguments. */
  readonly path: readonly PropertyKey[];
  /** What is wrong. */
  readonly message: string;
}

/** The outcome of validating arguments. */
export type ArgParseResult =
  | { success: true; data: unknown }
  | { success: false; error: { issues: readonly ArgIssue[] } };

/** Validates a tool's arguments (a zod schema in practice). */
export interface ArgSchema {
  /** Validates (and may transform) `value`. */
  safeParse(value: unknown): ArgParseResult;
}

/** A tool as QPlan calls it: the `Tool` contract of `src/tools`. */
export interface QPlanTool {
  /** Unique name, used as the module name in scripts. */
  name: string;
  /** One-line description (shown in prompts). */
  description: string;
  /** Validates the arguments. */
  inputSchema: ArgSchema;
  /** Destructive or sensitive tools need an approval before they run. */
  requiresApproval?: boolean;
  /**
   * Decides per call whether an approval is needed (consulted when `requiresApproval` is not
   * `true`): `true` or a short reason to ask, `false` not to.
   */
  // deno-lint-ignore no-explicit-any
  needsApproval?(args: any, ctx: ToolContext): boolean | string | Promise<boolean | string>;
  /** Runs the tool with validated arguments. */
  // deno-lint-ignore no-explicit-any
  execute(args: any, ctx: ToolContext): unknown;
}

/** The registry QPlan looks modules up in (`ToolRegistry` of `src/tools` fits). */
export interface QPlanToolRegistry {
  /** Adds a tool; a taken name is an error. */
  register(tool: QPlanTool): unknown;
  /** The tool called `name`. */
  get(name: string): QPlanTool | undefined;
  /** True when a tool called `name` exists. */
  has(name: string): boolean;
  /** Every tool in registration order. */
  list(): QPlanTool[];
  /** Prompt-ready descriptions (JSON Schemas of the inputs). */
  describe(): ToolDescriptor[];
}

/** Formats argument issues as `path: message; path: message`. */
export function formatArgIssues(issues: readonly ArgIssue[]): string {
  return issues.map((i) =>
    `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`
  )
    .join("; ");
}
