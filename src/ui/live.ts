/**
 * The dashboard's live views: a run read for its page, and the server-sent-event streams that
 * follow a running run (its new log entries, rendered and escaped here) or a tool plan (until its
 * file or approvals change). A stream ends when the browser goes away or the server closes.
 *
 * @module
 */
import { sleep } from "../backoff.ts";
import { errorMessage } from "../errors.ts";
import { answerFormOf, type PendingInput } from "../flow/input_request.ts";
import { isOpenStatus } from "../run_statuses.ts";
import { agentOfRun, type CommandRenderer, commandRenderer } from "../invocation.ts";
import { isPermissionPending, waitingCallArgs } from "./approval_card.ts";
import {
  readLogFrom,
  type RunCheckpoint,
  type RunLogEntry,
  type RunSummary,
} from "../store/types.ts";
import {
  finalOutput,
  isFollowed,
  runActions,
  runGraph,
  runMeta,
  type RunView,
  timelineRow,
} from "./pages.ts";
import { toolPlanKey } from "./plans.ts";
import { runChart } from "./run_chart.ts";
import { unfinishedCallNotice } from "./unfinished_call.ts";
import { securityHeaders } from "./responses.ts";
import type { DashboardData } from "./source.ts";
import { foldLog, newTimeline } from "./timeline.ts";

/** Reads of a checkpoint the live view makes waiting for one iteration's (see liveEvents). */
const COMMIT_READS = 40;

/** What {@linkcode loadRunView} adds to the view. */
export interface RunViewOptions {
  /** For a waiting run: its question and answer form, or its approval card. */
  waiting?: boolean;
}

/** Reads a run for its page: checkpoint, summary, whole log folded, the agent. */
export async function loadRunView(
  data: DashboardData,
  runId: string,
  options: RunViewOptions = {},
): Promise<RunView> {
  const store = (await data.storeOf(runId))!;
  const view: RunView = { runId, timeline: newTimeline() };
  try {
    view.checkpoint = await store.loadCheckpoint(runId);
  } catch (error) {
    view.problem = errorMessage(error);
  }
  view.summary = await data.summaryOf(runId);
  const log = await store.readLog(runId);
  foldLog(view.timeline, log);
  const agent = view.checkpoint?.agent ?? view.summary?.agent;
  if (agent) {
    const loaded = await data.agent(agent);
    view.definition = loaded.definition;
    view.definitionError = loaded.error;
  }
  if (isActive(view.checkpoint, view.summary) && !view.timeline.runEnd) {
    view.live = `/runs/${encodeURIComponent(runId)}/events?from=${view.timeline.entries}`;
  }
  if (agent) {
    const named = await data.namedStoreOf(runId);
    view.commandFor = runCommands(
      data.source.cwd,
      runId,
      view.definition?.dir,
      named?.runAgentStore,
    );
  }
  const notice = unfinishedCallNotice(view.checkpoint, view.summary, log);
  if (notice && view.commandFor) view.unfinished = { notice, commandFor: view.commandFor };
  if (options.waiting && view.commandFor) {
    await addWaitingForm(view, { log, commandFor: view.commandFor });
  }
  return view;
}

/**
 * How the page prints a command on the run `runId` (`stepflow answer RUN_ID …`), as it works from
 * `cwd`: `--agent` when the agent is not under `.agent/` there, `--store` for a PostgreSQL store
 * (its password shown as `***`: type it, or set `STEPFLOW_STORE`). A step on another run (the top
 * run of a child its parent's budget stopped) is found by its id alone.
 */
function runCommands(
  cwd: string,
  runId: string,
  agentDir: string | undefined,
  store: string | undefined,
): CommandRenderer {
  const render = commandRenderer({ cwd }, store);
  const agent = agentDir === undefined ? undefined : agentOfRun(agentDir, cwd);
  return (next) =>
    render(agent !== undefined && next.runId === runId && !next.agent ? { ...next, agent } : next);
}

