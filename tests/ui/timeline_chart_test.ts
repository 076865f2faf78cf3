/**
 * The timeline chart's geometry: bars placed by their times on one axis, concurrency visible
 * (overlapping rows on separate lines, packed lanes as many as ran at once), the three layouts and
 * their bounds, and the drawing (escaped, titled, linked).
 */
import assert from "node:assert/strict";
import {
  CHART_LIMITS,
  chartGeometry,
  type ChartRow,
  MIN_BAR_WIDTH,
  statusKind,
  ticksOf,
  timelineChart,
} from "../../src/ui/timeline_chart.ts";

const T0 = Date.parse("2026-11-20T10:00:00.000Z");
const at = (ms: number) => new Date(T0 + ms).toISOString();
const options = { id: "c", title: "test" };

Deno.test("chart geometry: a bar's x and width follow its start and end on the shared axis", () => {
  const g = chartGeometry([
    { label: "a", start: at(0), end: at(1000), status: "completed" },
    { label: "b", start: at(500), end: at(1000), status: "failed" },
    { label: "c", start: at(1000), end: at(1000), status: "completed" },
    { label: "d", start: T0 + 250, end: T0 + 750, status: "running" },
  ], options);
  assert.equal(g.mode, "rows");
  assert.equal(g.t0, T0);
  assert.equal(g.t1, T0 + 1000);
  const { left, right } = g.plot;
  const width = right - left;
  const [a, b, c, d] = g.bars;
  assert.deepEqual([a.x, a.width], [left, width]);
  assert.deepEqual([b.x, b.width], [left + width / 2, width / 2]);
  // An instant still shows.
  assert.deepEqual([c.x, c.width], [right, MIN_BAR_WIDTH]);
  assert.deepEqual([d.x, d.width], [left + width / 4, width / 2]);
  // One line per row, in order, and the colour of its status.
  assert.deepEqual(
    g.bars.map((bar) => bar.y),
    [...g.bars.map((bar) => bar.y)].sort((x, y) => x - y),
  );
  assert.equal(new Set(g.bars.map((bar) => bar.y)).size, 4);
  assert.deepEqual(g.bars.map((bar) => bar.kind), ["ok", "bad", "ok", "run"]);
  // a, b and d ran at once; c started as they ended.
  assert.equal(g.groups[0].maxConcurrent, 3);
  assert.deepEqual(g.groups[0].statuses, { completed: 2, failed: 1, running: 1 });
  // Ticks: 0 at the left, one readable step apart, within the axis.
  assert.equal(g.ticks[0].x, left);
  assert.equal(g.ticks[0].label, "0");
  assert.equal(g.ticks[1].label, "+200 ms");
  assert.ok(g.ticks.every((t) => t.x >= left && t.x <= right));
});

Deno.test("chart geometry: an open row runs to now; a row without a valid start is skipped", () => {
  const g = chartGeometry([
    { label: "done", start: at(0), end: at(1000), status: "completed" },
    { label: "still running", start: at(1000), status: "running" },
    { label: "no time", start: "yesterday", status: "completed" },
    { label: "ends before it starts", start: at(500), end: at(100), status: "completed" },
  ], { ...options, now: T0 + 4000 });
  assert.equal(g.t1, T0 + 4000);
  const open = g.bars.find((bar) => bar.row === 1)!;
  assert.equal(open.open, true);
  assert.equal(open.x + open.width, g.plot.right);
  assert.match(open.title, /still running — running — 3\.0 s so far, from \+1\.0 s/);
  assert.equal(g.skipped.invalid, 1);
  assert.equal(g.bars.length, 3);
  assert.equal(g.bars.find((bar) => bar.row === 3)!.width, MIN_BAR_WIDTH);
});

Deno.test("chart geometry: past the labelled rows, a group's rows pack into as many lanes as ran at once", () => {
  // Six children, at most two at once; then a straggler alone; tool calls of their own group.
  const rows: ChartRow[] = [
    { label: "item 1", start: at(0), end: at(100), status: "completed", group: "children" },
    { label: "item 2", start: at(0), end: at(50), status: "completed", group: "children" },
    { label: "item 3", start: at(50), end: at(100), status: "failed", group: "children" },
    { label: "item 4", start: at(100), end: at(150), status: "completed", group: "children" },
    { label: "item 5", start: at(100), end: at(150), status: "completed", group: "children" },
    { label: "item 6", start: at(150), end: at(1000), status: "completed", group: "children" },
    { label: "Read a", start: at(10), end: at(20), status: "completed", group: "tool calls" },
  ];
  const g = chartGeometry(rows, { ...options, limits: { labelledRows: 3 } });
  assert.equal(g.mode, "lanes");
  const children = g.groups.find((group) => group.name === "children")!;
  assert.deepEqual([children.lanes, children.maxConcurrent], [2, 2]);
  const lane = (row: number) => g.bars.find((bar) => bar.row === row)!.y;
  // First lane free at the start: 1 then 4 then 6 in one lane, 2, 3, 5 in the other.
  assert.equal(lane(0), lane(3));
  assert.equal(lane(3), lane(5));
  assert.equal(lane(1), lane(2));
  assert.equal(lane(2), lane(4));
  assert.notEqual(lane(0), lane(1));
  // The straggler is the long bar; the groups' lanes are apart, each labelled once.
  const widest = g.bars.reduce((a, b) => (b.width > a.width ? b : a));
  assert.equal(widest.row, 5);
  assert.ok(lane(6) > Math.max(lane(0), lane(1)));
  assert.deepEqual(g.lanes.map((l) => l.label), ["children (2 lanes)", undefined, "tool calls"]);
});

