/**
 * Persistence of a run: the run log and checkpoints it writes as it goes ({@linkcode createRunJournal}),
 * and the state and history it continues from when resumed or redriven ({@linkcode restoreRun}).
 *
 * @module
 */
import type { AgentDefinition } from "../definition/types.ts";
import { StepflowError } from "../errors.ts";
import { boundDepth } from "../engine/ask_structured.ts";
import type { RunCheckpoint, RunStatus, RunStore } from "../store/types.ts";
import { assertContinuable } from "./continue_check.ts";
import { setOwn } from "./own_record.ts";
import { flowStep } from "./router.ts";
import { enterStep, type RunnerState } from "./run_state.ts";
import type { HistoryEntry } from "./types.ts";

/** Writes one run's log lines and checkpoints to its store (nothing without a store). */
export interface RunJournal {
  /** True when there is a store (callers skip building log lines otherwise). */
  readonly recording: boolean;
  /** Appends a line to the run log. */
  log(state: RunnerState, fields: { type: string; [k: string]: unknown }): Promise<void>;
  /** Saves the state as the run's checkpoint with `status`. */
  checkpoint(state: RunnerState, status: RunStatus): Promise<void>;
}

/**
 * The journal of one run. `logEntries` is the number of lines the log already holds (a resumed
 * run's); the checkpoint records the count so a reader knows which lines it covers.
 */
export function createRunJournal(store: RunStore | undefined, logEntries = 0): RunJournal {
  return {
    recording: store !== undefined,
    async log(state, fields) {
      if (!store) return;
      logEntries++;
      await store.append(state.runId, {
        ts: new Date().toISOString(),
        runId: state.runId,
        iteration: state.iteration,
        ...fields,
      });
    },
    async checkpoint(state, status) {
      if (!store) return;
      const checkpoint: RunCheckpoint = {
        version: 1,
        runId: state.runId,
        agent: state.agent,
        status,
        startedAt: state.startedAt,
        updatedAt: new Date().toISOString(),
        logEntries,
        state: state as unknown as Record<string, unknown>,
      };
      await store.saveCheckpoint(checkpoint);
    },
  };
}

/** A run to continue: its state, its history, and how many lines its log holds. */
export interface RestoredRun {
  /** The state to continue from (a copy the loop may change). */
  state: RunnerState;
  /** The history so far, read back from the run log. */
  history: HistoryEntry[];
  /** Lines in the run log. */
  logEntries: number;
  /**
   * The run as it was before this resume or redrive (its checkpoint's state and status), to put
   * back when the drive cannot even use its backend (see {@linkcode restoreUnchanged}).
   */
  before?: { state: RunnerState; status: RunStatus };
}

/**
 * Loads a checkpoint and the history from the run log: `resume` continues where the run stopped,
 * `redrive` restarts a failed run at its failed step with fresh visit counters.
 */
