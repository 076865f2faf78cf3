/**
 * Helpers of the fan-out-on-workers tests: waiting for a run to end, and the most children of a
 * fan-out that ran at once, from their own recorded start and end times.
 */
import type { RunCheckpoint, RunStore } from "../../src/store/types.ts";
import { ENDED_RUN_STATUSES } from "../../src/run_statuses.ts";

const ENDED: ReadonlySet<string> = new Set(ENDED_RUN_STATUSES);

/** Polls the run's checkpoint until it ended (or `timeoutMs` passed: then throws). */
export async function untilEnded(
  store: RunStore,
  runId: string,
  timeoutMs: number,
): Promise<RunCheckpoint> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const checkpoint = await store.loadCheckpoint(runId).catch(() => undefined);
    if (checkpoint && ENDED.has(checkpoint.status)) return checkpoint;
    if (Date.now() > until) {
      throw new Error(`run ${runId} did not end in ${timeoutMs} ms (${checkpoint?.status})`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Each child's span: its first log line's time to its `run_end` line's. */
export async function childSpans(
  store: RunStore,
  runIds: readonly string[],
): Promise<{ runId: string; start: number; end: number }[]> {
  const spans = [];
  for (const runId of runIds) {
    const log = await store.readLog(runId);
    const times = log.map((e) => Date.parse(String(e.ts)));
    const end = log.findLast((e) => e.type === "run_end");
    spans.push({ runId, start: times[0], end: Date.parse(String(end?.ts)) });
  }
  return spans;
}

/** The most children running at one moment, from their recorded spans. */
export async function mostAtOnce(store: RunStore, runIds: readonly string[]): Promise<number> {
  const events = (await childSpans(store, runIds)).flatMap((s) => [
    { at: s.start, step: 1 },
    { at: s.end, step: -1 },
  ]);
  // An end and a start at the same millisecond: the end first.
  events.sort((a, b) => a.at - b.at || a.step - b.step);
  let now = 0, most = 0;
  for (const e of events) {
    now += e.step;
    most = Math.max(most, now);
  }
  return most;
}
