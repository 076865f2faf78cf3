/**
 * Answering a run's waits from a list, as a person did: the test kit and `deno task eval` give each
 * wait of a run — an input step's question, a tool call's permission, a child run's question — the
 * next answer of a script's `_answers`, a recording's, or the caller's own, and continue the run to
 * its end or to a wait nobody answers.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { PendingInput } from "../flow/input_request.ts";
import type { StepFlowRunner } from "../flow/runner.ts";
import type { StepFlowResult } from "../flow/types.ts";
import type { ScriptAnswer } from "../llm/script_answers.ts";
import type { LlmBackend } from "../llm/types.ts";

export type { ScriptAnswer };

/** Options of {@linkcode answerWaits}. */
export interface AnswerWaitsOptions {
  /** Who answers when an answer names nobody (`answeredBy`; e.g. `test`, `eval`). */
  by: string;
  /** Where the answers come from, for messages (a file, `the case`). */
  source: string;
  /** Cancels the run. */
  signal?: AbortSignal;
}

/** What {@linkcode answerWaits} returns. */
export interface AnsweredRun {
  /** The run's result after the last answer (still `waiting` when the answers ran out). */
  result: StepFlowResult;
  /** How many answers were given. */
  used: number;
}

/**
 * Gives each wait of the run that `result` stopped at the next of `answers` and continues it
 * (`runner.answer`), until the run ends or waits with no answer left. An answer that names a step
 * (or a tool) other than the one that waits is `REPLAY_ANSWER_MISMATCH`: the run took another path
 * than the one the answers were written for. An answer the step's schema refuses is the runner's
 * `INPUT_ANSWER_INVALID`.
 *
 * @example
 * ```ts ignore
 * const first = await runner.run({ args: { version: "1.2.0" } });
 * const { result } = await answerWaits(runner, first, [{ value: { decision: "next" } }], {
 *   by: "test", source: "the test",
 * });
 * ```
 */
export async function answerWaits(
  runner: StepFlowRunner,
  result: StepFlowResult,
  answers: readonly ScriptAnswer[],
  options: AnswerWaitsOptions,
): Promise<AnsweredRun> {
  let used = 0;
  while (result.completionReason === "waiting" && result.waiting && used < answers.length) {
    const answer = answers[used];
    const waiting = result.waiting;
    const problem = mismatch(answer, waiting);
    if (problem !== undefined) {
      throw new StepflowError(
        "REPLAY_ANSWER_MISMATCH",
        `Run ${result.runId} waits ${waitText(waiting)}, but answer ${
          used + 1
        } of ${options.source} ${problem}: the run took another path than the one the answers were written for. Record the run again, or fix the answers.`,
        { details: { runId: result.runId, stepId: waiting.stepId, answer: used + 1 } },
      );
    }
    used++;
    result = await runner.answer(result.runId, answer.value, {
      answeredBy: answer.by ?? options.by,
      requestId: waiting.requestId,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  }
  return { result, used };
}

/** The answers a script or recording backend holds (its `_answers`), else none. */
export function scriptAnswers(backend: LlmBackend): readonly ScriptAnswer[] {
  const answers = (backend as { answers?: unknown }).answers;
  return Array.isArray(answers) ? answers as ScriptAnswer[] : [];
}

/** True when some answer is a tool call's permission (the run must wait for it, not refuse). */
export function answersPermissions(answers: readonly ScriptAnswer[]): boolean {
  return answers.some((a) => a.tool !== undefined);
}

function mismatch(answer: ScriptAnswer, waiting: PendingInput): string | undefined {
  if (answer.step !== undefined && answer.step !== waiting.stepId) {
    return `is for step "${answer.step}"`;
  }
  if (answer.tool !== undefined && waiting.permission?.tool !== answer.tool) {
    return `is the permission of a ${answer.tool} call`;
  }
  return undefined;
}

function waitText(waiting: PendingInput): string {
  return waiting.permission
    ? `for permission to run ${waiting.permission.tool} in step "${waiting.stepId}"`
    : `for an answer at step "${waiting.stepId}"`;
}
