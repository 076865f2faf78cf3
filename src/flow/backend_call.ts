/**
 * The runner's backend call: the request a step sends, and one call with the step timeout, pause,
 * cancellation, the backend's retry notices, and the run's usage and session kept up to date.
 *
 * @module
 */
import type { AgentDefinition, FlowStep } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import type { ModelFallbackEvent } from "../events/types.ts";
import { modelChainFor } from "../llm/factory.ts";
import type { RetryInfo } from "../llm/retry.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse } from "../llm/types.ts";
import { addTokenCounts } from "../token_counts.ts";
import { CHECK_RESPONSE_SCHEMA } from "./check.ts";
import { completeStepCall } from "./step_tools.ts";
import type { WaitingToolLoopOptions } from "../engine/tool_loop.ts";
import type { RunnerState } from "./run_state.ts";
import type { RunUsage } from "./types.ts";
import type { RunMcpServers } from "./run_mcp_servers.ts";
import { waitFor, type WaitOutcome } from "./run_wait.ts";

/**
 * The `kind: "step"` request of the current iteration: the prompt, the system prompt when the agent
 * has one, and model (or model chain), tools and permission mode (the run's `model` and
 * `permissionMode` overrides, else the step's, else agent.json `behavior`).
 */
export function stepRequest(
  definition: AgentDefinition,
  step: FlowStep,
  state: RunnerState,
  prompt: string,
  systemPrompt: string | undefined,
  modelOverride: string | undefined,
): LlmRequest {
  const behavior = definition.agent.behavior;
  const request: LlmRequest = {
    kind: "step",
    agent: definition.name,
    stepId: step.id,
    iteration: state.iteration,
    prompt,
    cwd: state.cwd,
  };
  if (systemPrompt !== undefined) request.systemPrompt = systemPrompt;
  const model = modelOverride ?? step.model ?? behavior.model;
  if (typeof model === "string") {
    if (model) request.model = model;
  } else if (model?.length) {
    const first = model[0];
    request.model = typeof first === "string" ? first : first.model;
    // One model is no chain: the call goes to the backend as before.
    if (model.length > 1 || typeof first !== "string") request.modelChain = [...model];
  }
  const tools = step.allowedTools ?? behavior.allowedTools;
  if (tools) request.allowedTools = tools;
  // Refusals add up: a step cannot lift what the agent refuses.
  const refused = [...(behavior.disallowedTools ?? []), ...(step.disallowedTools ?? [])];
  if (refused.length) request.disallowedTools = refused;
  if (behavior.mcpServers && Object.keys(behavior.mcpServers).length) {
    request.mcpServers = behavior.mcpServers;
  }
  // The run's mode (`--permission-mode`) is over the step's and the agent's.
  const permissionMode = state.permissionMode ?? step.permissionMode ?? behavior.permissionMode;
  if (permissionMode) request.permissionMode = permissionMode;
  return request;
}

/** The `kind: "check"` request of a check-gated step: its check prompt, asking for a verdict. */
export function checkRequest(stepRequest: LlmRequest, checkPrompt: string): LlmRequest {
  return {
    ...stepRequest,
    kind: "check",
    prompt: checkPrompt,
    outputSchema: { ...CHECK_RESPONSE_SCHEMA },
  };
}

/** What one call needs from the run. */
export interface CallContext {
  /** The run's signal: fires when the run is aborted, cancelled or timed out. */
  signal: AbortSignal;
  /** The step timeout of this call in ms (undefined or 0: none). */
  timeoutMs: number | undefined;
  /** Resolves when the run is not paused (called before the call is sent). */
  waitIfPaused(): Promise<void>;
  /** Told before the backend retries a failed call (a rate-limit wait too: `waitUntil`). */
  onRetry(retry: RetryInfo): void;
  /** Told when the call falls through to the next entry of its model chain. */
  onFallback?(fallback: ModelFallbackEvent): void;
  /** Server-asked waits at least this long end the call with `RateLimitYield` (not slept). */
  yieldWaitsFromMs?: number;
  /** Told of each piece of the model's text as it streams (when anyone listens). */
  onText?(text: string): void;
  /**
   * Told as each tool call of the tool loop is requested, decided and finished (awaited: a call
   * runs only once its `decided` report returned, so it can be recorded first).
   */
  onToolCallEvent?: WaitingToolLoopOptions["onToolCallEvent"];
  /** Told of the tool calls of a backend that runs its own tools (`claude-code`). */
  onBackendToolCall?: WaitingToolLoopOptions["onToolCallEvent"];
  /** Told after each model turn of a step with tools (kept for recordings, logged). */
  onTurn?: WaitingToolLoopOptions["onTurn"];
  /**
   * Answers a tool call's permission ask: a recorded answer, the run's grants, the runner's
   * `onPermissionRequest` — or `"wait"`: the run waits (the call returns a wait).
   */
  onPermissionRequest?: WaitingToolLoopOptions["onPermissionRequest"];
  /** Where a step killed in the middle left this call (its recorded turns and results). */
  resume?: WaitingToolLoopOptions["resume"];
  /** The run's MCP servers, started once and closed at the run's end. */
  mcpServers?: RunMcpServers;
}

