/**
 * The tool contract shared by tool plans (docs/tool-plans.md) and QPlan scripts (docs/qplan.md).
 *
 * @module
 */
/** What a tool receives besides its arguments. */
export interface ToolContext {
  /** Absolute workspace root: file tools must stay inside it. */
  workspaceRoot: string;
  /** Cancels the call. */
  signal?: AbortSignal;
  /** Id of the plan/script step invoking the tool, for logs. */
  stepId?: string;
  /**
   * The run the call belongs to, when a run makes it: the processes a tool starts carry it
   * (`STEPFLOW_RUN_ID`), so a resume can tell whether they still run.
   */
  runId?: string;
  /** Reports progress of a long-running call (0–100), when the executor listens. */
  reportProgress?: (percent: number, message?: string) => void;
  /** Adds a log line to the step's progress, when the executor listens. */
  log?: (message: string) => void;
  /** Free-form extras an executor passes to its tools (backend, run id, …). */
  [extra: string]: unknown;
}

/**
 * A tool: a named action with a zod input schema.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import type { Tool } from "./types.ts";
 * const add: Tool<{ a: number; b: number }, number> = {
 *   name: "add",
 *   description: "Adds two numbers",
 *   inputSchema: z.object({ a: z.number(), b: z.number() }),
 *   execute: ({ a, b }) => a + b,
 * };
 * ```
 */
export interface Tool<Args = Record<string, unknown>, Result = unknown> {
  /** Unique name, used in plans and scripts. */
  name: string;
  /** One-line description shown to LLMs and users. */
  description: string;
  /** Validates (and may coerce) the arguments. The JSON Schema for prompts is generated from it. */
  inputSchema: ToolArgsSchema<Args>;
  /** Destructive or sensitive tools need an approval before they run. */
  requiresApproval?: boolean;
  /**
   * Running it twice with the same arguments has the same effect as running it once (reads, GETs,
   * listings). A tool-plan step found started-but-unfinished after a crash is re-run on its own
   * only when its tool says so; otherwise the run stops for the user. Default `false`.
   */
  idempotent?: boolean;
  /**
   * The tool changes nothing (reads, searches, read-only MCP tools). Permissions run read-only
   * tools in every mode, `plan` included. Default `false`.
   */
  readOnly?: boolean;
  /**
   * The JSON Schema of the arguments as shown to models, for tools whose schema is not a zod
   * schema (MCP tools bring their own). When unset, it is generated from `inputSchema`.
   */
  jsonSchema?: Record<string, unknown>;
  /**
   * Decides per call whether an approval is needed, for tools that are only sometimes destructive
   * (`write_file` asks when it would overwrite a file). Consulted only when `requiresApproval` is not
   * `true`; receives the validated arguments. Return `true` or a short reason to ask, `false` not to.
   */
  needsApproval?(args: Args, ctx: ToolContext): boolean | string | Promise<boolean | string>;
  /**
   * Why the tool cannot run as configured (the `ai` module without an LLM backend), or absent when
   * it can. Validation reports every call of such a tool as an error before anything runs, so a
   * script or plan does not do half its work and then fail on a missing setting.
   */
  unavailable?: string;
  /** Runs the tool with validated arguments. */
  execute(args: Args, ctx: ToolContext): Result | Promise<Result>;
}

/** A tool with its argument and result types erased, as stored in a registry. */
// deno-lint-ignore no-explicit-any
export type AnyTool = Tool<any, unknown>;

/** One problem with a tool's arguments (a zod issue in practice). */
export interface ArgIssue {
  /** Where in the arguments. */
  readonly path: readonly PropertyKey[];
  /** What is wrong. */
  readonly message: string;
}

/**
 * Validates (and may coerce) a tool's arguments: a zod schema (`z.object({ … })`) in practice, as
 * the registry also generates the JSON Schema shown to models from it. Declared structurally so
 * that the public contract does not expose zod's own types.
 */
export interface ToolArgsSchema<Args> {
  /** Validates `value`; never throws. */
  safeParse(
    value: unknown,
  ): { success: true; data: Args } | { success: false; error: { issues: readonly ArgIssue[] } };
}
