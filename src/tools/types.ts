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
  /** Reports progress of a long-running call (0–100), when the executor listens. */
  reportProgress?: (percent: number, message?: string) => void;
  /** Adds a log line to the step's progress, when the executor listens. */
  log?: (message: string) => void;
  /**
   * Set when permission rules judged the call (the agent tools in a step's tool loop): the tool
   * acts on the paths that were judged — never on a fresh resolution of its arguments — and a
   * search hides the files a rule keeps from it. Without it a tool resolves its paths itself.
   */
  paths?: PathGuard;
  /** Free-form extras an executor passes to its tools (backend, run id, …). */
  [extra: string]: unknown;
}

/**
 * One path a tool call reaches: as written and as it really is, relative to the working folder
 * (`/`-separated). Made by `reachPath` (src/tools/workspace.ts), the one resolver; judged by
 * `decidePermission`.
 *
 * @example
 * ```ts
 * import type { ReachedPath } from "./types.ts";
 * // `src/link_gitcfg` is a symbolic link to `../.git/config`:
 * const reached: ReachedPath = {
 *   written: "src/link_gitcfg",
 *   real: ".git/config",
 *   abs: "/repo/.git/config",
 *   exists: true,
 *   hardLinks: 1,
 *   link: { path: "src/link_gitcfg", to: "../.git/config" },
 * };
 * ```
 */
export interface ReachedPath {
  /** As written: relative to the working folder, `.` and `..` read as text (`.` the folder). */
  written: string;
  /**
   * The real path: every symbolic link on the way followed, and a `..` after a link read as the
   * system reads it (the link's parent). For a path that does not exist yet: the real path of its
   * nearest existing folder, and the missing rest.
   */
  real: string;
  /** `real`, absolute: what the tool opens or writes. */
  abs: string;
  /** The path exists. */
  exists: boolean;
  /** It is a folder. */
  isDirectory?: boolean;
  /** For an existing regular file: how many names (hard links) it has. */
  hardLinks?: number;
  /** When `real` differs from `written`: the first symbolic link on the way, and what it says. */
  link?: { path: string; to: string };
  /**
   * When the path does not exist and its first missing entry is a symbolic link to nothing: the
   * link, what it says, and the path a write through it would create (`target`).
   */
  dangling?: { path: string; to: string; target: string };
}

/** What the tool loop settled about a call's paths (see `ToolContext.paths`). */
export interface PathGuard {
  /**
   * The judged resolution of the path argument `arg` (`file_path`, `path`); throws the error
   * resolving it gave (`PATH_ESCAPES_WORKSPACE`).
   */
  reached(arg: string): ReachedPath;
  /**
   * Why a file a search came across must stay hidden — a `disallowedTools` rule matches its path
   * or the file it links to, or it has several names (hard links) while `Read(…)` rules refuse
   * paths — or `undefined` when it may be read.
   */
  hides(file: ReachedPath): string | undefined;
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