/** A call without tools takes none of the tool loop's hooks (one shared empty object). */
const NO_TOOL_HOOKS: Readonly<Record<string, never>> = Object.freeze({});

/**
 * Sends `request` for `step` once the run is not paused: the run's session is continued, the call is
 * cancelled with the run and timed out after `timeoutMs` (`STEP_TIMEOUT`), and the response's usage,
 * cost and session go into the state. A tool call whose permission waits makes the call return the
 * run's wait instead of a response (nothing of it is counted: the step runs again from its
 * recorded turns once answered).
 */
export async function callBackend(
  backend: LlmBackend,
  request: LlmRequest,
  state: RunnerState,
  step: FlowStep,
  context: CallContext,
): Promise<LlmResponse | WaitOutcome> {
  await context.waitIfPaused();
  const runSignal = context.signal;
  runSignal.throwIfAborted();
  if (state.sessionId) request.sessionId = state.sessionId;
  const timeoutMs = context.timeoutMs;
  const signal = timeoutMs
    ? AbortSignal.any([runSignal, AbortSignal.timeout(timeoutMs)])
    : runSignal;
  let response: Awaited<ReturnType<typeof completeStepCall>>;
  try {
    response = await completeStepCall(
      // A call with a model chain goes through the one walker of chains.
      request.modelChain ? modelChainFor(backend) : backend,
      request,
      callOptions(context, signal, request.stepId),
      request.allowedTools?.length
        ? {
          ...(context.onToolCallEvent ? { onToolCallEvent: context.onToolCallEvent } : {}),
          ...(context.onTurn ? { onTurn: context.onTurn } : {}),
          ...(context.resume ? { resume: context.resume } : {}),
          ...(context.onPermissionRequest
            ? { onPermissionRequest: context.onPermissionRequest }
            : {}),
          ...(context.mcpServers ? { mcpServers: context.mcpServers } : {}),
        }
        : NO_TOOL_HOOKS,
    );
  } catch (error) {
    if (runSignal.aborted) throw runSignal.reason;
    if (signal.aborted) {
      throw new StepflowError(
        "STEP_TIMEOUT",
        `Backend call of step "${step.id}" timed out after ${timeoutMs} ms (${request.kind}). Raise the step's timeoutMs or limits.stepTimeoutMs.`,
        { details: { stepId: step.id } },
      );
    }
    throw error;
  }
  runSignal.throwIfAborted();
  if ("waiting" in response) return waitFor({ kind: "permission", ask: response.waiting });
  addUsage(state.usage, response);
  if (response.sessionId) state.sessionId = response.sessionId;
  return response;
}

/** The backend's own options of a call: its signal, and who hears of retries, text, tool calls. */
function callOptions(context: CallContext, signal: AbortSignal, stepId: string): LlmCallOptions {
  const options: LlmCallOptions = { signal, onRetry: context.onRetry };
  if (context.onText) options.onText = context.onText;
  if (context.onFallback) options.onFallback = context.onFallback;
  if (context.yieldWaitsFromMs !== undefined) options.yieldWaitsFromMs = context.yieldWaitsFromMs;
  const onBackendToolCall = context.onBackendToolCall;
  if (onBackendToolCall) {
    options.onToolCallEvent = (call) => onBackendToolCall({ ...call, stepId });
  }
  return options;
}

/** Adds one response to the run's usage. */
export function addUsage(usage: RunUsage, response: LlmResponse): void {
  usage.calls++;
  if (response.usage) addTokenCounts(usage, response.usage);
  else {
    // No usage is not zero tokens: count the call as unknown so totals are never silently low.
    usage.callsWithoutUsage = (usage.callsWithoutUsage ?? 0) + 1;
  }
  if (response.costUsd) usage.costUsd += response.costUsd;
}

/** The `BACKEND_RETRY` error an `onStepRetry` event carries for a backend's retry notice. */
export function backendRetryError(retry: RetryInfo): StepflowError {
  return new StepflowError(
    "BACKEND_RETRY",
    `${retry.backend} attempt ${retry.attempt}/${retry.maxAttempts} failed (${retry.reason}); retrying in ${retry.delayMs} ms`,
    {
      cause: retry.error,
      details: {
        status: retry.status,
        delayMs: retry.delayMs,
        ...(retry.waitUntil !== undefined ? { waitUntil: retry.waitUntil } : {}),
      },
    },
  );
}
