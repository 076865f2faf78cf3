/**
 * Opening a run for its drive ({@linkcode openRun}): its backend, its lock (the one lock every
 * drive takes, before any checkpoint is read), its state — new, or the one a resume or redrive
 * continues from — and, for a run that waits, the answer it was given, checked
 * ({@linkcode takeAnswer}: against the step's schema, the request it waits on and its
 * `waitTimeout`) before anything is recorded. Used by every drive of a run (`FlowRun`) and by
 * `StepFlowRunner.recordAnswer`.
 *
 * @module
 */
import { parsePermissionMode } from "../definition/permission_rule.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { exceedsDepth, MAX_OUTPUT_DEPTH } from "../engine/ask_structured.ts";
import { StepflowError } from "../errors.ts";
import { agentBackend } from "../llm/agent_backend.ts";
import { validationProblems } from "../llm/json_schema.ts";
import type { LlmBackend } from "../llm/types.ts";
import { assertRunGroup } from "../store/run_group.ts";
import type { RunLock, RunStore } from "../store/types.ts";
import { createRunJournal, type RestoredRun, restoreRun } from "./checkpoint.ts";
import {
  type AnswerOptions,
  MAX_ANSWERED_BY,
  type PendingInput,
  type RecordedAnswer,
  waitExpired,
} from "./input_request.ts";
import { OutputSchemaCache, permissionAnswerSchema } from "./output_validator.ts";
import { childStore as childStoreOf } from "./child_run.ts";
import { flowStep } from "./router.ts";
import {
  type ChildRunLink,
  newRunnerState,
  type RunnerState,
  setWaits,
  waitsOf,
} from "./run_state.ts";
import { type UnfinishedCall, unfinishedCallError } from "./tool_call_resume.ts";
import { refuseWhileCallsRun } from "./live_call_processes.ts";
import { startRunSpend } from "./run_spend.ts";
import type { SpendLedger } from "./spend_ledger.ts";
import type { RunOptions, StepFlowRunnerOptions } from "./types.ts";

/** A run opened for its drive: locked, restored (or new), its answer checked. */
export interface OpenedRun {
  /** The run's lock (none without a store); the drive releases it. */
  lock: RunLock | undefined;
  /** The state and history the drive starts from. */
  restored: RestoredRun;
  /** The answer this drive records (checked), when it was given one. */
  answer: RecordedAnswer | undefined;
  /** The backend: the caller's, else the agent's own. */
  backend: LlmBackend;
  /** The run's spend ledger: every call counted, every budget checked (run_spend.ts). */
  spend: SpendLedger;
}

/**
 * Opens run `runId` of `definition` for a drive as `runOptions` say: the backend (the caller's,
 * else the agent's own — one that cannot be created throws before anything is recorded), the
 * run's lock — taken before a checkpoint is read, so a second process resuming the same run fails
 * here instead of continuing from a checkpoint the first is about to move past — then the state:
 * a new one, or the one a resume or redrive continues from, with its answer checked. On a
 * failure the lock is released again.
 */
export async function openRun(
  definition: AgentDefinition,
  options: StepFlowRunnerOptions,
  runOptions: RunOptions,
  runId: string,
  warn: (message: string) => void,
): Promise<OpenedRun> {
  const store = options.store;
  const backend = options.backend ?? await agentBackend(definition.agent.behavior, {
    model: options.model,
    onWarning: warn,
  });
  if (runOptions.group !== undefined) assertRunGroup(runOptions.group, "RunOptions.group");
  if (runOptions.permissionMode !== undefined) assertRunPermissionMode(runOptions.permissionMode);
  if (runOptions.answer && !runOptions.resume) {
    throw new StepflowError(
      "USAGE",
      "An answer continues a waiting run: give the run's id as `resume` (or call answer(runId, value)).",
    );
  }
  const lock = await lockRun(store, runId, runOptions.answer !== undefined);
  try {
    // A cancel request nobody was driving the run to see must not cancel this (new) drive.
    await store?.takeCancelRequest?.(runId);
    const restored: RestoredRun = runOptions.resume ?? runOptions.redrive
      ? await restoreRun(store, definition, runId, !runOptions.resume, warn)
      : {
        state: newRunnerState(definition, runOptions, runId),
        history: [],
        // A child run killed before its first checkpoint left log lines; its new start follows them.
        logEntries: runOptions.parent && store ? (await store.readLog(runId)).length : 0,
      };
    // A linked child recorded where this store cannot reach is refused before anything is written.
    const link = restored.state.child;
    const childAgent = link ? flowStep(definition, link.stepId)?.child : undefined;
    if (link && childAgent) childStoreOf(store, link, childAgent, runId);
    const answer = await takeAnswer(definition, restored.state, runOptions.answer, store, warn);
    await refuseWhileCallsRun(runId, definition.name, restored.inStep);
    const unfinished = restored.inStep?.unfinished.filter((c) => !c.idempotent) ?? [];
    if (unfinished.length > 0 && !await rerunAllowed(runOptions.rerunUnfinishedCall, unfinished)) {
      throw unfinishedCallError(runId, definition.name, restored.inStep!.marker.stepId, unfinished);
    }
    const spend = startRunSpend(definition, options, runOptions, restored.state, backend);
    return { lock, restored, answer, backend, spend };
  } catch (error) {
    await lock?.release();
    if (runOptions.answer && error instanceof StepflowError && error.code === "RUN_NOT_RESUMABLE") {
      throw notWaiting(runId, "it already ended; nothing waits for an answer");
    }
    throw error;
  }
}

