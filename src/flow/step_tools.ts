/**
 * A step's backend call with tools: when the step allows tools and the backend runs tool turns
 * (`anthropic`, `openai`, `scripted`), the call goes through the one tool loop with the agent tools
 * the step's `allowedTools` names, under its `permissionMode`; otherwise it is a plain call.
 * `claude-code` keeps Claude Code's own tools and permission handling.
 *
 * @module
 */
import { completeWithTools, type ToolLoopOptions } from "../engine/tool_loop.ts";
import { StepflowError } from "../errors.ts";
import { supportsToolTurns } from "../llm/tool_turn.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse } from "../llm/types.ts";
import { createAgentTools } from "../tools/agent_tools.ts";
import { parsePermissionMode, parsePermissionRulesOrThrow } from "../definition/permission_rule.ts";
import { offeredTools, type PermissionPolicy } from "../tools/permissions.ts";
import { ToolRegistry } from "../tools/registry.ts";

/** What a run adds to a step's tool calls (asking for permission, hearing of each call). */
export type StepToolOptions = Pick<
  ToolLoopOptions,
  "onPermissionRequest" | "onToolCall" | "onTurn" | "maxToolTurns" | "maxBadCalls"
>;

/**
 * Sends `request`: through the tool loop when it allows tools the backend can run, else as a plain
 * call.
 *
 * @throws StepflowError `PERMISSION_RULE_INVALID` / `PERMISSION_MODE_INVALID` for rules or a mode
 *   that do not parse (the loader reports them earlier for agent.json)
 */
export async function completeStepCall(
  backend: LlmBackend,
  request: LlmRequest,
  options: LlmCallOptions,
  tools: StepToolOptions = {},
): Promise<LlmResponse> {
  if (!request.allowedTools?.length || !supportsToolTurns(backend)) {
    return await backend.complete(request, options);
  }
  const policy = stepPolicy(request);
  const registry = new ToolRegistry();
  for (const tool of createAgentTools()) registry.register(tool);
  const servers = await startMcpServers(request, policy, registry);
  try {
    const offered = offeredTools(policy.allow, policy.deny, registry.list().map((t) => t.name));
    if (offered.length === 0) return await backend.complete(request, options);
    return await completeWithTools(
      request,
      { backend, tools: registry, offered, policy, ...tools },
      options,
    );
  } finally {
    await servers?.close();
  }
}

/**
 * Starts the MCP servers a call may use — only those an `allowedTools` rule names — and adds
 * their tools to `registry`. The MCP client is imported here, on first use, so an agent without
 * servers never loads it (nor its SDK).
 */
async function startMcpServers(
  request: LlmRequest,
  policy: PermissionPolicy,
  registry: ToolRegistry,
): Promise<{ close(): Promise<void> } | undefined> {
  const configured = request.mcpServers;
  if (!configured) return undefined;
  const wanted = Object.keys(configured).filter((name) =>
    policy.allow.some((rule) => rule.kind === "mcp" && rule.server === name)
  );
  if (wanted.length === 0) return undefined;
  const mcp = await import(MCP_MODULE) as McpModule;
  const all = mcp.parseMcpServersOrThrow(configured, Deno.env.toObject(), "behavior.mcpServers");
  const servers = await mcp.connectMcpServers(
    new Map(wanted.map((name) => [name, all.get(name)!])),
    { cwd: request.cwd },
  );
  try {
    servers.registerIn(registry);
  } catch (error) {
    await servers.close();
    throw error;
  }
  return servers;
}

// A specifier the module graph does not follow: the MCP SDK stays out of stepflow's static graph.
const MCP_MODULE = new URL("../mcp/mod.ts", import.meta.url).href;

/** The part of `src/mcp/mod.ts` used here, declared so its types do not pull it into the graph. */
interface McpModule {
  parseMcpServersOrThrow(
    value: unknown,
    env: Record<string, string>,
    source: string,
  ): Map<string, unknown>;
  connectMcpServers(
    configs: ReadonlyMap<string, unknown>,
    options: { cwd?: string },
  ): Promise<{ registerIn(registry: ToolRegistry): unknown; close(): Promise<void> }>;
}

/** The step's permission policy from its request (mode `default` when none is given). */
export function stepPolicy(request: LlmRequest): PermissionPolicy {
  const mode = parsePermissionMode(request.permissionMode ?? "default");
  if (!mode.ok) {
    throw new StepflowError(
      "PERMISSION_MODE_INVALID",
      `Step "${request.stepId}": ${mode.problem}.`,
      { details: { stepId: request.stepId, permissionMode: request.permissionMode } },
    );
  }
  return {
    mode: mode.mode,
    allow: parsePermissionRulesOrThrow(request.allowedTools ?? [], "allowedTools"),
    deny: parsePermissionRulesOrThrow(request.disallowedTools ?? [], "disallowedTools"),
  };
}