/** What the waiting block of a page is built from, besides the run's checkpoint. */
export interface WaitingContext {
  /** The run log (a tool call's arguments are read from its `tool_turn` line). */
  log?: readonly RunLogEntry[];
  /** How the commands a card prints are written, as they work where the user stands. */
  commandFor?: CommandRenderer;
}

/**
 * For a waiting run: its question and the answer form of its step's schema (read now) — or, for a
 * tool call waiting for permission, what its approval card shows.
 */
export async function addWaitingForm(view: RunView, context: WaitingContext = {}): Promise<void> {
  if (view.checkpoint?.status !== "waiting" || !view.definition) return;
  const waiting = view.checkpoint.state.waiting as PendingInput | undefined;
  if (!waiting || typeof waiting.stepId !== "string") return;
  try {
    view.waiting = { request: waiting, form: await answerFormOf(view.definition, waiting) };
  } catch (error) {
    view.waiting = { request: waiting, problem: errorMessage(error) };
  }
  if (context.commandFor) view.waiting.commandFor = context.commandFor;
  if (isPermissionPending(waiting) && context.log) {
    const args = waitingCallArgs(context.log, waiting);
    if (args) view.waiting.args = args;
  }
}

function isActive(checkpoint?: RunCheckpoint, summary?: RunSummary): boolean {
  const status = checkpoint?.status ?? summary?.status;
  return isOpenStatus(status);
}

/**
 * Server-sent events of a running run: the rows, graph, header and output its new log entries
 * change, rendered here (escaped) and swapped in by the page script; `end` once the run ended,
 * after the action buttons of the ended run when actions are allowed (`csrf`).
 * The server reads the new entries every `intervalMs` through the store's `readLogFrom`.
 */
export async function liveEvents(
  data: DashboardData,
  runId: string,
  from: number,
  intervalMs: number,
  closing?: AbortSignal,
  csrf?: string,
): Promise<Response> {
  const store = (await data.storeOf(runId))!;
  const view = await loadRunView(data, runId);
  // Rebuild the fold exactly as the page had it, then send what came after.
  const timeline = newTimeline();
  const log = await store.readLog(runId);
  foldLog(timeline, log.slice(0, from));
  view.timeline = timeline;
  // A call not finished yet is running while a process drives the run — as one does once the log
  // grows under the stream, though nobody did when the page opened (a resume elsewhere).
  let followed = isFollowed(view);
  // The header counts what the checkpoint records (as --show does): after an iteration's
  // `step_end` line (the line before its checkpoint), the checkpoint is read again until it covers
  // that line — a read or two per iteration, not one per tick (and at most COMMIT_READS for one
  // line: a run killed between the two never writes that checkpoint).
  let uncommitted: number | undefined;
  let reads = 0;
  const commitsIn = (entries: typeof log, first: number) => {
    entries.forEach((entry, i) => {
      if (entry.type === "step_end") [uncommitted, reads] = [first + i, 0];
    });
  };
  const readCommitted = async (): Promise<boolean> => {
    if (uncommitted === undefined) return false;
    if (++reads >= COMMIT_READS) uncommitted = undefined;
    const checkpoint = await store.loadCheckpoint(runId).catch(() => undefined);
    if (!checkpoint) return false;
    const changed = checkpoint.updatedAt !== view.checkpoint?.updatedAt;
    view.checkpoint = checkpoint;
    if (uncommitted !== undefined && checkpoint.logEntries > uncommitted) uncommitted = undefined;
    return changed;
  };
  return eventStream(": following the run log", closing, async (events) => {
    const push = async (entries: typeof log, growing: boolean) => {
      if (entries.length === 0) {
        if (await readCommitted()) events.send("header", runMeta(view).text);
        return;
      }
      if (growing) followed = true;
      commitsIn(entries, timeline.entries);
      await readCommitted();
      const touched = foldLog(timeline, entries);
      events.send(
        "rows",
        [...touched].map((i) => ({
          index: i,
          html: timelineRow(runId, timeline.rows[i], { live: followed && !timeline.runEnd }).text,
        })),
      );
      events.send("graph", runGraph(view).text);
      events.send("chart", runChart(runId, timeline, { live: followed && !timeline.runEnd }).text);
      events.send("header", runMeta(view).text);
      events.send("output", finalOutput(view).text);
    };
    try {
      await push(log.slice(from), false);
      while (events.open) {
        // A run that reached an input step stops being driven: the page reloads for its form.
        if (timeline.waiting) {
          const checkpoint = await store.loadCheckpoint(runId).catch(() => undefined);
          if (checkpoint?.status === "waiting") {
            events.send("waiting", {});
            break;
          }
        }
        if (timeline.runEnd) {
          try {
            view.checkpoint = await store.loadCheckpoint(runId);
          } catch { /* shown on reload */ }
          view.summary = undefined;
          events.send("header", runMeta(view).text);
          // The run's output is in its final checkpoint, read just now.
          events.send("output", finalOutput(view).text);
          // With actions, the buttons of the ended run: no Cancel any more, Redrive if it failed.
          if (csrf) events.send("actions", runActions(view, csrf).text);
          events.send("end", {});
          break;
        }
        await sleep(intervalMs, events.signal);
        await push(await readLogFrom(store, runId, timeline.entries), true);
        events.keepAlive();
      }
    } catch (error) {
      if (events.open) events.send("problem", errorMessage(error));
    }
  });
}