/**
 * What a drive of a restored run does about its wait: with an answer, the answer to record
 * (checked against the step's schema; nothing is recorded when it is refused); without one, a
 * waiting run continues only when its `waitTimeout` passed (the step then takes the timeout's
 * intent) or when it waits on a child run (the child is driven again).
 *
 * @param store the run's store (the child run a waiting agent step waits on is recorded in the
 *   store it gives for the child's agent; its checkpoint says whether it still waits)
 * @throws {StepflowError} `INPUT_WAITING` (a wait without an answer), `INPUT_NOT_WAITING`,
 *   `INPUT_WAIT_EXPIRED`, `INPUT_ANSWER_INVALID`
 */
export async function takeAnswer(
  definition: AgentDefinition,
  state: RunnerState,
  given: RunOptions["answer"],
  store: RunStore | undefined,
  warn: (message: string) => void = () => {},
): Promise<RecordedAnswer | undefined> {
  const runId = state.runId;
  const waits = waitsOf(state);
  let pending = state.waiting;
  if (given !== undefined && waits.length > 1) {
    if (given.requestId === undefined) {
      throw ambiguousRequest(runId, waits);
    }
    pending = waits.find((w) => w.requestId === given.requestId) ?? pending;
  }
  const step = pending ? flowStep(definition, pending.stepId) : undefined;
  const expired = pending !== undefined &&
    (step?.waitTimeout !== undefined || pending.child !== undefined) &&
    waitExpired(pending, Date.now());
  if (given === undefined) {
    // A child's wait: resuming drives the child again (answered directly, it may have moved on).
    if (!pending || expired || pending.child) return undefined;
    const what = pending.permission
      ? `for permission to run ${pending.permission.tool} in step "${pending.stepId}"`
      : `for an answer at input step "${pending.stepId}"`;
    const value = pending.permission ? '{"decision":"allow"}' : "<json>";
    throw new StepflowError(
      "INPUT_WAITING",
      `Run ${runId} waits ${what}; resuming it needs the answer: answer the run instead.`,
      {
        details: {
          runId,
          stepId: pending.stepId,
          requestId: pending.requestId,
          next: { action: "answer", runId, args: ["--value", value] },
        },
      },
    );
  }
  if (!pending || (given.requestId !== undefined && given.requestId !== pending.requestId)) {
    throw notWaiting(
      runId,
      pending
        ? `it waits on request ${pending.requestId}, not ${given.requestId} (that wait was answered already)`
        : state.end
        ? `it ended (${state.end.reason})`
        : "it is not waiting for an answer (it was answered already, or it never reached an input step)",
    );
  }
  const fanOutItem = pending.child?.item;
  const link = pending.child && state.child?.runId === pending.child.runId
    ? state.child
    : pending.child && fanOutItem !== undefined
    ? fanOutLink(pending)
    : undefined;
  const childStore = pending.child && store && link && step?.child
    ? childStoreOf(store, link, step.child, runId) ?? store
    : store;
  if (pending.child && childStore && fanOutItem === undefined) {
    // The child may have been answered directly since: then this answer is not its to take.
    const child = await childStore.loadCheckpoint(pending.child.runId);
    const childWaits = waitsOf((child?.state ?? {}) as Pick<RunnerState, "waiting" | "waits">);
    if (
      child?.status !== "waiting" || !childWaits.some((w) => w.requestId === pending.requestId)
    ) {
      throw notWaiting(
        runId,
        `its child run ${pending.child.runId} no longer waits on this request (it was answered directly); resume this run to go on`,
        "resume",
      );
    }
  }
  if (expired) {
    throw new StepflowError(
      "INPUT_WAIT_EXPIRED",
      `Run ${runId}: the wait at input step "${pending.stepId}" passed at ${pending.expiresAt} (waitTimeout); the answer was not recorded. Resume the run to take the timeout's intent "${pending.timeoutIntent}".`,
      {
        details: {
          runId,
          stepId: pending.stepId,
          expiresAt: pending.expiresAt,
          next: { action: "resume", runId },
        },
      },
    );
  }
  const schema = pending.permission
    ? permissionAnswerSchema()
    : await new OutputSchemaCache(pending.child?.agentDir ?? definition.dir).resolve(
      pending.schemaRef,
      pending.child?.stepId ?? pending.stepId,
    );
  // An answer is untrusted input like a model's: bounded the same way before anything reads it.
  const problems = exceedsDepth(given.value, MAX_OUTPUT_DEPTH)
    ? [`(root): must not be nested deeper than ${MAX_OUTPUT_DEPTH} levels`]
    : validationProblems(schema.validate, given.value);
  if (problems.length > 0) {
    throw new StepflowError(
      "INPUT_ANSWER_INVALID",
      `The answer to input step "${pending.stepId}" of run ${runId} does not match ${schema.pointer} in ${schema.file}: ${
        problems.join("; ")
      }. Nothing was recorded; answer again with a value the schema accepts.`,
      { details: { runId, stepId: pending.stepId, problems } },
    );
  }
  const answeredBy = (given.answeredBy ?? "api").slice(0, MAX_ANSWERED_BY);
  if (fanOutItem !== undefined && pending.child && step?.child) {
    // A fan-out's child is answered in the child itself, under its lock (of two answers to it, one
    // is recorded): the step continues it; this run keeps no answer of its own.
    let recorded: RecordedAnswer;
    try {
      recorded = await recordAnswer(
        step.child,
        childStore,
        pending.child.runId,
        given.value,
        { requestId: pending.requestId, answeredBy },
        warn,
      );
    } catch (error) {
      if (!(error instanceof StepflowError) || error.code !== "INPUT_NOT_WAITING") throw error;
      // Another answer to the child is being recorded, or was: this one is not its to take.
      throw notWaiting(
        runId,
        `its child run ${pending.child.runId} (item ${
          fanOutItem + 1
        }) no longer waits on request ${pending.requestId}: another answer to it was recorded first`,
      );
    }
    return {
      requestId: pending.requestId,
      stepId: pending.stepId,
      value: given.value,
      answeredBy,
      answeredAt: recorded.answeredAt,
      child: { runId: pending.child.runId, item: fanOutItem },
    };
  }
  return {
    requestId: pending.requestId,
    stepId: pending.stepId,
    value: given.value,
    answeredBy,
    answeredAt: new Date().toISOString(),
    ...(pending.permission
      ? { permission: { tool: pending.permission.tool, callId: pending.permission.callId } }
      : {}),
  };
}

