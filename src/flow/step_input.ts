/**
 * The input step (`"kind": "input"`): a person answers instead of a model. Its first iteration
 * resolves the prompt (with the run's variables and handoff) and returns a `wait` outcome: the
 * loop records the request and ends the drive with the run `waiting`. When the run continues
 * with an answer (recorded in the run state by `StepFlowRunner.answer`, already checked against
 * the step's schema), the step's iteration routes on it exactly as a gate-routed step routes on a
 * model's output (`gateOutcome`) — except that an answer taking `abort` ends the run `declined`
 * (`declined.ts`); when its `waitTimeout` passed unanswered, it takes the timeout's intent instead.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import { stepPromptVariables } from "./step_prompt.ts";
import { gateOutcome } from "./decisions.ts";
import { type RecordedAnswer, waitExpired } from "./input_request.ts";
import { declinedOutcome } from "./declined.ts";
import { waitFor } from "./run_wait.ts";
import type { RunnerState } from "./run_state.ts";
import type { StepDependencies, StepHandler, StepResult } from "./step_handler.ts";

/** Characters of an answer kept in its history entry (as for a model's answer). */
const ANSWER_TEXT_CHARS = 8_192;

/** Runs one iteration of an input step. */
export const runInputStep: StepHandler = async (step, state, deps) => {
  const answer = state.answer?.stepId === step.id ? state.answer : undefined;
  if (answer) {
    delete state.answer;
    await deps.started();
    const text = JSON.stringify(answer.value) ?? "null";
    return await routed(deps, step, state, answer.value, answer, {
      answer: { text: text.slice(0, ANSWER_TEXT_CHARS), length: text.length },
      input: {
        requestId: answer.requestId,
        answeredBy: answer.answeredBy,
        answeredAt: answer.answeredAt,
      },
    });
  }
  const pending = state.waiting?.stepId === step.id ? state.waiting : undefined;
  if (pending && step.waitTimeout && waitExpired(pending, Date.now())) {
    delete state.waiting;
    await deps.started();
    await deps.log({
      type: "input_timeout",
      stepId: step.id,
      requestId: pending.requestId,
      intent: step.waitTimeout.intent,
      expiresAt: pending.expiresAt,
    });
    // The timeout's intent goes through the gate like an answer that picked it.
    const output = atPath(step.gate!.intentField, step.waitTimeout.intent);
    return await routed(deps, step, state, output, undefined, {
      input: { requestId: pending.requestId, timedOut: true },
    });
  }
  // A new wait: the schema must resolve now (it is what the answer is checked against).
  await deps.schemas.resolve(step.outputSchemaRef!, step.id);
  return { outcome: waitFor({ kind: "input", prompt: await inputPrompt(step, state, deps) }) };
};

async function routed(
  deps: StepDependencies,
  step: Parameters<StepHandler>[0],
  state: RunnerState,
  value: unknown,
  answer: RecordedAnswer | undefined,
  record: NonNullable<StepResult["record"]>,
): Promise<StepResult> {
  const gate = gateOutcome(deps.definition, step, value, state.iteration);
  if (gate.warning !== undefined) deps.warn(gate.warning);
  if (gate.intent !== undefined) record.intent = gate.intent;
  // A person's `abort` is their decision to stop (a timeout's is nobody's: it stays aborted).
  const outcome = answer ? declinedOutcome(step, answer, gate.intent, gate.outcome) : gate.outcome;
  if (outcome.kind === "goto" && outcome.transition === "jump") {
    await deps.events.emit("onStepJump", deps.info, outcome.stepId);
  }
  return {
    outcome,
    record,
    handoff: gate.handoff,
    response: { text: record.answer?.text ?? "", structuredOutput: value },
  };
}

/** The question the person is shown: the step's prompt with the run's variables and handoff. */
async function inputPrompt(
  step: Parameters<StepHandler>[0],
  state: RunnerState,
  deps: StepDependencies,
): Promise<string> {
  const vars = stepPromptVariables(step, state, deps);
  if (!step.prompt) {
    throw new StepflowError(
      "PROMPT_NOT_FOUND",
      `Input step "${step.id}" has no prompt: set "prompt" (or c2/c3) to the question the person is shown.`,
    );
  }
  const prompt = await deps.prompts.resolve(step.prompt, vars, {
    stepId: step.id,
    fallbackKey: step.fallbackKey,
  });
  return prompt.text;
}

/** `{ a: { b: value } }` for the dot path `a.b` (the gate's `intentField`). */
function atPath(path: string, value: unknown): Record<string, unknown> {
  const keys = path.split(".");
  let node: unknown = value;
  for (let i = keys.length - 1; i >= 0; i--) {
    const wrapper: Record<string, unknown> = {};
    Object.defineProperty(wrapper, keys[i], { value: node, enumerable: true, writable: true });
    node = wrapper;
  }
  return node as Record<string, unknown>;
}
