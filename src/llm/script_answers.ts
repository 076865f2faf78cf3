/**
 * The answers a script or recording gives a run's waits, beside the model's answers: under the key
 * `_answers`, in the order the run waits, one per wait — an input step's answer, or a tool call's
 * permission (`{ "decision": "allow" | "deny" }`). A recording (`run-agent --record`,
 * `--show --as-script`) writes the answers the run was given, from its `input_answer` log lines, so
 * the test kit and `deno task eval` replay a run with an input step to its end.
 *
 * ```yaml
 * _answers:
 *   - step: approve.release
 *     value: { decision: next, note: ship it }
 *     by: cli (erin)
 *   - step: fix
 *     tool: Bash
 *     value: { decision: allow }
 * ```
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { RunLogEntry } from "../store/types.ts";

/** The key of a script's answers (never a step id: step ids start with a letter or digit). */
export const ANSWERS_KEY = "_answers";

/** One answer to one wait of a run, as a script or recording gives it. */
export interface ScriptAnswer {
  /**
   * The step that waits: an input step, the step whose tool call waits for permission, or (in a
   * parent run) the agent step whose child waits. When given, a run that waits elsewhere is not
   * answered with it (`REPLAY_ANSWER_MISMATCH`).
   */
  step?: string;
  /** For a tool call's permission: the tool. When given, it must be the tool that waits. */
  tool?: string;
  /** The answer (an input step's: what its schema takes; a permission's: `{ decision }`). */
  value: unknown;
  /** Who gave it (recorded as `answeredBy`; default: the harness's name). */
  by?: string;
}

/** The most answers a script holds. */
export const MAX_SCRIPT_ANSWERS = 10_000;

/**
 * Reads a script's `_answers` (or another list of answers, named `key` in messages): a list of
 * `{ value, step?, tool?, by? }`. Anything else is `SCRIPT_INVALID` naming the entry.
 *
 * @example
 * ```ts
 * import { parseScriptAnswers } from "./script_answers.ts";
 * parseScriptAnswers([{ step: "approve", value: { decision: "next" } }], "demo.yaml");
 * // [{ step: "approve", value: { decision: "next" } }]
 * ```
 */
export function parseScriptAnswers(
  raw: unknown,
  source: string,
  key: string = ANSWERS_KEY,
): ScriptAnswer[] {
  const invalid = (what: string) =>
    new StepflowError(
      "SCRIPT_INVALID",
      `${source}: ${key} ${what}. Each answer is { value, step?, tool?, by? }, in the order the run waits (docs/testing.md).`,
      { details: { source } },
    );
  if (!Array.isArray(raw)) throw invalid(`must be a list, got ${kindOf(raw)}`);
  if (raw.length > MAX_SCRIPT_ANSWERS) {
    throw invalid(`holds ${raw.length} answers, at most ${MAX_SCRIPT_ANSWERS}`);
  }
  return raw.map((entry, i) => {
    const where = `entry ${i + 1}`;
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      throw invalid(`${where} must be an object, got ${kindOf(entry)}`);
    }
    const e = entry as Record<string, unknown>;
    if (!Object.hasOwn(e, "value")) throw invalid(`${where} has no "value"`);
    for (const key of Object.keys(e)) {
      if (!["value", "step", "tool", "by"].includes(key)) {
        throw invalid(`${where} has an unknown key ${JSON.stringify(key.slice(0, 100))}`);
      }
    }
    const answer: ScriptAnswer = { value: e.value };
    for (const key of ["step", "tool", "by"] as const) {
      const v = e[key];
      if (v === undefined) continue;
      if (typeof v !== "string" || v === "" || v.length > 200) {
        throw invalid(`${where}: "${key}" must be a text of 1 to 200 characters`);
      }
      answer[key] = v;
    }
    return answer;
  });
}

/**
 * The answers a run was given, in order, from its `input_answer` log lines (each once): what a
 * recording of the run writes under `_answers`.
 *
 * @example
 * ```ts
 * import { answersFromLog } from "./script_answers.ts";
 * answersFromLog([{ ts: "t", runId: "r", type: "input_answer", stepId: "approve",
 *   requestId: "q1", value: { decision: "next" }, answeredBy: "cli (erin)" }]);
 * // [{ step: "approve", value: { decision: "next" }, by: "cli (erin)" }]
 * ```
 */
export function answersFromLog(log: readonly RunLogEntry[]): ScriptAnswer[] {
  const seen = new Set<string>();
  const out: ScriptAnswer[] = [];
  for (const line of log) {
    if (line.type !== "input_answer" || typeof line.stepId !== "string") continue;
    const requestId = typeof line.requestId === "string" ? line.requestId : undefined;
    if (requestId !== undefined) {
      if (seen.has(requestId)) continue;
      seen.add(requestId);
    }
    const answer: ScriptAnswer = { step: line.stepId, value: line.value };
    const permission = line.permission as { tool?: unknown } | undefined;
    if (typeof permission?.tool === "string") answer.tool = permission.tool;
    if (typeof line.answeredBy === "string") answer.by = line.answeredBy;
    out.push(answer);
  }
  return out;
}

function kindOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "a list" : typeof value;
}
