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
import { isoTime } from "../iso_time.ts";
import { setOwn } from "../own_record.ts";
import { flowStep } from "./router.ts";
import { restoreGrants } from "./permission_asks.ts";
import { enterStep, type RunnerState } from "./run_state.ts";
import { restoreSpend } from "./spend_ledger.ts";
import type { HistoryEntry } from "./types.ts";
import { type ResumedStep, resumedStepOf } from "./tool_call_resume.ts";

/** Writes one run's log lines and checkpoints to its store (nothing without a store). */
export interface RunJournal {
  /** True when there is a store (callers skip building log lines otherwise). */
  readonly recording: boolean;
  /** Lines the run log holds so far (the position of the next line). */
  readonly lines: number;
  /** Appends a line to the run log. */
  log(state: RunnerState, fields: { type: string; [k: string]: unknown }): Promise<void>;
  /** Saves the state as the run's checkpoint with `status`. */
  checkpoint(state: RunnerState, status: RunStatus): Promise<void>;
}

/**
 * A handoff value at least this large (characters of its JSON) is stored once: in the `step_end`
 * log line of the step that handed it off. Checkpoints refer to that line instead of repeating the
 * value (every checkpoint line of the log, the checkpoint file and the database row would each
 * hold it again, twice: per step and as the latest value of its key).
 */
export const HANDOFF_BY_REFERENCE_CHARS = 16_384;

/** Where a large handoff value was logged: the line's position among the run's log entries. */
interface LoggedValue {
  /** 0-based position in `store.readLog(runId)`. */
  line: number;
  /** The value itself (compared by identity: a value the loop replaced is inlined again). */
  value: unknown;
}

/** The large handoff values a run has logged, per step and key, and per key for the latest. */
export interface LoggedHandoff {
  /** `step → key → where` for `state.handoff`. */
  byStep: Map<string, Map<string, LoggedValue>>;
  /** `key → where` for `state.latestHandoff`. */
  latest: Map<string, LoggedValue>;
}

const jsonChars = new WeakMap<object, number>();

/** True for a value worth storing once (its JSON is at least {@linkcode HANDOFF_BY_REFERENCE_CHARS}). */
function large(value: unknown): boolean {
  if (typeof value === "string") return value.length >= HANDOFF_BY_REFERENCE_CHARS;
  if (typeof value !== "object" || value === null) return false;
  let chars = jsonChars.get(value);
  if (chars === undefined) {
    try {
      chars = JSON.stringify(value)?.length ?? 0;
    } catch {
      chars = 0;
    }
    jsonChars.set(value, chars);
  }
  return chars >= HANDOFF_BY_REFERENCE_CHARS;
}

/** Records the large values of a `step_end` line's `handoff` as logged at `line`. */
function noteLogged(logged: LoggedHandoff, stepId: string, handoff: unknown, line: number): void {
  if (typeof handoff !== "object" || handoff === null || Array.isArray(handoff)) return;
  for (const [key, value] of Object.entries(handoff)) {
    if (!large(value)) continue;
    let keys = logged.byStep.get(stepId);
    if (!keys) logged.byStep.set(stepId, keys = new Map());
    keys.set(key, { line, value });
    logged.latest.set(key, { line, value });
  }
}

/**
 * The state as a checkpoint stores it: a large handoff value that a `step_end` line of the log
 * holds is replaced by `null`, its key kept in place (so the order of keys survives), and its line
 * recorded in `handoffInLog` (`step → key → line`) or `latestHandoffInLog` (`key → line`).
 * Undefined when nothing is replaced (the state is stored as it is).
 */
