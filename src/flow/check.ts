/**
 * Reading the verdict of a seed 001 check response.
 *
 * @module
 */
import { exceedsDepth, MAX_OUTPUT_DEPTH } from "../engine/ask_structured.ts";
import { extractJson } from "../llm/structured_output.ts";
import type { LlmResponse } from "../llm/types.ts";

/** A check verdict. */
export interface CheckVerdict {
  /** `ok` passes, `ng` fails. */
  result: "ok" | "ng";
  /** The check's message (or why the response could not be read). */
  message: string;
}

/** The JSON Schema requested from backends for check calls. */
export const CHECK_RESPONSE_SCHEMA: Readonly<Record<string, unknown>> = Object.freeze({
  type: "object",
  properties: {
    result: {
      type: ["string", "boolean"],
      description: "ok | ng (also pass | fail | true | false)",
    },
    message: { type: "string" },
  },
  required: ["result"],
});

const PASS = new Set(["ok", "pass", "true"]);
const FAIL = new Set(["ng", "fail", "false"]);

/**
 * Interprets a check response: structured output first, else the first JSON object or fenced block
 * in the text. `ok|pass|true` → ok, `ng|fail|false` → ng; anything unreadable is NG with the reason.
 *
 * @example
 * ```ts
 * import { interpretCheck } from "./check.ts";
 * const fence = "`".repeat(3); // a fenced block inside this example would end it
 * interpretCheck({ text: `${fence}json\n{"result":"ng","message":"2 tests fail"}\n${fence}` });
 * // { result: "ng", message: "2 tests fail" }
 * ```
 */
export function interpretCheck(response: LlmResponse): CheckVerdict {
  let value = response.structuredOutput;
  if (value === undefined) {
    const extracted = extractJson(response.text);
    if (!extracted.ok) {
      return { result: "ng", message: `Check response could not be parsed: ${extracted.reason}.` };
    }
    value = extracted.value;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return {
      result: "ng",
      message: "Check response could not be parsed: it is not a JSON object.",
    };
  }
  if (exceedsDepth(value, MAX_OUTPUT_DEPTH)) {
    return {
      result: "ng",
      message:
        `Check response could not be parsed: it is nested deeper than ${MAX_OUTPUT_DEPTH} levels.`,
    };
  }
  const { result, message } = value as { result?: unknown; message?: unknown };
  const text = typeof message === "string"
    ? message
    : message === undefined
    ? ""
    : JSON.stringify(message);
  const key = typeof result === "boolean"
    ? String(result)
    : typeof result === "string"
    ? result.trim().toLowerCase()
    : "";
  if (PASS.has(key)) return { result: "ok", message: text };
  if (FAIL.has(key)) return { result: "ng", message: text };
  return {
    result: "ng",
    message: `Check response could not be parsed: "result" is ${
      JSON.stringify(result) ?? "missing"
    }, expected ok|ng|pass|fail|true|false.`,
  };
}
