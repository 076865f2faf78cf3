/**
 * The gate-routed step (`structuredGate` in the step; closing steps too): its output schema is
 * resolved from disk first — a failure is a strike and the backend is not called
 * (`schemaStrikeOutcome`) — then the answer is asked to match the schema (re-asked with the
 * problems when it does not), the gate reads intent and handoff from it and routes
 * (`gateOutcome`), and the step's validators may send it round again (`step_validation.ts`).
 *
 * @module
 */
import { askStructured } from "../engine/ask_structured.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { validationProblems } from "../llm/json_schema.ts";
import { gateOutcome, schemaStrikeOutcome } from "./decisions.ts";
import type { CompiledOutputSchema } from "./output_validator.ts";
import { ownValue, setOwn } from "../own_record.ts";
import type { StepHandler, StepResult } from "./step_handler.ts";
import { prepareStep } from "./step_prompt.ts";
import { isWait } from "./run_wait.ts";
import { validateStep } from "./step_validation.ts";

/** Runs one iteration of a gate-routed (or closing) step. */
export const runGateRoutedStep: StepHandler = async (step, state, deps) => {
  const { request } = await prepareStep(step, state, deps);
  let schema: CompiledOutputSchema;
  try {
    schema = await deps.schemas.resolve(step.outputSchemaRef!, step.id);
    setOwn(state.schemaStrikes, step.id, 0);
  } catch (error) {
    const strikes = (ownValue(state.schemaStrikes, step.id) ?? 0) + 1;
    setOwn(state.schemaStrikes, step.id, strikes);
    const code = "STRUCTURED_OUTPUT_UNAVAILABLE";
    const unavailable = new StepflowError(code, errorMessage(error), { cause: error });
    return {
      outcome: schemaStrikeOutcome(step, strikes, errorMessage(unavailable)),
      failure: { error: unavailable, code, fields: { strike: strikes } },
    };
  }
  request.outputSchema = schema.schema;
  const asked = await askStructured({
    request,
    call: (req) => deps.call(req),
    // A tool call that waits for permission ends the ask: the run waits.
    stops: isWait,
    validate: (value) => validationProblems(schema.validate, value),
    maxReasks: deps.options.maxSchemaRetries ?? 1,
    onReask: (reask) => deps.reask(reask),
  });
  if ("stopped" in asked) return { outcome: asked.stopped };
  const answer = asked.answer;
  if (!asked.ok) {
    const problems = [asked.reason, ...asked.errors];
    const error = new StepflowError(
      "OUTPUT_SCHEMA_INVALID",
      `Step "${step.id}" output does not match ${schema.pointer} in ${schema.file} after ${asked.reasks} re-ask(s): ${
        problems.join("; ")
      }`,
      { details: { stepId: step.id, problems } },
    );
    return { error, record: { answer } };
  }
  const gate = gateOutcome(deps.definition, step, asked.value, state.iteration);
  if (gate.warning !== undefined) deps.warn(gate.warning);
  const parts = {
    record: gate.intent !== undefined ? { answer, intent: gate.intent } : { answer },
    handoff: gate.handoff,
    response: asked.response,
  };
  const outcome = gate.outcome;
  if (outcome.kind === "goto" && outcome.transition === "jump") {
    await deps.events.emit("onStepJump", deps.info, outcome.stepId);
  }
  if (!step.validation || (outcome.kind === "end" && outcome.reason !== "completed")) {
    return { ...parts, outcome };
  }
  let validated;
  try {
    validated = await validateStep(step, state, outcome, deps);
  } catch (error) {
    return { ...parts, error };
  }
  const result: StepResult = validated.error !== undefined
    ? { ...parts, error: validated.error }
    : { ...parts, outcome: validated.outcome };
  if (validated.entries.length > 0) result.followingEntries = validated.entries;
  return result;
};