function referencedState(
  state: RunnerState,
  logged: LoggedHandoff,
): Record<string, unknown> | undefined {
  if (logged.latest.size === 0) return undefined;
  const handoff: Record<string, Record<string, unknown>> = {};
  const handoffInLog: Record<string, Record<string, number>> = {};
  const latestHandoff: Record<string, unknown> = {};
  const latestHandoffInLog: Record<string, number> = {};
  let replaced = false;
  for (const [stepId, values] of Object.entries(state.handoff)) {
    const keys = logged.byStep.get(stepId);
    const copy: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(values)) {
      const where = keys?.get(key);
      if (where && where.value === value) {
        setOwn(copy, key, null);
        if (!Object.hasOwn(handoffInLog, stepId)) setOwn(handoffInLog, stepId, {});
        setOwn(handoffInLog[stepId], key, where.line);
        replaced = true;
      } else setOwn(copy, key, value);
    }
    setOwn(handoff, stepId, copy);
  }
  for (const [key, value] of Object.entries(state.latestHandoff)) {
    const where = logged.latest.get(key);
    if (where && where.value === value) {
      setOwn(latestHandoff, key, null);
      setOwn(latestHandoffInLog, key, where.line);
      replaced = true;
    } else setOwn(latestHandoff, key, value);
  }
  if (!replaced) return undefined;
  return { ...state, handoff, latestHandoff, handoffInLog, latestHandoffInLog };
}

/**
 * The journal of one run. `logEntries` is the number of lines the log already holds (a resumed
 * run's); the checkpoint records the count so a reader knows which lines it covers. `logged` are
 * the large handoff values a resumed run's log already holds ({@linkcode RestoredRun.logged}).
 */
export function createRunJournal(
  store: RunStore | undefined,
  logEntries = 0,
  logged: LoggedHandoff = { byStep: new Map(), latest: new Map() },
): RunJournal {
  return {
    recording: store !== undefined,
    get lines() {
      return logEntries;
    },
    async log(state, fields) {
      if (!store) return;
      const line = logEntries++;
      await store.append(state.runId, {
        ts: isoTime(),
        runId: state.runId,
        iteration: state.iteration,
        ...fields,
      });
      if (fields.type === "step_end" && typeof fields.stepId === "string") {
        noteLogged(logged, fields.stepId, fields.handoff, line);
      }
    },
    async checkpoint(state, status) {
      if (!store) return;
      const referenced = referencedState(state, logged);
      const checkpoint: RunCheckpoint = {
        // Version 2: the state refers to log lines for large handoff values (older readers
        // refuse it rather than resume with those values missing).
        version: referenced ? 2 : 1,
        runId: state.runId,
        agent: state.agent,
        status,
        startedAt: state.startedAt,
        updatedAt: isoTime(),
        logEntries,
        state: referenced ?? state as unknown as Record<string, unknown>,
      };
      await store.saveCheckpoint(checkpoint);
    },
  };
}

/** A run to continue: its state, its history, and how many lines its log holds. */
export interface RestoredRun {
  /**
   * True when the state holds a recorded answer whose `input_answer` line is not in the log (the
   * drive that recorded it stopped between its checkpoint and the line): the next drive writes it.
   */
  answerUnlogged?: boolean;
  /** The state to continue from (a copy the loop may change). */
  state: RunnerState;
  /** The history so far, read back from the run log. */
  history: HistoryEntry[];
  /** Lines in the run log. */
  logEntries: number;
  /** The large handoff values the checkpoint took from the log (the journal keeps referring to them). */
  logged?: LoggedHandoff;
  /**
   * The run as it was before this resume or redrive (its checkpoint's state and status), to put
   * back when the drive cannot even use its backend (see {@linkcode restoreUnchanged}).
   */
  before?: { state: RunnerState; status: RunStatus };
  /**
   * For a run killed in the middle of a step with tools (its checkpoint holds `inStep`): the
   * recorded turns and tool calls the step continues from. Never for a redrive.
   */
  inStep?: ResumedStep;
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
      `No run ${runId} was found to ${verb}; the recorded runs are listed by the next command.`,
      { details: { runId, next: { action: "runs" } } },
    );
  }
  if (checkpoint.agent !== definition.name) {
    throw new StepflowError(
      "RUN_AGENT_MISMATCH",
      `Run ${runId} belongs to agent "${checkpoint.agent}", not "${definition.name}".`,
    );
  }
  const state = copyState(checkpoint.state as unknown as RunnerState, warn);
  assertContinuable(runId, checkpoint.status, verb, checkpoint.state);
  // A run its budget stopped goes on from where it stopped (its end is not one).
  if (checkpoint.status === "budget_exceeded") delete state.end;
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
  // What the run spent after its checkpoint (a drive killed mid-step) is in the log's model_call lines.
  restoreSpend(state, log);
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
  // A grant given after the last checkpoint (a crash mid-step) is in the log: the run keeps it.
  const grants = state.permissionGrants = [...(state.permissionGrants ?? [])];
  restoreGrants(grants, log);
  if (grants.length === 0) delete state.permissionGrants;
  if (history.length !== state.historyLength) {
    throw new StepflowError(
      "RUN_LOG_INCOMPLETE",
      `Run ${runId}: the checkpoint records ${state.historyLength} history entries but the log holds ${history.length}. The log was truncated; refusing to resume from a state that would lose history.`,
    );
  }
  // The marker stays in the state until the step is entered again: a checkpoint saved before that
  // (an answer recorded for a worker to continue) still says where the step left off.
  if (redrive) delete state.inStep;
  const inStep = redrive ? undefined : resumedStepOf(state, log);
  const logged = resolveLoggedHandoff(runId, state, checkpoint.state, log);
  // The run as it was, large handoff values put back, for a drive whose backend cannot start.
  const before = copyState(checkpoint.state as unknown as RunnerState, () => {});
  resolveLoggedHandoff(runId, before, checkpoint.state, log);
  // An answer's line follows the checkpoint that commits it: a drive stopped between the two left
  // the answer committed and its line unwritten, which the next drive writes.
  const answerId = state.answer?.requestId;
  const answerUnlogged = answerId !== undefined &&
    !log.some((line) => line.type === "input_answer" && line.requestId === answerId);
  return {
    state,
    history,
    logEntries: log.length,
    logged,
    before: { state: before, status: checkpoint.status },
    ...(inStep ? { inStep } : {}),
    ...(answerUnlogged ? { answerUnlogged } : {}),
  };
}

