/**
 * What the MCP server tells a client about a run that waits (docs/mcp-server.md, "Runs that wait
 * for an answer"): the question, when the wait passes, the JSON Schema the answer must match and an
 * example value that does, and the `answer_run` call to make.
 *
 * @module
 */
import { exampleAnswer } from "../definition/answer_form.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { answerFormOf, answerSchemaOf, type PendingInput } from "../flow/input_request.ts";

/**
 * What a client needs to give a waiting run its answer: the JSON Schema the value must match and a
 * value that does (every required field filled, a choice's first value). Undefined when the
 * step's schema cannot be read now (it changed since the run asked); the answer is then checked
 * when given, as always.
 */
export async function answerGuide(
  definition: AgentDefinition,
  waiting: PendingInput,
): Promise<AnswerGuide | undefined> {
  try {
    const [schema, form] = await Promise.all([
      answerSchemaOf(definition, waiting),
      answerFormOf(definition, waiting),
    ]);
    return { schema, example: exampleAnswer(form) };
  } catch {
    return undefined;
  }
}

/** The answer's schema and an example value (see {@linkcode answerGuide}). */
export interface AnswerGuide {
  /** The JSON Schema the answer must match. */
  schema: Record<string, unknown>;
  /** A value that matches it. */
  example: Record<string, unknown>;
}

/**
 * What a client needs of a waiting run's request (the request id and schema reference stay
 * inside): the question, when it passes, and the answer's schema and an example value.
 */
export function waitingView(
  waiting: PendingInput,
  guide: AnswerGuide | undefined,
): Record<string, unknown> {
  return {
    stepId: waiting.stepId,
    question: waiting.prompt,
    requestedAt: waiting.requestedAt,
    ...(waiting.expiresAt !== undefined ? { expiresAt: waiting.expiresAt } : {}),
    ...(waiting.timeoutIntent !== undefined ? { timeoutIntent: waiting.timeoutIntent } : {}),
    ...(guide ? { answerSchema: guide.schema, exampleValue: guide.example } : {}),
  };
}

/** The lines that say how to answer a waiting run with `answer_run` (schema and example). */
export function answerHint(
  agent: string,
  runId: string,
  waiting: PendingInput,
  guide: AnswerGuide | undefined,
): string {
  const before = waiting.expiresAt ? ` before ${waiting.expiresAt}` : "";
  if (!guide) {
    return `Answer it with the answer_run tool: { "agent": ${
      JSON.stringify(agent)
    }, "runId": "${runId}", "value": <JSON matching the answer schema of step "${waiting.stepId}"> }${before}.`;
  }
  return [
    `The answer (value) must match this JSON Schema: ${JSON.stringify(guide.schema)}`,
    "Answer it with the answer_run tool, for example:",
    `  ${JSON.stringify({ agent, runId, value: guide.example })}`,
    ...(waiting.expiresAt
      ? [
        `Answer before ${waiting.expiresAt}; then the wait passes and the step takes the intent "${waiting.timeoutIntent}".`,
      ]
      : []),
  ].join("\n");
}
