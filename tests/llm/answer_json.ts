/**
 * What the engine reads from a backend's answer. Backends return their text and the API's native
 * structured output only; the JSON in a text answer is read once, by the engine's reader.
 */
import assert from "node:assert/strict";
import { readJsonAnswer } from "../../src/engine/ask_structured.ts";
import type { LlmResponse } from "../../src/llm/types.ts";

/** The JSON value the engine reads from `response` (fails the test when there is none). */
export function answerJson(response: LlmResponse): unknown {
  const read = readJsonAnswer(response);
  assert.ok(read.ok, read.ok ? "" : read.rejection.reason);
  return read.value;
}

/** A chat backend's answer: text only, never JSON parsed by the backend, read by the engine. */
export function chatAnswerJson(response: LlmResponse): unknown {
  assert.equal(response.structuredOutput, undefined, "a chat backend returns text only");
  return answerJson(response);
}
