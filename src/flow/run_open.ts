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
import { type RestoredRun, restoreRun } from "./checkpoint.ts";
import {
  MAX_ANSWERED_BY,
  type PendingInput,
  type RecordedAnswer,
  waitExpired,
} from "./input_request.ts";
import { OutputSchemaCache, permissionAnswerSchema } from "./output_validator.ts";
import { childStore as childStoreOf } from "./child_run.ts";
import { flowStep } from "./router.ts";
import { newRunnerState, type RunnerState } from "./run_state.ts";
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
    const answer = await takeAnswer(definition, restored.state, runOptions.answer, store);
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
): Promise<RecordedAnswer | undefined> {
  const pending = state.waiting;
  const runId = state.runId;
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
    const value = pending.permission ? `'{"decision":"allow"}' (or "deny")` : "'<json>'";
    throw new StepflowError(
      "INPUT_WAITING",
      `Run ${runId} waits ${what}; resuming it needs the answer. Answer it with: run-agent --agent ${definition.name} --answer ${runId} --value ${value}.`,
      { details: { runId, stepId: pending.stepId, requestId: pending.requestId } },
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
  const link = pending.child && state.child?.runId === pending.child.runId
    ? state.child
    : undefined;
  if (pending.child && store) {
    // The child may have been answered directly since: then this answer is not its to take.
    const childStore = link && step?.child
      ? childStoreOf(store, link, step.child, runId) ?? store
      : store;
    const child = await childStore.loadCheckpoint(pending.child.runId);
    const waiting = (child?.state as { waiting?: PendingInput } | undefined)?.waiting;
    if (child?.status !== "waiting" || waiting?.requestId !== pending.requestId) {
      throw notWaiting(
        runId,
        `its child run ${pending.child.runId} no longer waits on this request (it was answered directly); continue this run with --resume ${runId}`,
      );
    }
  }
  if (expired) {
    throw new StepflowError(
      "INPUT_WAIT_EXPIRED",
      `Run ${runId}: the wait at input step "${pending.stepId}" passed at ${pending.expiresAt} (waitTimeout); the answer was not recorded. Resume the run (--resume ${runId}) to take the timeout's intent "${pending.timeoutIntent}".`,
      { details: { runId, stepId: pending.stepId, expiresAt: pending.expiresAt } },
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
  return {
    requestId: pending.requestId,
    stepId: pending.stepId,
    value: given.value,
    answeredBy: (given.answeredBy ?? "api").slice(0, MAX_ANSWERED_BY),
    answeredAt: new Date().toISOString(),
    ...(pending.permission
      ? { permission: { tool: pending.permission.tool, callId: pending.permission.callId } }
      : {}),
  };
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

/** `INPUT_NOT_WAITING`: the run cannot take an answer, and why. */
export function notWaiting(runId: string, why: string): StepflowError {
  return new StepflowError(
    "INPUT_NOT_WAITING",
    `Run ${runId} cannot take this answer: ${why}. See its state with --show ${runId}.`,
    { details: { runId } },
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