/** The link of a fan-out child a request comes from (where it is recorded). */
export function fanOutLink(pending: PendingInput): ChildRunLink {
  return {
    stepId: pending.stepId,
    runId: pending.child!.runId,
    agent: "",
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 },
    ...(pending.child!.store ? { store: pending.child!.store } : {}),
  };
}

/**
 * Records the answer to a run that waits, without continuing it (`StepFlowRunner.recordAnswer`):
 * under the run's lock, the answer is checked ({@linkcode takeAnswer}) and written into the one
 * checkpoint that moves the run from `waiting` to `running`, then as an `input_answer` line; the
 * lock is released and the run is left for a drive to continue. An answer to a fan-out child's
 * request is recorded in that child (and the run's list of waits loses it).
 *
 * @throws {StepflowError} what {@linkcode takeAnswer} throws, `INPUT_NOT_WAITING` for a run that
 *   ended or that another process holds
 */
export async function recordAnswer(
  definition: AgentDefinition,
  store: RunStore | undefined,
  runId: string,
  value: unknown,
  options: AnswerOptions,
  warn: (message: string) => void,
): Promise<RecordedAnswer> {
  if (!store) {
    throw new StepflowError(
      "NO_RUN_STORE",
      `Cannot answer run ${runId}: the runner has no store. Pass options.store (the store that recorded the run).`,
    );
  }
  const lock = await lockRun(store, runId, true);
  try {
    let restored: RestoredRun;
    try {
      restored = await restoreRun(store, definition, runId, false, warn);
    } catch (error) {
      if (error instanceof StepflowError && error.code === "RUN_NOT_RESUMABLE") {
        throw notWaiting(runId, "it already ended; nothing waits for an answer");
      }
      throw error;
    }
    const { state } = restored;
    const answer = (await takeAnswer(definition, state, { ...options, value }, store, warn))!;
    const journal = createRunJournal(store, restored.logEntries, restored.logged);
    // The answer and the move out of `waiting` are one checkpoint: both or neither. Its log line
    // follows the commit, so a process killed in between never leaves an answer line for a run
    // that still waits (the next drive writes a missing line: `answerUnlogged`).
    if (answer.child) {
      setWaits(state, waitsOf(state).filter((w) => w.requestId !== answer.requestId));
    } else {
      setWaits(state, []);
      state.answer = answer;
    }
    await journal.checkpoint(state, "running");
    await journal.log(state, { type: "input_answer", ...answer });
    return answer;
  } finally {
    await lock?.release();
  }
}

