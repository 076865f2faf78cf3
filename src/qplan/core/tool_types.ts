/**
 * The view QPlan has of the project's tool registry (`ToolRegistry` of `src/tools`), written
 * structurally so QPlan's public types do not expose zod's. Any `ToolRegistry` fits.
 *
 * @module
 */
import type { AnyTool, ArgIssue, ToolArgsSchema } from "../../tools/types.ts";
import type { ToolDescriptor } from "../../tools/registry.ts";

export type { ArgIssue } from "../../tools/types.ts";

/** Validates a tool's arguments (a zod schema in practice). */
export type ArgSchema = ToolArgsSchema<unknown>;

/** The outcome of validating arguments. */
export type ArgParseResult = ReturnType<ArgSchema["safeParse"]>;

/** A tool as QPlan calls it: the `Tool` contract of `src/tools`. */
export type QPlanTool = AnyTool;

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
  /** The MCP servers configured for the registry, for messages about `mcp__…` names. */
  mcpServerNames?(): string[];
}

/** Formats argument issues as `path: message; path: message`. */
export function formatArgIssues(issues: readonly ArgIssue[]): string {
  return issues.map((i) =>
    `${i.path.length ? i.path.map(String).join(".") : "(root)"}: ${i.message}`
  )
    .join("; ");
}
