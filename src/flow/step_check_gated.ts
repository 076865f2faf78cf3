/**
 * The check-gated step (`check` in the step): the step runs; once it has run `iterations.min`
 * times, its check prompt is asked in a separate call and the verdict routes (`checkOutcome`).
 *
 * @module
 */
import { ANSWER_EXCERPT_CHARS, excerpt } from "../engine/ask_structured.ts";
import { checkRequest } from "./backend_call.ts";
import { interpretCheck } from "./check.ts";
import { isWait } from "./run_wait.ts";
import { checkOutcome } from "./decisions.ts";
import type { StepHandler } from "./step_handler.ts";
import { prepareStep } from "./step_prompt.ts";

/** Runs one iteration of a check-gated step. */
export const runCheckGatedStep: StepHandler = async (step, state, deps) => {
  const { request, vars } = await prepareStep(step, state, deps);
  const response = await deps.call(request);
  // A tool call that waits for permission: the run waits (the step runs again once answered).
  if (isWait(response)) return { outcome: response };
  const answer = excerpt(response.text, ANSWER_EXCERPT_CHARS);
  state.checkRuns++;
  if (state.checkRuns < step.iterations.min) {
    return {
      outcome: { kind: "goto", stepId: step.id, transition: "repeat" },
      record: { answer },
      response,
    };
  }
  let checked;
  try {
    const checkPrompt = await deps.prompts.resolve(step.check!.prompt, vars, { stepId: step.id });
    checked = await deps.call(checkRequest(request, checkPrompt.text));
  } catch (error) {
    // The step's own answer stays in its history entry when the check fails.
    return { error, record: { answer } };
  }
  if (isWait(checked)) return { outcome: checked };
  const verdict = interpretCheck(checked);
  const decided = checkOutcome(step, state, verdict);
  Object.assign(state, decided.counters);
  // A run that ends on a check-gated step produced that step's answer.
  if (decided.outcome.kind === "end" && decided.outcome.reason === "completed") {
    decided.outcome.output = response.text;
  }
  return { outcome: decided.outcome, record: { answer, checkResult: verdict }, response: checked };
};