/**
 * Server-sent events of a tool plan's page: `changed` once the plan file or its approval requests
 * differ from `since` (the page then reloads). The server compares every `intervalMs` (at least
 * 250 ms); the page never polls.
 */
export function planEvents(
  file: string,
  since: string,
  intervalMs: number,
  closing?: AbortSignal,
): Response {
  return eventStream(": following the plan", closing, async (events) => {
    try {
      while (events.open) {
        if (await toolPlanKey(file) !== since) {
          events.send("changed", {});
          break;
        }
        await sleep(Math.max(250, intervalMs), events.signal);
        events.keepAlive();
      }
    } catch { /* the stream ends; the page reloads on its own next visit */ }
  });
}

/** What a follower of {@linkcode eventStream} writes to. */
interface EventSink {
  /** Sends one event with a JSON payload. */
  send(event: string, value: unknown): void;
  /** Sends a comment line when nothing was sent for 15 s, so proxies keep the stream open. */
  keepAlive(): void;
  /** False once the browser went away or the server is closing. */
  readonly open: boolean;
  /** Aborted when the browser goes away or the server closes (for waits between reads). */
  readonly signal: AbortSignal;
}

/**
 * A server-sent-events response: `opening` as a first comment (clients and proxies see the stream
 * open at once), then whatever `follow` sends until it returns. It ends when the browser goes away
 * (the stream is cancelled, which aborts `gone`) or the server closes — not on the request's
 * signal, which Deno aborts as soon as a streaming response has started.
 */
function eventStream(
  opening: string,
  closing: AbortSignal | undefined,
  follow: (events: EventSink) => Promise<void>,
): Response {
  const gone = new AbortController();
  const signal = closing ? AbortSignal.any([gone.signal, closing]) : gone.signal;
  const encoder = new TextEncoder();
  let closed = false;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      let lastBeat = Date.now();
      const events: EventSink = {
        send: (event, value) => {
          controller.enqueue(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(value)}\n\n`));
          lastBeat = Date.now();
        },
        keepAlive: () => {
          if (Date.now() - lastBeat <= 15_000) return;
          controller.enqueue(encoder.encode(": keep-alive\n\n"));
          lastBeat = Date.now();
        },
        get open() {
          return !closed && !signal.aborted;
        },
        signal,
      };
      controller.enqueue(encoder.encode(`${opening}\n\n`));
      await follow(events);
      if (!closed) {
        closed = true;
        controller.close();
      }
    },
    cancel() {
      closed = true;
      gone.abort();
    },
  });
  return new Response(body, {
    headers: {
      ...securityHeaders(),
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
    },
  });
}
