/**
 * The run page's fan-out section: for each fan-out step the run ran, a progress bar (done,
 * failed, running, waiting of all items), its children drawn with the one
 * {@linkcode timelineChart} — one bar per child from its start to its end, coloured by status, in
 * lanes when many, so the parallelism, the stragglers and the idle slots show — and the items
 * listed failures first, each linking its child's page (whose header links back to the item's
 * row here). A waiting child's row links its question, answered in the page's waiting section
 * (`waiting_form.ts`). Everything shown is escaped; the list is bounded.
 *
 * @module
 */
import { formatDuration, runHref, usageText } from "./display_format.ts";
import {
  categoryOf,
  countsText,
  type FanOutCounts,
  type FanOutView,
  isOpen,
  itemAnchor,
  listOrder,
} from "./fan_out_view.ts";
import { type NodeProgress, progressRects } from "./graph_svg.ts";
import { type Html, html as h } from "./html.ts";
import { type ChartRow, timelineChart } from "./timeline_chart.ts";
import type { WaitingView } from "./waiting_form.ts";

/** Items listed per fan-out, at most (failures and the unfinished first; the rest are counted). */
export const LISTED_ITEMS = 200;

/** How {@linkcode fanOutSection} draws. */
export interface FanOutSectionOptions {
  /** Open bars (running, waiting children) are drawn up to this time (epoch ms); default: the latest time of any bar. */
  now?: number;
  /** Where a waiting child's question is on the page, by child run id (`#…` anchors). */
  questions?: ReadonlyMap<string, string>;
  /** `run-agent … --agent NAME --show RUN_ID`, said under a list that does not show every item. */
  showCommand?: string;
}

/** What {@linkcode fanOutsOfRun} reads of a run's view. */
export interface FanOutsOfRun {
  /** The run's fan-outs. */
  fanOuts?: readonly FanOutView[];
  /** What the run waits on (a waiting child's row links its question). */
  waits?: readonly WaitingView[];
  /** `run-agent … --show RUN_ID`, for a list that does not show every item. */
  showCommand?: string;
  /** The run's timeline: open children are drawn up to now until the run ended. */
  timeline: { runEnd?: unknown };
}

/**
 * A run's fan-outs as its page and live view draw them: open children drawn up to now while the
 * run is not over, each waiting child's row linking its question (`#wait-item-N`) in the page's
 * waiting section.
 */
export function fanOutsOfRun(view: FanOutsOfRun): Html {
  const questions = new Map(
    (view.waits ?? []).flatMap((w) =>
      w.child ? [[w.child.runId, `#wait-item-${w.child.index}`] as const] : []
    ),
  );
  return fanOutSection(view.fanOuts ?? [], {
    ...(view.timeline.runEnd ? {} : { now: Date.now() }),
    questions,
    ...(view.showCommand ? { showCommand: view.showCommand } : {}),
  });
}

/**
 * The fan-outs of a run (`<div id="fan-outs">`, swapped whole by the live view; empty for a run
 * without one, so that a fan-out that starts while the page is open appears).
 */
export function fanOutSection(
  fanOuts: readonly FanOutView[],
  options: FanOutSectionOptions = {},
): Html {
  if (fanOuts.length === 0) return h`<div id="fan-outs"></div>`;
  return h`<div id="fan-outs"><h2>Fan-out children</h2>${
    fanOuts.map((f, n) => fanOutBlock(f, n, options))
  }</div>`;
}

/** The progress bar of a fan-out's graph node. */
export function nodeProgress(view: FanOutView): NodeProgress {
  return {
    total: view.counts.total,
    parts: progressParts(view.counts),
    text: countsText(view.counts),
  };
}

/** The graph's progress bars: each step's latest fan-out. */
export function fanOutProgress(fanOuts: readonly FanOutView[]): Map<string, NodeProgress> {
  return new Map(fanOuts.filter((f) => f.latest).map((f) => [f.stepId, nodeProgress(f)]));
}

function progressParts(counts: FanOutCounts): NodeProgress["parts"] {
  return [
    { kind: "ok", count: counts.completed },
    { kind: "bad", count: counts.failed },
    { kind: "run", count: counts.running },
    { kind: "wait", count: counts.waiting },
    { kind: "warn", count: counts.stopped },
  ];
}

