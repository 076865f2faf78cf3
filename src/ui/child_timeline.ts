/**
 * An agent step's child run drawn inside its parent's timeline: opened on demand from the agent
 * step's row (`/runs/PARENT/rows/N/child`), read from the child's log in the store that holds it —
 * its timing chart (the run page's, its bars linking the child's page) and its first rows.
 * Bounded: the first {@linkcode CHILD_ROWS_SHOWN} rows, then a link to the child's own page; a
 * grandchild shows as a link, never nested further.
 *
 * @module
 */
import { errorMessage } from "../errors.ts";
import type { RunCheckpoint, RunStore } from "../store/types.ts";
import { type Html, html as h } from "./html.ts";
import { runHref, statusBadge, timelineRow } from "./pages.ts";
import { foldLog, newTimeline, type Timeline } from "./timeline.ts";
import { runChart } from "./run_chart.ts";

/** How many of a child run's timeline rows show nested in its parent's timeline. */
export const CHILD_ROWS_SHOWN = 25;

/**
 * The nested timeline of the child run `childId` (an agent step's), read from `store` — the store
 * that holds it (its own agent's; a child recorded by an older version sits in its parent's). A
 * child missing from the store or whose log cannot be read says so rather than failing the
 * parent's page.
 */
export async function childTimeline(store: RunStore, childId: string): Promise<Html> {
  const link = h`<a href="${runHref(childId)}">${childId}</a>`;
  try {
    const [checkpoint, log] = await Promise.all([
      store.loadCheckpoint(childId),
      store.readLog(childId),
    ]);
    if (!checkpoint && log.length === 0) {
      return h`<div class="note">The child run ${link} is not in this store (yet): it has no checkpoint and no log.</div>`;
    }
    const timeline = newTimeline();
    foldLog(timeline, log);
    return nestedRows(childId, timeline, checkpoint?.status, link);
  } catch (error) {
    return h`<div class="errors">Could not read the child run ${link}: ${
      errorMessage(error)
    }</div>`;
  }
}

function nestedRows(
  childId: string,
  timeline: Timeline,
  status: RunCheckpoint["status"] | undefined,
  link: Html,
): Html {
  const rows = timeline.rows;
  const shown = rows.slice(0, CHILD_ROWS_SHOWN);
  const chart = runChart(childId, timeline, {
    live: status === "running",
    id: `chart-${childId}`,
    rowHref: (index) => `${runHref(childId)}#row-${index}`,
  });
  return h`<div class="child-timeline" data-run="${childId}"><div class="note">Child run ${link}${
    status ? h` ${statusBadge({ status })}` : ""
  } — ${rows.length} timeline rows.</div>${chart}${
    shown.map((row) => timelineRow(childId, row, { nested: true, live: status === "running" }))
  }${
    rows.length > shown.length
      ? h`<div class="note">Showing the first ${shown.length} of ${rows.length} rows. <a href="${
        runHref(childId)
      }">The child run's page</a> shows them all.</div>`
      : ""
  }</div>`;
}
