/**
 * Answers and wake-ups of a fan-out step's waiting children, beside the runner (docs/runner.md,
 * "Fan-out steps: waiting children"). Each waiting child is answered on its own — the answer is
 * recorded in the child under the child's lock (`run_open.ts`), so of two answers to one child
 * exactly one is recorded and no child waits for another's answer. What happens next:
 *
 * - the parent waits and nobody drives it: the answering process drives the parent, whose fan-out
 *   continues the answered child (the runner's `answer`);
 * - another process drives the parent (it continues another answered child): the answer is still
 *   recorded in the child, and the answering process drives that child itself
 *   ({@linkcode answerWhileDriven}); the parent's drive notices it (it polls its waiting children)
 *   and takes its result when it ends;
 * - a child answered or resumed on its own, whose parent waits, wakes the parent when it ends
 *   ({@linkcode wakeParent});
 * - a parent's drive that ends waiting looks at its waiting children once more after it released
 *   its lock ({@linkcode waitsMoved}): an answer recorded while it was deciding to wait would
 *   otherwise be noticed by nobody.
 *
 * @module
 */
import { loadAgentDefinition } from "../definition/load.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { errorMessage, StepflowError } from "../errors.ts";
import { sleep } from "../backoff.ts";
import type { RunStore } from "../store/types.ts";
import { childStore, endedResult, waitingResult } from "./child_run.ts";
import type { AnswerOptions, PendingInput } from "./input_request.ts";
import { flowStep } from "./router.ts";
import { fanOutLink, recordAnswer } from "./run_open.ts";
import { type RunnerState, waitsOf } from "./run_state.ts";
import { pendingRequest } from "./run_wait.ts";
import { fanOutsOf } from "../store/fan_out_lines.ts";
import type { ParentRunLink, RunOptions, StepFlowResult } from "./types.ts";

/** Drives a run of `definition` recorded in `store` (a runner's drive, events and cap included). */
export type DriveRun = (
  definition: AgentDefinition,
  store: RunStore | undefined,
  options: RunOptions,
) => Promise<StepFlowResult>;

/** The fan-out child a request of a run comes from: its agent, store and run. */
interface WaitingChild {
  definition: AgentDefinition;
  store: RunStore | undefined;
  runId: string;
  pending: PendingInput;
}

/** The fan-out child `pending` (a request of run `runId` of `definition`) comes from. */
function waitingChild(
  definition: AgentDefinition,
  store: RunStore | undefined,
  runId: string,
  pending: PendingInput,
): WaitingChild | undefined {
  if (pending.child?.item === undefined) return undefined;
  const child = flowStep(definition, pending.stepId)?.child;
  if (!child) return undefined;
  return {
    definition: child,
    store: childStore(store, fanOutLink(pending), child, runId),
    runId: pending.child.runId,
    pending,
  };
}

/**
 * Whether any fan-out child a waiting run listed no longer waits on the request it listed (it was
 * answered, or ended) — read after the run's lock was released.
 */
export async function waitsMoved(
  definition: AgentDefinition,
  store: RunStore | undefined,
  result: StepFlowResult,
): Promise<boolean> {
  const waits = result.waits ?? (result.waiting ? [result.waiting] : []);
  for (const pending of waits) {
    const child = waitingChild(definition, store, result.runId, pending);
    if (!child?.store) continue;
    const checkpoint = await child.store.loadCheckpoint(child.runId).catch(() => undefined);
    const still = checkpoint?.status === "waiting" &&
      waitsOf(checkpoint.state as Pick<RunnerState, "waiting" | "waits">)
        .some((w) => w.requestId === pending.requestId);
    if (!still) return true;
  }
  return false;
}

/**
 * Answers a fan-out child's request of run `runId` while another process drives the run: the
 * answer is recorded in the child (checked against its schema, under its lock), then the child is
 * driven here — or, when the parent's process took it up first, followed until it ends or waits
 * again. Returns the child's result; undefined when the request is not a fan-out child's (the
 * caller's error stands).
 */
