/**
 * The run log's side of durable tool calls (see `tool_call_resume.ts` for the lines and how a
 * resume reads them): for one iteration of a recorded step with tools, each model turn and each
 * call's start and end go through the run's one journal, and a call whose tool is not idempotent
 * is made durable before it acts and again once it ended — by saving the checkpoint the step
 * started from again, with the step's marker (the store's one flush, as at an iteration's end).
 *
 * @module
 */
import type { FlowStep } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import type { ToolLoopResume } from "../engine/tool_loop.ts";
import type { ToolCallEvent } from "../events/types.ts";
import type { ToolTurnResponse } from "../llm/tool_turn.ts";
import type { RunJournal } from "./checkpoint.ts";
import type { RunnerState } from "./run_state.ts";
import { copySpendByStep } from "./spend_ledger.ts";
import { replayContent, toolCallLogFields, toolCallStartFields } from "./tool_call_log.ts";
import { type InStepMarker, type ResumedStep, toolTurnLogFields } from "./tool_call_resume.ts";

/** A store's failure to record a tool call in the middle of a step (it stops the run, not the step). */
export class InStepFlushFailed extends Error {
  /** Wraps the store's error (`cause`). */
  constructor(cause: unknown) {
    super("the run store could not record a tool call", { cause });
  }
}

/** What one tool-loop call of the step records: told each turn and each moment of each call. */
export interface StepCallRecorder {
  /** The recorded turns and results this call continues from, when the run was resumed inside. */
  resume?: ToolLoopResume;
  /** A model turn (a replayed one is not logged again). */
  turn(response: ToolTurnResponse, replayed: boolean): Promise<void>;
  /** A moment of a call: its start (allowed) before it acts, its end. */
  moment(event: ToolCallEvent, idempotent: boolean | undefined): Promise<void>;
}

/**
 * One iteration of a recorded step with tools. Create it with {@linkcode StepCallJournal.enter}
 * before the iteration is counted (the state is then the last checkpoint's).
 */
export class StepCallJournal {
  readonly #journal: RunJournal;
  readonly #state: RunnerState;
  readonly #snapshot: RunnerState;
  /** Where the step's lines begin, saved with each mid-step checkpoint. */
  readonly marker: InStepMarker;
  /** What a resumed run recorded of this step, when it continues inside it. */
  readonly resumed?: ResumedStep;

  private constructor(
    journal: RunJournal,
    state: RunnerState,
    marker: InStepMarker,
    resumed: ResumedStep | undefined,
  ) {
    this.#journal = journal;
    this.#state = state;
    // The containers the iteration changes are copied; their values are shared (never mutated).
    this.#snapshot = {
      ...state,
      schemaStrikes: { ...state.schemaStrikes },
      handoff: { ...state.handoff },
      latestHandoff: { ...state.latestHandoff },
      usage: { ...state.usage },
      // The run's ledger changes the spend per step in place.
      ...(state.spendByStep ? { spendByStep: copySpendByStep(state.spendByStep) } : {}),
    };
    this.marker = marker;
    if (resumed) this.resumed = resumed;
  }

  /**
   * The journal of the iteration about to run `step`, or undefined when nothing is recorded (no
   * store) or the step offers no tools. `resumed` is what a resume found of the step the run was
   * killed in; it is used when it is this step at this iteration.
   */
  static enter(
    journal: RunJournal,
    state: RunnerState,
    step: FlowStep,
    agentTools: readonly string[] | undefined,
    resumed: ResumedStep | undefined,
  ): StepCallJournal | undefined {
    const tools = step.allowedTools ?? agentTools;
    if (!journal.recording || !tools?.length) return undefined;
    const iteration = state.iteration + 1;
    const continues = resumed?.marker.stepId === step.id && resumed.marker.iteration === iteration;
    return new StepCallJournal(journal, state, {
      stepId: step.id,
      iteration,
      fromLine: continues ? resumed.marker.fromLine : journal.lines,
    }, continues ? resumed : undefined);
  }

  /** The recorder of the iteration's backend call at `callIndex` (its place among the calls). */
  recorder(callIndex: number): StepCallRecorder {
    const state = this.#state;
    const stepId = this.marker.stepId;
    const resume = this.resumed?.calls.get(callIndex);
    let turn = 0;
    // Calls whose tool is not idempotent: their end is made durable at once too.
    const effectful = new Set<string>();
    return {
      ...(resume ? { resume } : {}),
      turn: async (response, replayed) => {
        turn++;
        if (replayed) return;
        await this.#journal.log(state, toolTurnLogFields(stepId, callIndex, turn, response));
      },
      moment: async (call, idempotent) => {
        const where = { call: callIndex, turn };
        const key = `${turn}:${call.callId}`;
        if (call.phase === "decided" && call.decision === "allow") {
          await this.#journal.log(state, toolCallStartFields(stepId, where, call, idempotent));
          if (idempotent !== true) {
            effectful.add(key);
            await this.#flush();
          }
        } else if (call.phase === "finished") {
          await this.#journal.log(state, {
            ...toolCallLogFields(stepId, call),
            ...where,
            ...replayContent(call.result),
          });
          if (effectful.delete(key)) await this.#flush();
        }
      },
    };
  }

  /**
   * Puts `state` back as the step found it, with the step's marker: for a run that stops inside
   * the step and waits (a permission ask), so its `waiting` checkpoint is one a resume continues
   * inside the step from, with the counters the step started with.
   */
  suspend(state: RunnerState): void {
    const live = state as unknown as Record<string, unknown>;
    for (const key of Object.keys(live)) {
      if (!Object.hasOwn(this.#snapshot, key)) delete live[key];
    }
    Object.assign(state, {
      ...this.#snapshot,
      schemaStrikes: { ...this.#snapshot.schemaStrikes },
      handoff: { ...this.#snapshot.handoff },
      latestHandoff: { ...this.#snapshot.latestHandoff },
      usage: { ...this.#snapshot.usage },
      ...(this.#snapshot.spendByStep
        ? { spendByStep: copySpendByStep(this.#snapshot.spendByStep) }
        : {}),
      inStep: this.marker,
    });
  }

  /**
   * Makes what the step logged so far durable: the checkpoint the step started from, saved again
   * with the step's marker.
   */
  async #flush(): Promise<void> {
    try {
      await this.#journal.checkpoint({ ...this.#snapshot, inStep: this.marker }, "running");
    } catch (error) {
      // A worker shutting down suspends its runs after a committed checkpoint: this one is
      // committed, and the step goes on to its end, where the iteration's checkpoint suspends it
      // (stopping here would leave a call started that never ran, which a resume must refuse).
      if (error instanceof StepflowError && error.code === "RUN_SUSPENDED") return;
      throw new InStepFlushFailed(error);
    }
  }
}