/**
 * Takes the run's lock. For an answer, a run another process holds or drove on since it was read
 * is not waiting (it runs, or another answer was recorded and continues it): that is
 * `INPUT_NOT_WAITING`, not a lock error.
 */
export async function lockRun(
  store: RunStore | undefined,
  runId: string,
  answering: boolean,
): Promise<RunLock | undefined> {
  try {
    return await store?.lock(runId);
  } catch (error) {
    if (answering && error instanceof StepflowError && error.code === "RUN_LOCKED") {
      throw notWaiting(
        runId,
        "another process drives it right now (it runs, or another answer was recorded first and continues it)",
        "show",
        true,
      );
    }
    // Between reading the waiting run and locking it, another answer was recorded and drove it on:
    // for this answer that is the same "not waiting any more", not a generic conflict.
    if (answering && error instanceof StepflowError && error.code === "RUN_CHANGED") {
      throw notWaiting(runId, "another answer was recorded first and the run went on from it");
    }
    throw error;
  }
}

/** `INPUT_REQUEST_AMBIGUOUS`: an answer to a run that waits on several requests names none. */
function ambiguousRequest(runId: string, waits: readonly PendingInput[]): StepflowError {
  const requests = waits.map((w) => w.requestId);
  return new StepflowError(
    "INPUT_REQUEST_AMBIGUOUS",
    `Run ${runId} waits on ${waits.length} requests (${
      requests.join(", ")
    }); say which one this answer is for (its requestId). The run's history lists them.`,
    { details: { runId, requests, next: { action: "show", runId } } },
  );
}

/**
 * `INPUT_NOT_WAITING`: the run cannot take an answer, and why; its next step (`next`: show the
 * run, or resume it) as data. `locked`: another process drives it — its details say so, for an
 * answer that can go to a fan-out child instead.
 */
export function notWaiting(
  runId: string,
  why: string,
  next: "show" | "resume" = "show",
  locked = false,
): StepflowError {
  return new StepflowError(
    "INPUT_NOT_WAITING",
    `Run ${runId} cannot take this answer: ${why}.${
      next === "show" ? " Its history shows where it is." : ""
    }`,
    { details: { runId, next: { action: next, runId }, ...(locked ? { locked: true } : {}) } },
  );
}

/** `RunOptions.permissionMode`: one of the modes the tool loop applies. */
function assertRunPermissionMode(mode: unknown): void {
  const parsed = parsePermissionMode(mode);
  if (!parsed.ok) {
    throw new StepflowError(
      "PERMISSION_MODE_INVALID",
      `RunOptions.permissionMode: ${parsed.problem}.`,
      { details: { permissionMode: mode } },
    );
  }
}

/**
 * Whether the unfinished calls a resume found may run again: `RunOptions.rerunUnfinishedCall`, or
 * what its check answers. Asked after the run's lock was taken, so a permission stored with the
 * run is used by the drive that holds it only, never by a duplicate that lost the lock.
 */
async function rerunAllowed(
  rerun: RunOptions["rerunUnfinishedCall"],
  unfinished: readonly UnfinishedCall[],
): Promise<boolean> {
  return typeof rerun === "function" ? await rerun(unfinished) === true : rerun === true;
}
