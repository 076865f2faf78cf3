/**
 * The timeline chart: one bar per row from its start to its end on a shared time axis, coloured by
 * status, drawn as SVG on the server — so that a person sees at a glance what ran at once (the
 * parallelism), what ran long (the stragglers) and when nothing ran (the idle slots). The input is
 * a plain list of {@linkcode ChartRow}s: a run's iterations and tool calls, an agent step's child
 * runs, a fan-out step's children — whatever has a start, an end and a status.
 *
 * Three layouts, by size, so that the page stays small whatever the input:
 *
 * - **rows** (up to {@linkcode CHART_LIMITS}`.labelledRows` rows): one labelled line per row, in
 *   the order given (a `depth` indents a row under the one before it);
 * - **lanes** (more rows): the rows of each `group` packed into lanes — a row goes to the first
 *   lane free at its start — so that a group drawn in 4 lanes ran at most 4 at once; a lane's gaps
 *   are idle time. At most `maxLanes` lanes are drawn; rows that need more are counted, not drawn;
 * - **cells** (more than `maxBars` bars in lanes): each lane is cut into equal columns and each
 *   column a bar touches is drawn once, in the colour of the worst status in it, adjacent columns of
 *   one colour merged, its tooltip saying how many rows it holds and how they ended — at most
 *   `maxBars` shapes.
 *
 * Long because: the three layouts share the chart's types, its time axis and its bar titles, and
 * each is a few dozen lines of arithmetic; split, each file would import the others' internals.
 *
 * Accessible: the drawing has a title and a description (how many rows, over how long, at most how
 * many at once per group, how they ended); each bar (or cell) has a tooltip (`<title>`) naming it,
 * its status and its times, and a bar with a link is a link. Everything shown is escaped.
 *
 * @module
 */
import { formatDuration } from "./display_format.ts";
import { type Html, html as h } from "./html.ts";

/** One bar of a timeline chart. */
export interface ChartRow {
  /** What the bar is: shown beside it (shortened when long) and in its tooltip. */
  label: string;
  /** When it started: an ISO time or epoch milliseconds. A row without a valid start is skipped. */
  start: string | number;
  /**
   * When it ended: an ISO time or epoch milliseconds. Absent while it runs: the bar is drawn open
   * up to the chart's `now`.
   */
  end?: string | number;
  /**
   * How it ended or stands, in the words the views use — `completed`, `failed`, `running`,
   * `waiting`, `cancelled`, `interrupted`, `aborted`, `timeout`, `denied`… — which gives its
   * colour (see {@linkcode statusKind}).
   */
  status: string;
  /** Where the bar links (a run's page, a row of the page). */
  link?: string;
  /**
   * The rows of one group are packed into lanes together and labelled by it (`steps`, `tool
   * calls`, `children`); default: one unnamed group.
   */
  group?: string;
  /** In the labelled layout, how far the row is indented under the one before it (default 0). */
  depth?: number;
  /** More for the tooltip (a duration recorded by the row itself, an error). */
  detail?: string;
}

/** How many rows and shapes a chart draws before it changes its layout. */
export interface ChartLimits {
  /** Rows drawn one per labelled line; more are packed into lanes. */
  labelledRows: number;
  /** Lanes drawn; the rows that need more lanes are counted, not drawn. */
  maxLanes: number;
  /** Bars drawn one by one in lanes; more are drawn as cells (at most this many shapes). */
  maxBars: number;
}

/** The default bounds: a page of a few hundred kilobytes at most. */
export const CHART_LIMITS: Readonly<ChartLimits> = Object.freeze({
  labelledRows: 60,
  maxLanes: 256,
  maxBars: 600,
});

/** Options of {@linkcode timelineChart} and {@linkcode chartGeometry}. */
export interface ChartOptions {
  /** An id unique in the page (the drawing's title and description are named by it). */
  id: string;
  /** What the chart shows (its accessible title): "Timing of run …". */
  title: string;
  /** The time open bars are drawn to, epoch milliseconds (default: the latest time of any row). */
  now?: number;
  /** Other bounds than {@linkcode CHART_LIMITS}. */
  limits?: Partial<ChartLimits>;
}

/** The colour class of a status. */
export type StatusKind = "ok" | "bad" | "warn" | "wait" | "run" | "other";

