/**
 * What the runner keeps of every backend call: the iteration's `step_end` log entry carries its
 * calls (`calls`), which replay files are made of (src/llm/replay_file.ts). One entry per
 * iteration, as before: recording the calls costs no extra append.
 *
 * @module
 */
import { boundDepth } from "../engine/ask_structured.ts";
import type { RecordedCall, RecordedTurn } from "../llm/replay_file.ts";
import type { ToolTurnResponse } from "../llm/tool_turn.ts";
import type { LlmRequest, LlmResponse } from "../llm/types.ts";

/** Nesting kept of a logged structured output (answers are validated far shallower). */
const LOGGED_OUTPUT_DEPTH = 256;

/**
 * The record of one call: the step, kind, iteration, the model that answered (and its backend and
 * the model chain's fall-throughs before it, when a chain chose it), the prompt and system prompt as sent,
 * the model's turns when the call went through the tool loop (`turns`: the tool calls it asked for,
 * then the final answer's turn), and the answer (text, structured output, usage, cost, session) or
 * the error the call failed with.
 */
export function recordedCall(
  request: LlmRequest,
  outcome: { response: LlmResponse } | { error: string },
  model: string | undefined,
  turns: readonly ToolTurnResponse[] = [],
): RecordedCall {
  const fields: RecordedCall = {
    stepId: request.stepId,
    kind: request.kind,
    iteration: request.iteration,
    prompt: request.prompt,
  };
  // The model that answered: a model chain's choice, else the one asked for.
  const answered = "response" in outcome ? outcome.response : undefined;
  const usedModel = answered?.model ?? request.model ?? model;
  if (usedModel !== undefined) fields.model = usedModel;
  if (answered?.backend !== undefined) fields.backend = answered.backend;
  if (answered?.fallbacks?.length) fields.fallbacks = answered.fallbacks;
  if (request.systemPrompt !== undefined) fields.system = request.systemPrompt;
  if (turns.length > 0) fields.turns = turns.map(recordedTurn);
  if ("error" in outcome) {
    fields.error = outcome.error;
    return fields;
  }
  const r = outcome.response;
  const answer: NonNullable<RecordedCall["answer"]> = { text: r.text };
  if (r.structuredOutput !== undefined) {
    answer.output = boundDepth(r.structuredOutput, LOGGED_OUTPUT_DEPTH);
  }
  if (r.usage !== undefined) answer.usage = r.usage;
  if (r.costUsd !== undefined) answer.costUsd = r.costUsd;
  if (r.sessionId !== undefined) answer.sessionId = r.sessionId;
  fields.answer = answer;
  return fields;
}

/** The record of one model turn (its text, the calls it asked for, its usage and cost). */
function recordedTurn(turn: ToolTurnResponse): RecordedTurn {
  const kept: RecordedTurn = {
    text: turn.text,
    toolCalls: turn.toolCalls.map((c) => ({
      id: c.id,
      name: c.name,
      arguments: boundDepth(readableArguments(c.arguments), LOGGED_OUTPUT_DEPTH),
    })),
  };
  if (turn.usage !== undefined) kept.usage = turn.usage;
  if (turn.costUsd !== undefined) kept.costUsd = turn.costUsd;
  return kept;
}

/** Arguments text a tool loop reads no further than an object (its size is bounded there). */
const MAX_READABLE_ARGUMENTS = 1024 * 1024;

/**
 * Arguments sent as JSON text (OpenAI sends them so) kept as the object they parse to, which the
 * tool loop reads the same way and a recording shows readably; text that is not a JSON object
 * stays text, so a replay gets the same error the model got.
 */
function readableArguments(raw: unknown): unknown {
  if (typeof raw !== "string" || raw.length > MAX_READABLE_ARGUMENTS) return raw;
  try {
    const value = JSON.parse(raw);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : raw;
  } catch {
    return raw;
  }
}
