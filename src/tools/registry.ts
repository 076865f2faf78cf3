import { z } from "zod";
import { StepflowError } from "../errors.ts";
import type { AnyTool, ArgIssue, Tool, ToolContext } from "./types.ts";

/** A tool's description for prompts: its name, description and JSON Schema of its input. */
export interface ToolDescriptor {
  /** Tool name. */
  name: string;
  /** Tool description. */
  description: string;
  /** JSON Schema of the arguments, generated from the zod schema. */
  inputSchema: Record<string, unknown>;
  /** Whether the tool needs approval. */
  requiresApproval: boolean;
  /** Whether running it twice has the effect of running it once (safe to re-run after a crash). */
  idempotent: boolean;
  /** Whether it changes nothing (runs in every permission mode). */
  readOnly: boolean;
}

/**
 * The one tool registry of the project. Tool plans and QPlan scripts both resolve their actions here.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { ToolRegistry } from "./registry.ts";
 * const registry = new ToolRegistry().register({
 *   name: "add",
 *   description: "Adds two numbers",
 *   inputSchema: z.object({ a: z.number(), b: z.number() }),
 *   execute: ({ a, b }) => a + b,
 * });
 * console.log(await registry.invoke("add", { a: 1, b: 2 }, { workspaceRoot: "." })); // 3
 * ```
 */
export class ToolRegistry {
  readonly #tools = new Map<string, AnyTool>();
  readonly #descriptors = new Map<string, ToolDescriptor>();
  readonly #mcpServers = new Set<string>();

  /** Adds a tool. A second tool with the same name is an error (no silent override). */
  register<A, R>(tool: Tool<A, R>): this {
    if (this.#tools.has(tool.name)) {
      throw new StepflowError(
        "TOOL_DUPLICATE",
        `A tool named "${tool.name}" is already registered. Pick another name or call replace().`,
      );
    }
    this.#tools.set(tool.name, tool as AnyTool);
    return this;
  }

  /** Adds or replaces a tool deliberately. */
  replace<A, R>(tool: Tool<A, R>): this {
    this.#tools.set(tool.name, tool as AnyTool);
    this.#descriptors.delete(tool.name);
    return this;
  }

  /**
   * Records the MCP servers configured for this registry (their `mcp__<server>__<tool>` tools are
   * registered once the servers are connected), so that validation can tell a misspelt server from
   * a tool its server lacks.
   */
  declareMcpServers(names: Iterable<string>): this {
    for (const name of names) this.#mcpServers.add(name);
    return this;
  }

  /** The MCP servers declared (see {@linkcode ToolRegistry.declareMcpServers}), sorted. */
  mcpServerNames(): string[] {
    return [...this.#mcpServers].sort();
  }

  /** The tool called `name`, or undefined. */
  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }

  /** True when a tool called `name` exists. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** Every registered tool, in registration order. */
  list(): AnyTool[] {
    return [...this.#tools.values()];
  }

  /** Prompt-ready descriptions of every tool (JSON Schemas generated once per tool and cached). */
  describe(): ToolDescriptor[] {
    return this.list().map((t) => this.descriptor(t.name)!);
  }

  /** The prompt-ready description of one tool. */
  descriptor(name: string): ToolDescriptor | undefined {
    const cached = this.#descriptors.get(name);
    if (cached) return cached;
    const tool = this.#tools.get(name);
    if (!tool) return undefined;
    const d: ToolDescriptor = {
      name: tool.name,
      description: tool.description,
      inputSchema: tool.jsonSchema ?? z.toJSONSchema(tool.inputSchema as z.ZodType, {
        unrepresentable: "any",
        io: "input",
      }) as Record<string, unknown>,
      requiresApproval: tool.requiresApproval ?? false,
      idempotent: tool.idempotent ?? false,
      readOnly: tool.readOnly ?? false,
    };
    this.#descriptors.set(name, d);
    return d;
  }

  /** Validates `args` with the tool's schema; returns the parsed args or the zod issues. */
  validateArgs(
    name: string,
    args: unknown,
  ): { ok: true; args: unknown } | { ok: false; issues: readonly ArgIssue[] } {
    const tool = this.#requireTool(name);
    const parsed = tool.inputSchema.safeParse(args);
    return parsed.success
      ? { ok: true, args: parsed.data }
      : { ok: false, issues: parsed.error.issues };
  }

  /**
   * Whether calling `name` with `args` needs an approval: the tool's `requiresApproval` flag, or else
   * its `needsApproval(args, ctx)` check on the validated arguments (invalid arguments fall back to
   * the flag; `invoke` reports them).
   */
  async needsApproval(name: string, args: unknown, ctx: ToolContext): Promise<boolean> {
    return (await this.approvalReason(name, args, ctx)) !== undefined;
  }

  /**
   * Why calling `name` with `args` needs an approval, or `undefined` when it does not (see
   * {@linkcode ToolRegistry.needsApproval}).
   *
   * @example
   * ```ts
   * import { createToolRegistry } from "./builtin.ts";
   * const registry = createToolRegistry({ enableCommands: true });
   * await registry.approvalReason("run_command", { command: "ls" }, { workspaceRoot: "." });
   * // "run_command always needs approval"
   * ```
   */
  async approvalReason(name: string, args: unknown, ctx: ToolContext): Promise<string | undefined> {
    const tool = this.#requireTool(name);
    if (tool.requiresApproval === true) return `${name} always needs approval`;
    if (!tool.needsApproval) return undefined;
    const parsed = tool.inputSchema.safeParse(args);
    if (!parsed.success) return undefined;
    const answer = await tool.needsApproval(parsed.data, ctx);
    if (typeof answer === "string") {
      return answer || `${name} asks for approval for these arguments`;
    }
    return answer === true ? `${name} asks for approval for these arguments` : undefined;
  }

  /** Validates and runs a tool. Invalid arguments throw `TOOL_ARGS_INVALID` naming each issue path. */
  async invoke(name: string, args: unknown, ctx: ToolContext): Promise<unknown> {
    const tool = this.#requireTool(name);
    const parsed = tool.inputSchema.safeParse(args);
    if (!parsed.success) {
      throw new StepflowError(
        "TOOL_ARGS_INVALID",
        `Invalid arguments for tool "${name}": ${formatIssues(parsed.error.issues)}`,
        { details: { tool: name, issues: parsed.error.issues } },
      );
    }
    ctx.signal?.throwIfAborted();
    return await tool.execute(parsed.data, ctx);
  }

  #requireTool(name: string): AnyTool {
    const tool = this.#tools.get(name);
    if (!tool) {
      const known = [...this.#tools.keys()].join(", ") || "(none)";
      throw new StepflowError(
        "TOOL_UNKNOWN",
        `Unknown tool "${name}". Registered tools: ${known}.`,
        {
          details: { tool: name },
        },
      );
    }
    return tool;
  }
}

/** Formats zod issues as `path: message; path: message` (root issues as `(root)`). */
export function formatIssues(issues: readonly ArgIssue[]): string {
  return issues.map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`).join(
    "; ",
  );
}