/** One shape of the chart: a row's bar, or a cell of several rows. */
export interface ChartBar {
  /** The row's index in the input (-1 for a cell of several rows). */
  row: number;
  /** Rows it stands for (1 for a bar). */
  count: number;
  /** Left edge (px). */
  x: number;
  /** Top edge (px). */
  y: number;
  /** Width (px), at least {@linkcode MIN_BAR_WIDTH}. */
  width: number;
  /** Height (px). */
  height: number;
  /** Its colour class. */
  kind: StatusKind;
  /** True for a row still running (no end): drawn up to `now`. */
  open: boolean;
  /** The tooltip. */
  title: string;
  /** Its link (a bar's, or a cell's single row's). */
  link?: string;
}

/** A line of the chart: a row's (labelled layout) or a lane of a group. */
export interface ChartLane {
  /** Top edge (px). */
  y: number;
  /** Height (px). */
  height: number;
  /** Text at the left (the row's label, or the group's name on its first lane). */
  label?: string;
  /** The whole label (its tooltip) when the shown one is shortened. */
  fullLabel?: string;
  /** Indent of the label (px). */
  indent: number;
  /** The group. */
  group: string;
}

/** What a group of rows did. */
export interface ChartGroup {
  /** Its name (`""` for the unnamed group). */
  name: string;
  /** Rows drawn (valid starts). */
  rows: number;
  /** Lanes it takes (the labelled layout: its rows). */
  lanes: number;
  /** The most of its rows in flight at one instant. */
  maxConcurrent: number;
  /** Rows by status. */
  statuses: Record<string, number>;
}

/** The chart laid out (pure numbers: {@linkcode timelineChart} draws it). */
export interface ChartGeometry {
  /** The layout chosen by size (see the module documentation). */
  mode: "rows" | "lanes" | "cells";
  /** Width of the drawing (px). */
  width: number;
  /** Height of the drawing (px). */
  height: number;
  /** The plot area (px): time runs from `left` (t0) to `right` (t1). */
  plot: { left: number; right: number; top: number; bottom: number };
  /** The first start (epoch ms). */
  t0: number;
  /** The last end, or `now` (epoch ms). */
  t1: number;
  /** Grid lines of the time axis: where, and the time since t0 they mark. */
  ticks: { x: number; label: string }[];
  /** Lines (rows or lanes). */
  lanes: ChartLane[];
  /** Shapes. */
  bars: ChartBar[];
  /** The groups, in the order they first appear. */
  groups: ChartGroup[];
  /** Rows without a valid start; rows that needed more lanes than the bound. */
  skipped: { invalid: number; overLanes: number };
}

/** The narrowest bar (px): an instant still shows. */
export const MIN_BAR_WIDTH = 2;
const PLOT_WIDTH = 880;
const LABEL_WIDTH = 240;
const RIGHT_MARGIN = 16;
const AXIS_HEIGHT = 26;
const ROW_HEIGHT = 18;
const MAX_LANES_HEIGHT = 560;
const GROUP_GAP = 8;
/** Characters of a label drawn (11 px text in {@linkcode LABEL_WIDTH}). */
const LABEL_CHARS = 34;

/**
 * The colour class of a status: `ok` (completed), `bad` (failed, aborted, timeout, denied, error,
 * invalid), `warn` (cancelled, interrupted, unfinished, paused, queued), `wait` (waiting, waited,
 * asking),
 * `run` (running), `other`.
 */
export function statusKind(status: string): StatusKind {
  switch (status) {
    case "completed":
    case "ok":
      return "ok";
    case "failed":
    case "aborted":
    case "timeout":
    case "denied":
    case "error":
    case "invalid":
      return "bad";
    case "cancelled":
    case "interrupted":
    case "unfinished":
    case "paused":
    case "queued":
      return "warn";
    case "waiting":
    case "waited":
    case "asking":
      return "wait";
    case "running":
      return "run";
    default:
      return "other";
  }
}

/** Which kind a cell of several rows shows: the worst. */
const SEVERITY: Record<StatusKind, number> = { bad: 5, warn: 4, wait: 3, run: 2, ok: 1, other: 0 };

/** A row with its times read. */
interface Timed {
  index: number;
  start: number;
  end: number;
  open: boolean;
  kind: StatusKind;
  group: string;
}

