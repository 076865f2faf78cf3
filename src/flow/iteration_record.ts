/**
 * What a run records of each iteration, in one place: its `step_start` line, a re-ask made visible,
 * a failure reported, and the iteration itself — the move to the next step, its history entry,
 * `onStepEnd`, its `step_end` line (with its backend calls and validator runs) and the checkpoint
 * that commits it. The loop (`flow_run.ts`) calls these at its numbered points; the run's journal
 * and events are the run's own.
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import { excerpt, PROMPT_EXCERPT_CHARS, type ReaskInfo } from "../engine/ask_structured.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { isoTime } from "../iso_time.ts";
import type { EventEmitter } from "../events/emitter.ts";
import type { StepInfo } from "../events/types.ts";
import type { RecordedCall } from "../llm/replay_file.ts";
import type { RunJournal } from "./checkpoint.ts";
import type { MovingOutcome } from "./decisions.ts";
import { advance, type RunnerState, stepInfo } from "./run_state.ts";
import type { StepRecord } from "./step_handler.ts";
import type { HistoryEntry } from "./types.ts";

/** Records one run's iterations to its journal and events; see the module documentation. */
export class IterationRecorder {
  readonly #journal: RunJournal;
  readonly #events: EventEmitter;
  readonly #runTimeoutMs: number | undefined;

  /** The recorder of a run with this journal and these events (`runTimeoutMs` for its end). */
  constructor(journal: RunJournal, events: EventEmitter, runTimeoutMs: number | undefined) {
    this.#journal = journal;
    this.#events = events;
    this.#runTimeoutMs = runTimeoutMs;
  }

  /** The `step_start` log entry, with the prompt sent (cut to 16,384 characters) when known. */
  async stepStart(state: RunnerState, step: FlowStep, prompt?: string): Promise<void> {
    if (!this.#journal.recording) return;
    const fields: { type: string; [k: string]: unknown } = {
      type: "step_start",
      stepId: step.id,
      attempt: state.attempt,
    };
    if (prompt !== undefined) fields.prompt = excerpt(prompt, PROMPT_EXCERPT_CHARS);
    await this.#journal.log(state, fields);
  }

  /**
   * Makes a re-ask visible before it is sent: an `onStepRetry` event whose error has the code
   * `OUTPUT_REASK` (backend retries use `BACKEND_RETRY`), and a `step_reask` log entry with the
   * rejected answer.
   */
  async reask(state: RunnerState, step: FlowStep, reask: ReaskInfo): Promise<void> {
    const error = new StepflowError(
      "OUTPUT_REASK",
      `Step "${step.id}": re-asking (${reask.attempt}) because ${reask.reason}${
        reask.errors.length > 0 ? `: ${reask.errors.join("; ")}` : ""
      }`,
      { details: { stepId: step.id, reason: reask.reason, errors: reask.errors } },
    );
    await this.#events.emit("onStepRetry", stepInfo(state, step), reask.attempt, error);
    await this.#journal.log(state, {
      type: "step_reask",
      stepId: step.id,
      attempt: reask.attempt,
      reason: reask.reason,
      errors: reask.errors,
      answer: reask.answer,
    });
  }

  /** Records an iteration: the move to the next step, history, events, log, the checkpoint. */
  async iteration(
    state: RunnerState,
    history: HistoryEntry[],
    entry: HistoryEntry,
    outcome: MovingOutcome,
    info: StepInfo,
    following: readonly HistoryEntry[] = [],
    calls: readonly RecordedCall[] = [],
  ): Promise<void> {
    advance(state, entry, outcome, this.#runTimeoutMs);
    history.push(entry);
    // Each validator run is a history entry of its own, after the answer it checked.
    for (const v of following) history.push(v);
    state.historyLength = history.length;
    await this.#events.emit("onStepEnd", info, {
      transition: entry.transition,
      intent: entry.intent,
      nextStepId: entry.nextStepId,
      checkResult: entry.checkResult,
      error: entry.error,
    });
    // Built only when there is a store: this runs on every iteration.
    if (this.#journal.recording) {
      await this.#journal.log(state, {
        type: "step_end",
        stepId: entry.stepId,
        entry,
        // The iteration's backend calls (replay files: src/flow/llm_call_log.ts). The answer's
        // excerpt is the entry's own (`entry.answer`); logs of earlier versions repeated it beside
        // the entry as `answer`, where readers still find it.
        ...(calls.length > 0 ? { calls } : {}),
        usage: { ...state.usage },
        ...(Object.hasOwn(state.handoff, entry.stepId)
          ? { handoff: state.handoff[entry.stepId] }
          : {}),
      });
      for (const v of following) {
        await this.#journal.log(state, {
          type: "step_end",
          stepId: v.stepId,
          entry: v,
          validator: true,
        });
      }
    }
    // The iteration that ends the run is committed by the drive together with run_end under the
    // terminal status: a terminal checkpoint committed here, before run_end, and a crash in between
    // left an ended run without run_end that nothing resumes.
    if (!state.end) await this.#journal.checkpoint(state, "running");
  }

  /**
   * Reports a failed iteration: the history entry's error, `onStepError` with `error`, and a
   * `step_error` log line with `code` (plus `fields`). Returns the message.
   */
  async error(
    state: RunnerState,
    info: StepInfo,
    entry: HistoryEntry,
    error: unknown,
    code: string,
    fields: Record<string, unknown> = {},
  ): Promise<string> {
    const message = errorMessage(error);
    entry.error = message;
    await this.#events.emit("onStepError", info, error);
    await this.#journal.log(state, {
      type: "step_error",
      stepId: info.stepId,
      code,
      message,
      ...fields,
      ...(entry.answer ? { answer: entry.answer } : {}),
    });
    return message;
  }
}

/** The history entry of an iteration, with the fields its step filled in. */
export function historyEntry(
  state: RunnerState,
  step: FlowStep,
  startedAt: Date,
  record: StepRecord | undefined,
): HistoryEntry {
  return {
    stepId: step.id,
    iteration: state.iteration,
    attempt: state.attempt,
    transition: "next",
    startedAt: isoTime(startedAt.getTime()),
    durationMs: 0,
    ...record,
  };
}