export async function answerWhileDriven(
  definition: AgentDefinition,
  store: RunStore | undefined,
  runId: string,
  value: unknown,
  options: AnswerOptions & { signal?: AbortSignal },
  drive: DriveRun,
  warn: (message: string) => void,
): Promise<StepFlowResult | undefined> {
  const checkpoint = await store?.loadCheckpoint(runId);
  if (!checkpoint) return undefined;
  const waits = waitsOf(checkpoint.state as Pick<RunnerState, "waiting" | "waits">);
  const pending = options.requestId !== undefined
    ? waits.find((w) => w.requestId === options.requestId) ??
      await childRequest(definition, store!, runId, options.requestId)
    : waits.length === 1
    ? waits[0]
    : undefined;
  const child = pending ? waitingChild(definition, store, runId, pending) : undefined;
  if (!child) return undefined;
  // The parent's drive may hold the child a moment to look at it (it takes its waiting children
  // up again, then lets a still-waiting one go): the answer waits for that, not refused.
  for (let tries = 0;; tries++) {
    try {
      await recordAnswer(
        child.definition,
        child.store,
        child.runId,
        value,
        { requestId: child.pending.requestId, answeredBy: options.answeredBy },
        warn,
      );
      break;
    } catch (error) {
      const held = error instanceof StepflowError && error.details?.locked === true;
      if (!held || tries >= HELD_TRIES) throw error;
      await sleep(FOLLOW_MS, options.signal);
    }
  }
  try {
    return await drive(child.definition, child.store, {
      resume: child.runId,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (error) {
    // The parent's drive took the child up first (it holds it, or moved it on meanwhile).
    if (!takenElsewhere(error)) throw error;
    return await followChild(child.store!, child.runId, options.signal);
  }
}

/**
 * The request `requestId` of a fan-out child of run `runId` that waits on it, found through the
 * run's log (its children) and the children's own checkpoints: a drive of the run lists its waiting
 * children in its checkpoint only between its looks at them (while it takes one up again, the list
 * lacks it), so the run's checkpoint alone cannot say whether a child waits on a request.
 */
async function childRequest(
  definition: AgentDefinition,
  store: RunStore,
  runId: string,
  requestId: string,
): Promise<PendingInput | undefined> {
  const fanOut = fanOutsOf(await store.readLog(runId).catch(() => [])).at(-1);
  const step = fanOut ? flowStep(definition, fanOut.stepId) : undefined;
  if (!fanOut || !step?.child) return undefined;
  for (const item of fanOut.items.values()) {
    const last = item.children.at(-1);
    if (!last || last.end) continue;
    const link = { stepId: step.id, runId: last.childRunId, store: last.store };
    const own = childStore(store, { ...link, agent: "", usage: NO_USAGE }, step.child, runId);
    const checkpoint = await own?.loadCheckpoint(last.childRunId).catch(() => undefined);
    if (checkpoint?.status !== "waiting") continue;
    const request = waitsOf(checkpoint.state as Pick<RunnerState, "waiting" | "waits">)
      .find((w) => w.requestId === requestId);
    if (!request) continue;
    return pendingRequest(
      {
        kind: "child",
        runId: last.childRunId,
        request,
        item: item.index,
        ...(last.store ? { store: last.store } : {}),
      },
      step,
      new Date(),
    );
  }
  return undefined;
}

/** A child's usage before it is read (the link's shape asks for one). */
const NO_USAGE = { inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 };

/** Follows a child another process drives until it ends or waits; its result then. */
async function followChild(
  store: RunStore,
  runId: string,
  signal: AbortSignal | undefined,
): Promise<StepFlowResult> {
  for (;;) {
    const checkpoint = await store.loadCheckpoint(runId);
    if (checkpoint?.status === "waiting") return waitingResult(checkpoint);
    const ended = checkpoint ? endedResult(checkpoint) : undefined;
    if (ended) return ended;
    await sleep(FOLLOW_MS, signal);
  }
}

/** How often an answer retries a child the parent's drive holds a moment (50 × 200 ms). */
const HELD_TRIES = 50;

/** How often {@linkcode answerWhileDriven} looks at a child another process drives. */
const FOLLOW_MS = 200;

/**
 * Wakes the waiting parent of a fan-out child that ended (answered or resumed on its own): the
 * parent is driven here when it waits and nobody drives it (its fan-out takes the child's result),
 * and left alone otherwise — a process that drives it notices the child itself. `definition` and
 * `store` are the child's; the parent's agent is loaded from its folder when it is another.
 */
export async function wakeParent(
  parent: ParentRunLink | undefined,
  definition: AgentDefinition,
  store: RunStore | undefined,
  drive: DriveRun,
  signal: AbortSignal | undefined,
  warn: (message: string) => void,
): Promise<void> {
  if (parent?.item === undefined || parent.agentDir === undefined || !store) return;
  const parentDefinition = parent.agentDir === definition.dir
    ? definition
    : await loadAgentDefinition(parent.agentDir, {
      ...(parent.agentRoot ? { agentRoot: parent.agentRoot } : {}),
    }).catch((error) => {
      warn(
        `child run of ${parent.runId} ended, but its parent's agent in ${parent.agentDir} does not load (${
          errorMessage(error)
        }); resume the parent run ${parent.runId} to continue it`,
      );
      return undefined;
    });
  if (!parentDefinition) return;
  const parentStore = store.forAgent?.(parentDefinition) ?? store;
  const checkpoint = await parentStore.loadCheckpoint(parent.runId).catch(() => undefined);
  if (checkpoint?.status !== "waiting") return;
  try {
    await drive(parentDefinition, parentStore, {
      resume: parent.runId,
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    // Another process took the parent up (or an answer to it) first: it goes on there.
    if (takenElsewhere(error)) return;
    throw error;
  }
}

/**
 * Another process drives the run (`RUN_LOCKED`), or moved it on between this process's look at it
 * and its lock (`RUN_CHANGED`): either way it goes on there.
 */
export function takenElsewhere(error: unknown): boolean {
  return error instanceof StepflowError &&
    (error.code === "RUN_LOCKED" || error.code === "RUN_CHANGED");
}