export async function restoreRun(
  store: RunStore | undefined,
  definition: AgentDefinition,
  runId: string,
  redrive: boolean,
  warn: (message: string) => void,
): Promise<RestoredRun> {
  const verb = redrive ? "redrive" : "resume";
  if (!store) {
    throw new StepflowError(
      "NO_RUN_STORE",
      `Cannot ${verb} run ${runId}: the runner has no store. Pass options.store (the file store records runs under logging.directory).`,
    );
  }
  const checkpoint = await store.loadCheckpoint(runId);
  if (!checkpoint) {
    throw new StepflowError(
      "RUN_NOT_FOUND",
      `No run ${runId} was found to ${verb}. List runs with --runs.`,
      {
        details: { runId },
      },
    );
  }
  if (checkpoint.agent !== definition.name) {
    throw new StepflowError(
      "RUN_AGENT_MISMATCH",
      `Run ${runId} belongs to agent "${checkpoint.agent}", not "${definition.name}".`,
    );
  }
  const state = copyState(checkpoint.state as unknown as RunnerState, warn);
  assertContinuable(runId, checkpoint.status, verb);
  if (redrive) {
    const failedStep = state.end?.stepId ?? state.currentStepId;
    if (!flowStep(definition, failedStep)) {
      throw new StepflowError(
        "RUN_STEP_UNKNOWN",
        `Run ${runId} failed at step "${failedStep}", which the agent no longer defines.`,
      );
    }
    enterStep(state, failedStep);
    setOwn(state.schemaStrikes, failedStep, 0);
    delete state.end;
  } else {
    if (!flowStep(definition, state.currentStepId)) {
      throw new StepflowError(
        "RUN_STEP_UNKNOWN",
        `Run ${runId} stopped at step "${state.currentStepId}", which the agent no longer defines.`,
      );
    }
  }
  const log = await store.readLog(runId);
  // A crash between a step_end line and its checkpoint leaves a step_end the checkpoint does not
  // count; that step runs again, so every resume marker cuts history back to what it had.
  const history: HistoryEntry[] = [];
  for (const line of log) {
    if (line.type === "step_end") history.push(line.entry as HistoryEntry);
    else if (line.type === "run_resume" || line.type === "run_redrive") {
      history.length = Math.min(history.length, Number(line.historyLength ?? 0));
    }
  }
  history.length = Math.min(history.length, state.historyLength);
  if (history.length !== state.historyLength) {
    throw new StepflowError(
      "RUN_LOG_INCOMPLETE",
      `Run ${runId}: the checkpoint records ${state.historyLength} history entries but the log holds ${history.length}. The log was truncated; refusing to resume from a state that would lose history.`,
    );
  }
  return {
    state,
    history,
    logEntries: log.length,
    before: { state: checkpoint.state as unknown as RunnerState, status: checkpoint.status },
  };
}

/**
 * Ends a resume or redrive whose backend turned out unusable (credentials refused, executable
 * missing: `BACKEND_SETUP_CODES`). When it committed no iteration, the checkpoint it started from is
 * put back: the run stays as it was — interrupted or failed, with the backend choice it recorded.
 * Otherwise the run stays at its last committed iteration, interrupted. The log keeps the lines of
 * the attempt; the next resume marker cuts them from the history. Returns the error to throw,
 * which says so.
 */
export async function restoreUnchanged(
  journal: RunJournal,
  before: { state: RunnerState; status: RunStatus },
  now: RunnerState,
  error: StepflowError,
): Promise<StepflowError> {
  const unchanged = now.historyLength === before.state.historyLength;
  if (unchanged) await journal.checkpoint(before.state, before.status);
  const how = !unchanged || before.status === "running" || before.status === "paused"
    ? "interrupted"
    : before.status;
  return new StepflowError(
    error.code,
    `${error.message}\nRun ${before.state.runId} was left ${
      unchanged ? "as it was" : "at its last committed iteration"
    } (${how}); fix the backend's setup, then continue it again.`,
    { cause: error, ...(error.details ? { details: error.details } : {}) },
  );
}
/** Nesting kept in a restored state's handoff; outputs are bounded far below it at validation. */
const RESTORED_DEPTH = 1_000;

/**
 * A copy of a checkpointed state that the loop can mutate without touching the store's object: the
 * containers the loop writes to are copied one level. `structuredClone` recursed, so a handoff value
 * nested a few thousand levels deep (stored before output depth was bounded) made every resume
 * crash; such values are cut at {@linkcode RESTORED_DEPTH} levels, with a warning, so the run can
 * checkpoint and print them again.
 */
function copyState(saved: RunnerState, warn: (message: string) => void): RunnerState {
  const handoff = boundDepth(saved.handoff, RESTORED_DEPTH) as RunnerState["handoff"];
  const latest = boundDepth(saved.latestHandoff, RESTORED_DEPTH) as RunnerState["latestHandoff"];
  if (handoff !== saved.handoff || latest !== saved.latestHandoff) {
    warn(
      `run ${saved.runId}: its handoff holds data nested deeper than ${RESTORED_DEPTH} levels (stored by an older version); the deeper parts are omitted`,
    );
  }
  return {
    ...saved,
    schemaStrikes: { ...saved.schemaStrikes },
    handoff: { ...handoff },
    latestHandoff: { ...latest },
    usage: { ...saved.usage },
  };
}
