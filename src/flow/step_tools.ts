/**
 * A step's backend call with tools: when the step allows tools and the backend runs tool turns
 * (`anthropic`, `openai`, `scripted`), the call goes through the one tool loop with the agent tools
 * the step's `allowedTools` names, under its `permissionMode`; otherwise it is a plain call.
 * `claude-code` keeps Claude Code's own tools and permission handling.
 *
 * @module
 */
import {
  runToolLoop,
  type ToolLoopOptions,
  type ToolLoopWait,
  type WaitingToolLoopOptions,
} from "../engine/tool_loop.ts";
import { StepflowError } from "../errors.ts";
import { supportsToolTurns } from "../llm/tool_turn.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse } from "../llm/types.ts";
import { createAgentTools } from "../tools/agent_tools.ts";
import { parsePermissionMode, parsePermissionRulesOrThrow } from "../definition/permission_rule.ts";
import { offeredTools, type PermissionPolicy } from "../tools/permissions.ts";
import { ToolRegistry } from "../tools/registry.ts";
import { RunMcpServers } from "./run_mcp_servers.ts";

/**
 * What a run adds to a step's tool calls (asking for permission, hearing of each call); its
 * answerer may say `"wait"` (the call then ends with a {@linkcode ToolLoopWait}).
 */
export type WaitingStepToolOptions =
  & Pick<
    WaitingToolLoopOptions,
    | "onPermissionRequest"
    | "onToolCall"
    | "onToolCallEvent"
    | "onTurn"
    | "resume"
    | "maxToolTurns"
    | "maxBadCalls"
    | "maxToolResultChars"
    | "runId"
  >
  & {
    /**
     * The run's MCP servers, started once and kept across its steps (the runner closes them at
     * the run's end). Without it, the servers a call needs are started for the call and closed
     * after it.
     */
    mcpServers?: RunMcpServers;
  };

/** {@linkcode WaitingStepToolOptions} whose answerer answers at once (never `"wait"`). */
export type StepToolOptions =
  & Omit<WaitingStepToolOptions, "onPermissionRequest">
  & Pick<ToolLoopOptions, "onPermissionRequest">;

/**
 * Sends `request`: through the tool loop when it allows tools the backend can run, else as a plain
 * call. When the tools' answerer may say `"wait"`, a tool call whose permission ask waits ends the
 * call with a {@linkcode ToolLoopWait}.
 *
 * @throws StepflowError `PERMISSION_RULE_INVALID` / `PERMISSION_MODE_INVALID` for rules or a mode
 *   that do not parse (the loader reports them earlier for agent.json)
 */
export function completeStepCall(
  backend: LlmBackend,
  request: LlmRequest,
  options: LlmCallOptions,
  tools?: StepToolOptions,
): Promise<LlmResponse>;
export function completeStepCall(
  backend: LlmBackend,
  request: LlmRequest,
  options: LlmCallOptions,
  tools: WaitingStepToolOptions,
): Promise<LlmResponse | ToolLoopWait>;
export async function completeStepCall(
  backend: LlmBackend,
  request: LlmRequest,
  options: LlmCallOptions,
  tools: WaitingStepToolOptions = {},
): Promise<LlmResponse | ToolLoopWait> {
  if (!request.allowedTools?.length || !supportsToolTurns(backend)) {
    return await backend.complete(request, options);
  }
  const policy = stepPolicy(request);
  const registry = new ToolRegistry();
  for (const tool of createAgentTools()) registry.register(tool);
  const { mcpServers, ...loopOptions } = tools;
  const servers = mcpServers ?? new RunMcpServers();
  try {
    await servers.registerFor(request, policy, registry, loopOptions.runId);
    const offered = offeredTools(policy.allow, policy.deny, registry.list().map((t) => t.name));
    if (offered.length === 0) return await backend.complete(request, options);
    return await runToolLoop(
      request,
      { backend, tools: registry, offered, policy, ...loopOptions },
      options,
    );
  } finally {
    // The call's own servers end with it; the run's end with the run.
    if (!mcpServers) await servers.close();
  }
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