Deno.test("chart geometry: more bars than the bound are cells — bounded, every row counted, the worst status shown", () => {
  // 5,000 iterations one after another (one lane), the 4,000th failed.
  const rows: ChartRow[] = Array.from({ length: 5000 }, (_, i) => ({
    label: `#${i + 1}`,
    start: at(i * 10),
    end: at(i * 10 + 9),
    status: i === 3999 ? "failed" : "completed",
    link: `#row-${i}`,
  }));
  const g = chartGeometry(rows, options);
  assert.equal(g.mode, "cells");
  assert.ok(g.bars.length <= CHART_LIMITS.maxBars, `${g.bars.length} shapes`);
  // Every row is in a shape (a row across two shapes' border is in both).
  const held = g.bars.reduce((sum, bar) => sum + bar.count, 0);
  assert.ok(held >= 5000 && held <= 5000 + g.bars.length, `${held} rows held`);
  const failed = g.bars.filter((bar) => bar.kind === "bad");
  assert.equal(failed.length, 1);
  assert.match(failed[0].title, /\d+ rows \(\d+ completed, 1 failed\)/);
  // The cell holding the failure sits where the 4,000th row ran.
  const x = g.plot.left + (39990 / 49999) * (g.plot.right - g.plot.left);
  assert.ok(failed[0].x <= x && x <= failed[0].x + failed[0].width);
  // The rest merged into few shapes; a shape of several rows links nowhere.
  assert.ok(g.bars.length <= 3, `${g.bars.length} shapes`);
  assert.ok(g.bars.every((bar) => bar.count === 1 || bar.link === undefined));
});

Deno.test("chart geometry: lanes are bounded; what needs more is counted, not drawn", () => {
  // 1,000 children all at once: far more lanes than drawn.
  const rows: ChartRow[] = Array.from({ length: 1000 }, (_, i) => ({
    label: `item ${i}`,
    start: at(i % 7),
    end: at(1000 + i),
    status: "completed",
    group: "children",
  }));
  const g = chartGeometry(rows, options);
  assert.equal(g.groups[0].maxConcurrent, 1000);
  assert.equal(g.lanes.length, CHART_LIMITS.maxLanes);
  assert.equal(g.skipped.overLanes, 1000 - CHART_LIMITS.maxLanes);
  assert.ok(g.bars.length <= CHART_LIMITS.maxBars);
  assert.match(timelineChart(rows, options).toString(), /744 beyond the lanes drawn not shown/);
});

Deno.test("timeline chart: titled, described, each bar named, links kept, text escaped", () => {
  const svg = timelineChart([
    {
      label: `<script>alert(1)</script> a long label that goes on and on`,
      start: at(0),
      end: at(2000),
      status: "completed",
      link: "/runs/r1?x=<y>",
    },
    { label: "Bash rm", start: at(500), end: at(600), status: "denied", group: "tool calls" },
  ], { id: "run-chart", title: "Timing of run <r>" }).toString();
  assert.match(svg, /<figure class="chart" id="run-chart" data-mode="rows" data-bars="2">/);
  assert.match(svg, /aria-labelledby="run-chart-title run-chart-desc"/);
  assert.match(svg, /<title id="run-chart-title">Timing of run &lt;r&gt;<\/title>/);
  assert.match(
    svg,
    /<desc id="run-chart-desc">rows: 1 \(1 completed\), at most 1 at once; tool calls: 1 \(1 denied\), at most 1 at once — from 2026-11-20T10:00:00\.000Z over 2\.0 s\.<\/desc>/,
  );
  assert.ok(!svg.includes("<script>"));
  assert.match(
    svg,
    /<a href="\/runs\/r1\?x=&lt;y&gt;"><title>&lt;script&gt;alert\(1\)&lt;\/script&gt; a long label that goes on and on — completed — 2\.0 s, from \+0 ms<\/title><rect class="bar ok"/,
  );
  assert.match(
    svg,
    /<rect class="bar bad"[^>]*><title>Bash rm — denied — 100 ms, from \+500 ms<\/title>/,
  );
  // A long label is shortened, its whole text its tooltip.
  assert.match(
    svg,
    /<text x="4" y="[\d.]+"><title>&lt;script&gt;[^<]*<\/title>&lt;script&gt;alert\(1\)&lt;\/script&gt; a long …<\/text>/,
  );
  assert.match(
    svg,
    /<span class="swatch ok"><\/span>completed <span class="swatch bad"><\/span>denied/,
  );
  assert.equal(timelineChart([], options), "");
});

Deno.test("timeline chart: statuses, ticks", () => {
  assert.deepEqual(
    ["completed", "failed", "denied", "interrupted", "waiting", "waited", "running", "queued", "x"]
      .map(statusKind),
    ["ok", "bad", "bad", "warn", "wait", "wait", "run", "warn", "other"],
  );
  assert.deepEqual(ticksOf(1300), [0, 200, 400, 600, 800, 1000, 1200]);
  assert.deepEqual(ticksOf(3 * 60_000), [0, 30_000, 60_000, 90_000, 120_000, 150_000, 180_000]);
  assert.ok(ticksOf(40 * 86_400_000).length <= 8);
});