function fanOutBlock(view: FanOutView, n: number, options: FanOutSectionOptions): Html {
  const progress = nodeProgress(view);
  const bar =
    h`<svg class="fanout-bar" xmlns="http://www.w3.org/2000/svg" width="320" height="10" viewBox="0 0 320 10">${
      progressRects(progress, 0, 0, 320, 10)
    }</svg>`;
  const chart = timelineChart(chartRows(view), {
    id: `fanout-chart-${n}`,
    title: `Children of fan-out step ${view.stepId} (agent ${view.agent}), one bar per child`,
    ...(options.now !== undefined && view.children.some((c) => isOpen(c.status))
      ? { now: options.now }
      : {}),
  });
  const listed = listOrder(view.items);
  const shown = listed.slice(0, LISTED_ITEMS);
  const rest = listed.length - shown.length;
  const c = view.counts;
  return h`<section class="fanout" id="${view.latest ? `fanout-${view.stepId}` : `fanout-${n}`}"
    data-step="${view.stepId}" data-total="${c.total}" data-completed="${c.completed}"
    data-failed="${c.failed}" data-running="${c.running}" data-waiting="${c.waiting}">
    <h3>Fan-out <code>${view.stepId}</code> · agent <a href="${`/agents/${
    encodeURIComponent(view.agent)
  }`}">${view.agent}</a> · ${c.total} item${c.total === 1 ? "" : "s"}</h3>
    <div class="fanout-progress">${bar} <span class="fanout-counts">${progress.text}</span></div>
    ${chart}
    <div class="table-scroll"><table class="fanout-items">
      <thead><tr><th class="num">#</th><th>Item</th><th>Status</th><th class="num">Duration</th>
        <th class="num">Tokens in/out</th><th>Child run</th><th></th></tr></thead>
      <tbody>${shown.map((item) => itemRow(view, item, options))}</tbody>
    </table></div>${
    rest > 0
      ? h`<p class="note">${rest} more item${rest === 1 ? "" : "s"} not listed (${countsText(c)}).${
        options.showCommand ? h` <code>${options.showCommand}</code> lists every item.` : ""
      }</p>`
      : ""
  }
  </section>`;
}

function itemRow(
  view: FanOutView,
  item: FanOutView["items"][number],
  options: FanOutSectionOptions,
): Html {
  const question = item.runId ? options.questions?.get(item.runId) : undefined;
  const category = categoryOf(item.status);
  const anchor = view.latest ? itemAnchor(view.stepId, item.index) : undefined;
  return h`<tr${
    anchor ? h` id="${anchor}"` : ""
  } data-item="${item.index}" data-status="${item.status}" class="${category}">
    <td class="num">${item.index + 1}</td>
    <td class="item">${item.item}</td>
    <td><span class="status ${item.status.replace(/ /g, "-")}">${item.status}</span>${
    item.children > 1 ? h` <span class="note">(${item.children} children)</span>` : ""
  }</td>
    <td class="num">${formatDuration(item.durationMs)}</td>
    <td class="num">${item.usage ? usageText(item.usage) : ""}</td>
    <td class="run">${item.runId ? h`<a href="${runHref(item.runId)}">${item.runId}</a>` : ""}</td>
    <td>${
    question
      ? h`<a class="answer-link" href="${question}">answer its question</a>`
      : item.error
      ? h`<span class="errors">${item.error.code}: ${clip(item.error.message)}</span>`
      : ""
  }</td>
  </tr>`;
}

/** Characters of an item's error shown in its row (its child's page has the whole). */
const ERROR_CHARS = 200;

function clip(text: string): string {
  return text.length > ERROR_CHARS ? `${text.slice(0, ERROR_CHARS - 1)}…` : text;
}

/** One bar per child (an item retried has a bar per child), in item order. */
export function chartRows(view: FanOutView): ChartRow[] {
  return view.children.map((child) => ({
    label: `#${child.index + 1} ${child.item}${
      child.attempt > 1 ? ` (attempt ${child.attempt})` : ""
    }`,
    start: child.startedAt,
    ...(child.endedAt !== undefined ? { end: child.endedAt } : {}),
    status: child.status,
    link: runHref(child.runId),
    group: "children",
    ...(child.error ? { detail: `${child.error.code}: ${child.error.message}` } : {}),
  }));
}