/**
 * Lays the chart out: which layout, the time axis, the lines and the shapes. Pure: the same rows
 * and options give the same numbers (what the tests measure).
 *
 * @example
 * ```ts
 * import { chartGeometry } from "./timeline_chart.ts";
 * const g = chartGeometry([
 *   { label: "a", start: 0, end: 1000, status: "completed" },
 *   { label: "b", start: 500, end: 1000, status: "failed" },
 * ], { id: "c", title: "demo" });
 * console.log(g.mode, g.bars[1].x > g.bars[0].x, g.groups[0].maxConcurrent); // rows true 2
 * ```
 */
export function chartGeometry(rows: readonly ChartRow[], options: ChartOptions): ChartGeometry {
  const limits = { ...CHART_LIMITS, ...options.limits };
  const timed: Timed[] = [];
  let invalid = 0;
  let latest = -Infinity;
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index];
    const start = timeOf(row.start);
    if (start === undefined) {
      invalid++;
      continue;
    }
    const end = row.end === undefined ? undefined : timeOf(row.end);
    latest = Math.max(latest, start, end ?? start);
    timed.push({
      index,
      start,
      end: end === undefined ? NaN : Math.max(start, end),
      open: row.end === undefined,
      kind: statusKind(row.status),
      group: row.group ?? "",
    });
  }
  let now = Math.max(latest, options.now ?? latest);
  let t0 = Infinity;
  for (const t of timed) {
    // A row whose end cannot be read is drawn as an instant; an open one up to now.
    if (Number.isNaN(t.end)) t.end = t.open ? now : t.start;
    t0 = Math.min(t0, t.start);
  }
  if (timed.length === 0) t0 = now = options.now ?? 0;
  const t1 = Math.max(now, t0 + 1);
  const groups = groupsOf(rows, timed);

  const left = LABEL_WIDTH;
  const right = left + PLOT_WIDTH;
  const top = AXIS_HEIGHT;
  const xOf = (t: number) => left + (t - t0) / (t1 - t0) * PLOT_WIDTH;
  const lanes: ChartLane[] = [];
  const bars: ChartBar[] = [];
  let overLanes = 0;
  let mode: ChartGeometry["mode"];
  if (timed.length <= limits.labelledRows) {
    mode = "rows";
    timed.forEach((t, i) => {
      const row = rows[t.index];
      const y = top + i * ROW_HEIGHT;
      lanes.push({
        y,
        height: ROW_HEIGHT,
        ...labelOf(row.label),
        indent: 12 * Math.max(0, Math.min(4, row.depth ?? 0)),
        group: t.group,
      });
      bars.push(barOf(t, row, xOf, y + 3, ROW_HEIGHT - 6, t0));
    });
  } else {
    const packed = packLanes(timed, groups, limits.maxLanes);
    overLanes = packed.overLanes;
    const laneCount = packed.lanes.length;
    const laneHeight = Math.max(3, Math.min(ROW_HEIGHT, Math.floor(MAX_LANES_HEIGHT / laneCount)));
    let y = top;
    let group: string | undefined;
    const laneTops: number[] = [];
    for (const lane of packed.lanes) {
      if (group !== undefined && lane.group !== group) y += GROUP_GAP;
      const first = lane.group !== group;
      group = lane.group;
      const info = groups.find((g) => g.name === lane.group)!;
      const name = lane.group || "rows";
      laneTops.push(y);
      lanes.push({
        y,
        height: laneHeight,
        ...(first ? labelOf(info.lanes > 1 ? `${name} (${info.lanes} lanes)` : name) : {}),
        indent: 0,
        group: lane.group,
      });
      y += laneHeight;
    }
    const barHeight = Math.max(2, laneHeight - (laneHeight >= 8 ? 4 : 1));
    const inset = (laneHeight - barHeight) / 2;
    const drawn = packed.lanes.reduce((n, lane) => n + lane.rows.length, 0);
    if (drawn <= limits.maxBars) {
      mode = "lanes";
      packed.lanes.forEach((lane, i) => {
        for (const t of lane.rows) {
          bars.push(barOf(t, rows[t.index], xOf, laneTops[i] + inset, barHeight, t0));
        }
      });
    } else {
      mode = "cells";
      const columns = Math.max(8, Math.floor(limits.maxBars / laneCount));
      packed.lanes.forEach((lane, i) => {
        bars.push(...cellsOf(lane.rows, rows, columns, t0, t1, laneTops[i] + inset, barHeight));
      });
    }
  }
  const bottom = lanes.length === 0 ? top + ROW_HEIGHT : lanes.at(-1)!.y + lanes.at(-1)!.height;
  return {
    mode,
    width: right + RIGHT_MARGIN,
    height: bottom + 4,
    plot: { left, right, top, bottom },
    t0,
    t1,
    ticks: ticksOf(t1 - t0).map((ms) => ({
      x: xOf(t0 + ms),
      label: ms === 0 ? "0" : `+${span(ms)}`,
    })),
    lanes,
    bars,
    groups,
    skipped: { invalid, overLanes },
  };
}

