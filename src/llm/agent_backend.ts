/**
 * The backend an agent runs on when its caller names none: agent.json `behavior.backend` (default
 * {@linkcode DEFAULT_BACKEND}) with `behavior.model`. The one place that default is chosen: the
 * runner (for `new StepFlowRunner(definition)` without a backend), the `run-agent` CLI and the
 * worker all come here.
 *
 * @module
 */
import type { ModelSetting } from "../definition/schema.ts";
import { type BackendName, createBackend } from "./factory.ts";
import { defaultModelOf } from "./model_chain.ts";
import type { LlmBackend } from "./types.ts";

/** The backend used when neither the caller (`backend`, `--backend`) nor agent.json names one. */
export const DEFAULT_BACKEND: BackendName = "claude-code";

/** What {@linkcode agentBackend} reads of agent.json `behavior`. */
export interface AgentBehaviorBackend {
  /** Backend name (`claude-code`, `anthropic`, `openai`, `scripted`). */
  backend?: string;
  /** Default model, or a fallback chain (its first model of this backend is the default). */
  model?: ModelSetting;
}

/** Overrides and hooks of {@linkcode agentBackend}. */
export interface AgentBackendOptions {
  /** Model override (wins over `behavior.model`). */
  model?: string;
  /** Receives backend warnings. */
  onWarning?: (message: string) => void;
}

/**
 * Creates the agent's own backend: `behavior.backend` (default {@linkcode DEFAULT_BACKEND}) with
 * the model override, else `behavior.model` (a chain's first model), able to walk model chains
 * (a `ModelChainBackend`). Throws what `createBackend` throws for an unknown name
 * or a backend that cannot be set up.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 * import { agentBackend } from "jsr:@stepflow/core/llm";
 *
 * const definition = await loadAgentDefinition("issue-solver");
 * const backend = await agentBackend(definition.agent.behavior, { model: "claude-sonnet-5-5" });
 * await new StepFlowRunner(definition, { backend }).run({ args: { topic: "x" } });
 * ```
 */
export async function agentBackend(
  behavior: AgentBehaviorBackend,
  options: AgentBackendOptions = {},
): Promise<LlmBackend> {
  const model = options.model ?? defaultModelOf(behavior.model);
  return await createBackend({
    name: behavior.backend ?? DEFAULT_BACKEND,
    ...(model ? { model } : {}),
    // Walks the agent's and the steps' model chains, its conversation shared along them.
    fallbackModels: [],
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  });
}
