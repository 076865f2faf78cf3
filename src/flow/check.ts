/**
 * Reading the verdict of a check-gated step's check response (docs/runner.md). The JSON is read by
 * the engine's one reader of answers (`readJsonAnswer`); a check is never re-asked: an unreadable
 * verdict is NG with the reason, so the step's `onFail` decides.
 *
 * @module
 */
import { readJsonAnswer } from "../engine/ask_structured.ts";
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
 * Interprets a check response read by `readJsonAnswer` (native structured output first, else the
 * JSON in the text; too deep is unreadable). `ok|pass|true` → ok, `ng|fail|false` → ng; anything unreadable is NG with the reason.
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
  const read = readJsonAnswer(response);
  if (!read.ok) {
    return {
      result: "ng",
      message: `Check response could not be parsed: ${read.rejection.reason}.`,
    };
  }
  const value = read.value;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return {
      result: "ng",
      message: "Check response could not be parsed: it is not a JSON object.",
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