/**
 * Puts back the large handoff values a checkpoint refers to (`handoffInLog`,
 * `latestHandoffInLog`), taken from the `step_end` lines of the log that hold them, and returns
 * where each one is so the journal keeps referring to it.
 *
 * @throws {StepflowError} `RUN_LOG_INCOMPLETE` when a referred line is missing or lacks the value
 */
function resolveLoggedHandoff(
  runId: string,
  state: RunnerState,
  saved: Record<string, unknown>,
  log: readonly { type: string; [key: string]: unknown }[],
): LoggedHandoff {
  const logged: LoggedHandoff = { byStep: new Map(), latest: new Map() };
  const valueAt = (line: unknown, key: string): unknown => {
    const entry = typeof line === "number" && Number.isInteger(line) ? log[line] : undefined;
    const handoff = entry?.type === "step_end" ? entry.handoff : undefined;
    if (typeof handoff !== "object" || handoff === null || !Object.hasOwn(handoff, key)) {
      throw new StepflowError(
        "RUN_LOG_INCOMPLETE",
        `Run ${runId}: the checkpoint takes the handoff value "${key}" from log entry ${
          String(line)
        }, which the log does not hold. The log was truncated or edited; refusing to resume without that value.`,
        { details: { runId, key, line } },
      );
    }
    return (handoff as Record<string, unknown>)[key];
  };
  const byStep = saved.handoffInLog;
  if (typeof byStep === "object" && byStep !== null) {
    for (const [stepId, keys] of Object.entries(byStep as Record<string, Record<string, number>>)) {
      if (!Object.hasOwn(state.handoff, stepId)) continue;
      // A copy: the store's own object (the memory store keeps it) must not change.
      const values = { ...state.handoff[stepId] };
      const known = new Map<string, LoggedValue>();
      for (const [key, line] of Object.entries(keys)) {
        const value = valueAt(line, key);
        setOwn(values, key, value);
        known.set(key, { line, value });
      }
      setOwn(state.handoff, stepId, values);
      logged.byStep.set(stepId, known);
    }
  }
  const latest = saved.latestHandoffInLog;
  if (typeof latest === "object" && latest !== null) {
    for (const [key, line] of Object.entries(latest as Record<string, number>)) {
      const value = valueAt(line, key);
      setOwn(state.latestHandoff, key, value);
      logged.latest.set(key, { line, value });
    }
  }
  const restored = state as unknown as Record<string, unknown>;
  delete restored.handoffInLog;
  delete restored.latestHandoffInLog;
  return logged;
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
