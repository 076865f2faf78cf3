/**
 * What a run's page offers to answer: the request a waiting run waits on (an input step's question
 * and the form of its schema, or a tool call's approval card) — or, for a run whose fan-out
 * children wait, each child's request, answered through this run (the runner records the answer in
 * that child, under its lock; `actions.ts` names the request with `--request-id`).
 *
 * A fan-out's requests stay listed in the parent's checkpoint until its step settles them, also
 * while another process drives the parent (it continues the children answered so far). A request
 * is offered only while its child still waits on it: a child answered elsewhere (on its own page,
 * from a terminal) is left out.
 *
 * @module
 */
import { errorMessage } from "../errors.ts";
import type { CommandRenderer } from "../invocation.ts";
import { answerFormOf, type PendingInput } from "../flow/input_request.ts";
import { waitsOf } from "../flow/run_state.ts";
import { isNotEnded } from "../run_statuses.ts";
import type { RunLogEntry } from "../store/types.ts";
import { isPermissionPending, waitingCallArgs } from "./approval_card.ts";
import type { RunView } from "./pages.ts";
import type { DashboardData } from "./source.ts";
import type { WaitingView } from "./waiting_form.ts";

/** What the waiting blocks of a page are built from, besides the run's checkpoint. */
export interface WaitingContext {
  /** The run log (a tool call's arguments are read from its `tool_turn` line). */
  log?: readonly RunLogEntry[];
  /** How the commands a card prints are written, as they work where the user stands. */
  commandFor?: CommandRenderer;
  /** Where the fan-out children are: their checkpoints say whether they still wait. */
  data?: DashboardData;
}

/**
 * Sets `view.waits`: for a waiting run, its request — or each fan-out child's that still waits
 * (also while the run is driven: answered children go on meanwhile) — with its answer form (read
 * now) or, for a tool call waiting for permission, what its approval card shows.
 */
export async function addWaitingForm(view: RunView, context: WaitingContext = {}): Promise<void> {
  const checkpoint = view.checkpoint;
  if (!checkpoint || !view.definition || !isNotEnded(checkpoint.status)) return;
  const requests = waitsOf(checkpoint.state as { waiting?: PendingInput; waits?: PendingInput[] })
    .filter((r) => typeof r?.stepId === "string" && typeof r.requestId === "string");
  // A run that runs lists only its fan-out children's requests (the rest ended with its wait).
  const offered = checkpoint.status === "waiting"
    ? requests
    : requests.filter((r) => r.child?.item !== undefined);
  const waits: WaitingView[] = [];
  for (const request of offered) {
    const item = request.child?.item;
    let log = context.log;
    if (item !== undefined && request.child) {
      const child = await childWaiting(context.data, request, isPermissionPending(request));
      if (!child) continue;
      log = child.log;
    }
    const waiting = await waitingView(view, request, log, context.commandFor);
    if (item !== undefined && request.child) {
      waiting.child = {
        index: item,
        item: itemLabel(context.log, request.stepId, item),
        runId: request.child.runId,
        stepId: request.child.stepId,
      };
    }
    waits.push(waiting);
  }
  if (waits.length > 0) view.waits = waits;
}

/** One request's view: its form (or why there is none), the command, a waiting call's arguments. */
async function waitingView(
  view: RunView,
  request: PendingInput,
  log: readonly RunLogEntry[] | undefined,
  commandFor: CommandRenderer | undefined,
): Promise<WaitingView> {
  let waiting: WaitingView;
  try {
    waiting = { request, form: await answerFormOf(view.definition!, request) };
  } catch (error) {
    waiting = { request, problem: errorMessage(error) };
  }
  if (commandFor) waiting.commandFor = commandFor;
  if (isPermissionPending(request) && log) {
    // A child's call is logged in the child, under the child's step.
    const asked = request.child ? { ...request, stepId: request.child.stepId } : request;
    const args = waitingCallArgs(log, asked);
    if (args) waiting.args = args;
  }
  return waiting;
}

/**
 * The log of the fan-out child `request` comes from when it still waits on that request; undefined
 * when it was answered (or ended) meanwhile, or no store shown here holds it.
 */
async function childWaiting(
  data: DashboardData | undefined,
  request: PendingInput,
  withLog: boolean,
): Promise<{ log: readonly RunLogEntry[] } | undefined> {
  const runId = request.child!.runId;
  const store = await data?.storeOf(runId).catch(() => undefined);
  if (!store) return undefined;
  const checkpoint = await store.loadCheckpoint(runId).catch(() => undefined);
  if (checkpoint?.status !== "waiting") return undefined;
  const still = waitsOf(checkpoint.state as { waiting?: PendingInput; waits?: PendingInput[] })
    .some((w) => w?.requestId === request.requestId);
  if (!still) return undefined;
  // The log only for a waiting call's arguments (its approval card).
  return { log: withLog ? await store.readLog(runId).catch(() => []) : [] };
}

/** The item as its `fanout_child` line names it (one short line), else its number. */
function itemLabel(log: readonly RunLogEntry[] | undefined, stepId: string, index: number): string {
  for (let i = (log?.length ?? 0) - 1; i >= 0; i--) {
    const entry = log![i];
    if (entry.type === "fanout_child" && entry.stepId === stepId && entry.index === index) {
      return String(entry.item ?? index + 1);
    }
  }
  return `#${index + 1}`;
}
