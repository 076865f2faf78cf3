/**
 * The prompt side of a model step (check-gated and gate-routed): the prompt variables, the system
 * prompt, the step prompt — or the retry prompt after a failed step validation — and the request.
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import type { LlmRequest } from "../llm/types.ts";
import type { PromptVariables } from "../prompt/variables.ts";
import { stepRequest } from "./backend_call.ts";
import type { RunnerState } from "./run_state.ts";
import type { StepDependencies } from "./step_handler.ts";
import { appendValidationReport, validationRetryPrompt } from "./validators.ts";

/** The request of a model step's iteration and the variables its prompts were resolved with. */
export interface PreparedStep {
  /** The `kind: "step"` request. */
  request: LlmRequest;
  /** The prompt variables (a check prompt is resolved with the same). */
  vars: PromptVariables;
}

/**
 * The variables a step's prompt is resolved with: the run's arguments and input text, the
 * iteration, the step, the latest handoff values and the agent's declared parameters.
 */
export function stepPromptVariables(
  step: Pick<FlowStep, "id">,
  state: RunnerState,
  deps: Pick<StepDependencies, "definition">,
): PromptVariables {
  return {
    uv: state.args,
    inputText: state.inputText,
    iteration: state.iteration,
    stepId: step.id,
    handoff: state.latestHandoff,
    parameters: deps.definition.agent.parameters ?? {},
  };
}

/**
 * Resolves the step's prompts and builds its request; logs `step_start` with the prompt. After a
 * failed step validation of this step, the retry prompt reports it (src/flow/validators.ts).
 */
export async function prepareStep(
  step: FlowStep,
  state: RunnerState,
  deps: StepDependencies,
): Promise<PreparedStep> {
  const def = deps.definition;
  const vars = stepPromptVariables(step, state, deps);
  const retry = state.validationRetry?.stepId === step.id ? state.validationRetry : undefined;
  if (retry) vars.validation = retry;
  const systemPromptPath = def.agent.behavior.systemPromptPath;
  const systemPrompt = systemPromptPath
    ? (await deps.systemPrompts.resolve({ path: systemPromptPath }, vars, { stepId: step.id }))
      .text
    : undefined;
  const retryRef = retry ? validationRetryPrompt(step, retry) : undefined;
  const prompt = await deps.prompts.resolve(retryRef ?? step.prompt!, vars, {
    stepId: step.id,
    fallbackKey: step.fallbackKey,
  });
  if (retry && !retryRef) prompt.text = appendValidationReport(prompt.text, retry);
  await deps.started(prompt.text);
  const request = stepRequest(def, step, state, prompt.text, systemPrompt, deps.options.model);
  return { request, vars };
}