/**
 * Draws the chart: an SVG (with its title, description, time axis, labels and bars) in a figure
 * whose caption says what it shows; nothing for no rows.
 *
 * @example
 * ```ts
 * import { timelineChart } from "./timeline_chart.ts";
 * const chart = timelineChart(
 *   [{ label: "#1 plan", start: "2026-01-01T00:00:00Z", end: "2026-01-01T00:00:02Z", status: "completed" }],
 *   { id: "steps", title: "Steps" },
 * );
 * console.log(String(chart).includes("<svg")); // true
 * ```
 */
export function timelineChart(rows: readonly ChartRow[], options: ChartOptions): Html | "" {
  if (rows.length === 0) return "";
  const g = chartGeometry(rows, options);
  const id = options.id;
  const summary = describe(g);
  const { left, right, top, bottom } = g.plot;
  return h`<figure class="chart" id="${id}" data-mode="${g.mode}" data-bars="${g.bars.length}">
<svg class="timeline-chart" xmlns="http://www.w3.org/2000/svg" role="group" aria-labelledby="${id}-title ${id}-desc" width="${g.width}" height="${g.height}" viewBox="0 0 ${g.width} ${g.height}"><title id="${id}-title">${options.title}</title><desc id="${id}-desc">${summary}</desc><g class="axis">${
    g.ticks.map((t) =>
      h`<line x1="${n(t.x)}" x2="${n(t.x)}" y1="${top - 4}" y2="${bottom}"></line><text x="${
        n(t.x)
      }" y="${top - 8}">${t.label}</text>`
    )
  }<line class="base" x1="${left}" x2="${right}" y1="${top}" y2="${top}"></line></g><g class="labels">${
    g.lanes.map((lane) =>
      lane.label === undefined
        ? ""
        : h`<text x="${4 + lane.indent}" y="${n(lane.y + lane.height / 2 + 4)}">${
          lane.fullLabel ? h`<title>${lane.fullLabel}</title>` : ""
        }${lane.label}</text>`
    )
  }</g><g class="bars">${g.bars.map(barSvg)}</g></svg>
<figcaption class="note">${summary}${legend(g)}</figcaption></figure>`;
}

function barSvg(bar: ChartBar): Html {
  const rect = (title: Html | string) =>
    h`<rect class="bar ${bar.kind}${bar.open ? " open" : ""}${bar.count > 1 ? " cell" : ""}" x="${
      n(bar.x)
    }" y="${n(bar.y)}" width="${n(bar.width)}" height="${n(bar.height)}"${
      bar.row >= 0 ? h` data-row="${bar.row}"` : ""
    }${bar.count > 1 ? h` data-count="${bar.count}"` : ""}>${title}</rect>`;
  // A link's title names it (its accessible name and tooltip); a bar's own title does otherwise.
  return bar.link
    ? h`<a href="${bar.link}"><title>${bar.title}</title>${rect("")}</a>`
    : rect(h`<title>${bar.title}</title>`);
}

/** A swatch per colour drawn, named by the statuses it stands for (`failed, denied`). */
function legend(g: ChartGeometry): Html {
  const drawn = new Set(g.bars.map((b) => b.kind));
  const names = new Map<StatusKind, Set<string>>();
  for (const group of g.groups) {
    for (const status of Object.keys(group.statuses)) {
      const kind = statusKind(status);
      if (!drawn.has(kind)) continue;
      if (!names.has(kind)) names.set(kind, new Set());
      names.get(kind)!.add(status);
    }
  }
  const order = Object.keys(SEVERITY) as StatusKind[];
  return h`<span class="legend">${
    order.toReversed().filter((k) => names.has(k)).map((k) =>
      h` <span class="swatch ${k}"></span>${[...names.get(k)!].join(", ")}`
    )
  }</span>`;
}

/** The drawing's description: how many, over how long, at most how many at once, how they ended. */
function describe(g: ChartGeometry): string {
  const parts = g.groups.map((group) => {
    const name = group.name || "rows";
    const ends = Object.entries(group.statuses).map(([s, c]) => `${c} ${s}`).join(", ");
    return `${name}: ${group.rows} (${ends}), at most ${group.maxConcurrent} at once`;
  });
  const start = Number.isFinite(g.t0) ? new Date(g.t0).toISOString() : "";
  const skipped = [
    g.skipped.invalid ? `${g.skipped.invalid} without a valid start time not drawn` : "",
    g.skipped.overLanes ? `${g.skipped.overLanes} beyond the lanes drawn not shown` : "",
    g.mode === "cells"
      ? "drawn as cells: each shows how many rows it holds and the worst status among them"
      : "",
  ].filter(Boolean);
  return `${parts.join("; ")} — from ${start} over ${span(g.t1 - g.t0)}${
    skipped.length ? `; ${skipped.join("; ")}` : ""
  }.`;
}

function groupsOf(rows: readonly ChartRow[], timed: readonly Timed[]): ChartGroup[] {
  const byName = new Map<string, { group: ChartGroup; events: [number, number][] }>();
  for (const t of timed) {
    let entry = byName.get(t.group);
    if (!entry) {
      entry = {
        group: { name: t.group, rows: 0, lanes: 0, maxConcurrent: 0, statuses: {} },
        events: [],
      };
      byName.set(t.group, entry);
    }
    entry.group.rows++;
    const status = rows[t.index].status;
    entry.group.statuses[status] = (entry.group.statuses[status] ?? 0) + 1;
    entry.events.push([t.start, 1], [t.end, -1]);
  }
  const out: ChartGroup[] = [];
  for (const { group, events } of byName.values()) {
    // An end and a start at the same instant do not overlap: ends first.
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let now = 0;
    for (const [, step] of events) group.maxConcurrent = Math.max(group.maxConcurrent, now += step);
    group.lanes = group.rows;
    out.push(group);
  }
  return out;
}

/** Each group's rows packed into lanes (first lane free at a row's start), groups in order. */
function packLanes(
  timed: readonly Timed[],
  groups: ChartGroup[],
  maxLanes: number,
): { lanes: { group: string; rows: Timed[]; end: number }[]; overLanes: number } {
  const lanes: { group: string; rows: Timed[]; end: number }[] = [];
  let overLanes = 0;
  for (const group of groups) {
    const members = timed.filter((t) => t.group === group.name)
      .sort((a, b) => a.start - b.start || a.index - b.index);
    const own: { group: string; rows: Timed[]; end: number }[] = [];
    for (const t of members) {
      let lane = own.find((l) => l.end <= t.start);
      if (!lane) {
        if (lanes.length + own.length >= maxLanes) {
          overLanes++;
          continue;
        }
        lane = { group: group.name, rows: [], end: -Infinity };
        own.push(lane);
      }
      lane.rows.push(t);
      lane.end = t.end;
    }
    group.lanes = own.length;
    lanes.push(...own);
  }
  return { lanes, overLanes };
}

/**
 * A lane's rows as cells of `columns` equal columns: a column any row touches is one cell, of the
 * worst kind among its rows; adjacent cells of one kind are one shape, a gap (idle time) stays one.
 */
function cellsOf(
  members: readonly Timed[],
  rows: readonly ChartRow[],
  columns: number,
  t0: number,
  t1: number,
  y: number,
  height: number,
): ChartBar[] {
  const col = (t: number) => Math.min(columns - 1, Math.floor((t - t0) / (t1 - t0) * columns));
  // A shape spans columns from..to and holds the lane's rows from..last (by position): the rows
  // of a lane do not overlap and come in start order, so those touching a column are a range.
  interface Shape {
    from: number;
    to: number;
    first: number;
    last: number;
    kind: StatusKind;
  }
  const cells: Shape[] = [];
  for (let p = 0; p < members.length; p++) {
    const t = members[p];
    for (let c = col(t.start), end = col(t.end); c <= end; c++) {
      const cell = cells.at(-1);
      if (cell && cell.to === c) {
        cell.last = p;
        if (SEVERITY[t.kind] > SEVERITY[cell.kind]) cell.kind = t.kind;
      } else cells.push({ from: c, to: c, first: p, last: p, kind: t.kind });
    }
  }
  const shapes: Shape[] = [];
  for (const cell of cells) {
    const last = shapes.at(-1);
    if (last && last.to + 1 === cell.from && last.kind === cell.kind) {
      last.to = cell.to;
      last.last = Math.max(last.last, cell.last);
    } else shapes.push({ ...cell });
  }
  const width = PLOT_WIDTH / columns;
  return shapes.map((shape) => {
    const held = members.slice(shape.first, shape.last + 1);
    const single = held.length === 1 ? rows[held[0].index] : undefined;
    const statuses = new Map<string, number>();
    for (const t of held) {
      const status = rows[t.index].status;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    const ends = [...statuses].map(([s, c]) => `${c} ${s}`).join(", ");
    // In start order and apart: the first starts first, the last ends last.
    const start = held[0].start;
    const end = held.at(-1)!.end;
    return {
      row: single ? held[0].index : -1,
      count: held.length,
      x: LABEL_WIDTH + shape.from * width,
      y,
      width: Math.max(MIN_BAR_WIDTH, (shape.to - shape.from + 1) * width),
      height,
      kind: shape.kind,
      open: single !== undefined && held[0].open,
      title: single
        ? titleOf(single, held[0], t0)
        : `${held.length} rows (${ends}), from +${span(start - t0)} to +${span(end - t0)}`,
      ...(single?.link ? { link: single.link } : {}),
    };
  });
}

function barOf(
  t: Timed,
  row: ChartRow,
  xOf: (t: number) => number,
  y: number,
  height: number,
  t0: number,
): ChartBar {
  const x = xOf(t.start);
  return {
    row: t.index,
    count: 1,
    x,
    y,
    width: Math.max(MIN_BAR_WIDTH, xOf(t.end) - x),
    height,
    kind: t.kind,
    open: t.open,
    title: titleOf(row, t, t0),
    ...(row.link ? { link: row.link } : {}),
  };
}

/** `label — status — 1.2 s (so far), from +0.3 s — detail`. */
function titleOf(row: ChartRow, t: Timed, t0: number): string {
  return `${row.label} — ${row.status} — ${span(t.end - t.start)}${
    t.open ? " so far" : ""
  }, from +${span(t.start - t0)}${row.detail ? ` — ${row.detail}` : ""}`;
}

function labelOf(label: string): { label: string; fullLabel?: string } {
  return label.length > LABEL_CHARS
    ? { label: `${label.slice(0, LABEL_CHARS - 1)}…`, fullLabel: label }
    : { label };
}

/** A duration for the axis and tooltips: `0 ms`, `850 ms`, `1.2 s`, `3 min 04 s`. */
function span(ms: number): string {
  return ms <= 0 ? "0 ms" : formatDuration(ms);
}

/** Steps of the time axis (ms): 1-2-5 milliseconds, then seconds, minutes and hours. */
const TICK_STEPS = [
  ...[1, 2, 5, 10, 20, 50, 100, 200, 500],
  ...[1, 2, 5, 10, 15, 30].map((s) => s * 1_000),
  ...[1, 2, 5, 10, 15, 30].map((m) => m * 60_000),
  ...[1, 2, 3, 6, 12, 24].map((h) => h * 3_600_000),
];

/** The times of the grid lines from 0 to `total` ms: at most 8 of them, on a readable step. */
export function ticksOf(total: number): number[] {
  const step = TICK_STEPS.find((s) => total / s <= 7) ??
    Math.ceil(total / 7 / 86_400_000) * 86_400_000;
  const out: number[] = [];
  for (let t = 0; t <= total; t += step) out.push(t);
  return out;
}

/** A time in epoch ms from an ISO string or a number, or undefined. */
function timeOf(value: string | number): number | undefined {
  const t = typeof value === "number" ? value : Date.parse(value);
  return Number.isFinite(t) ? t : undefined;
}

/** A coordinate as markup: two decimals at most. */
function n(value: number): number {
  return Math.round(value * 100) / 100;
}
