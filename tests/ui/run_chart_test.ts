/**
 * The run page's timing chart over real runs: a tool-using run (a bar per iteration, its tool calls
 * inside it, a refused call red, each linking its timeline row), an agent step's child run (linking
 * the child's page; the iteration that waited for it purple), and the nested child timeline's own
 * chart. Real runs by the real runner into real file stores, the page over HTTP.
 */
import assert from "node:assert/strict";
import { startDashboard } from "./browser.ts";
import { releaseTrainRun } from "./release_train.ts";
import { runTools, toolProject } from "./tool_runs.ts";
import { chartBars } from "./chart_bars.ts";

Deno.test("run page chart: a bar per iteration with its tool calls inside it, each linking its timeline row", async () => {
  const project = await toolProject();
  await runTools(project, { runId: "tools-1" });
  await using ui = await startDashboard(project.root);
  const page = await (await fetch(`${ui.url}runs/tools-1`)).text();
  assert.match(
    page,
    /<h2>Timing<\/h2>\s*<div id="chart-host"><figure class="chart" id="run-chart" data-mode="rows"/,
  );
  const bars = chartBars(page);
  const steps = bars.filter((b) => /^#\d/.test(b.title));
  const calls = bars.filter((b) => !/^#\d/.test(b.title));
  assert.deepEqual(steps.map((b) => b.title.split(" — ")[0]), ["#1 s_f1d0", "#2 s_f1e0"]);
  assert.equal(calls.length, 7);
  // Each bar links its iteration's row of the timeline, which the page has.
  for (const b of bars) {
    assert.match(b.link ?? "", /^#row-\d+$/);
    assert.ok(page.includes(`id="${b.link!.slice(1)}"`), `${b.link} is a row of the page`);
  }
  // The steps ran one after the other; each call within its step's bar.
  assert.ok(steps[1].x >= steps[0].x + steps[0].width - 0.5);
  for (const call of calls) {
    const step = steps.find((s) => s.link === call.link)!;
    assert.ok(
      call.x >= step.x - 0.5 && call.x + call.width <= step.x + step.width + 2.5,
      call.title,
    );
  }
  // The refused `rm` is red; the calls name what they act on.
  const refused = calls.find((b) => b.title.startsWith("Bash rm -rf"))!;
  assert.match(refused.classes, /^bad/);
  assert.match(refused.title, /— denied —/);
  assert.ok(calls.some((b) => b.title.startsWith("Edit tmp/tool-fixer-demo/greet.ts — completed")));
  assert.match(
    page,
    /<desc id="run-chart-desc">steps: 2 \(2 completed\), at most 1 at once; tool calls: 7 \(6 completed, 1 denied\)/,
  );
});

Deno.test("run page chart: an agent step's child run links the child's page; the iteration that waited for it is marked", async () => {
  const train = await releaseTrainRun();
  await using ui = await startDashboard(train.root);
  const page = await (await fetch(`${ui.url}runs/${train.parentId}`)).text();
  const bars = chartBars(page);
  const children = bars.filter((b) => b.title.startsWith("child run"));
  assert.deepEqual(children.map((b) => b.link), [
    `/runs/${train.childId}`,
    `/runs/${train.childId}`,
  ]);
  assert.deepEqual(children.map((b) => b.title.split(" — ")[1]), ["waited", "completed"]);
  const ship = bars.filter((b) => b.title.startsWith("#2 ship.train"));
  assert.deepEqual(ship.map((b) => b.classes), ["wait", "ok"]);
  // The child's bar is its step's span: it starts with the child and ends with the step.
  assert.ok(children[1].x >= ship[1].x - 0.5);
  // The nested child timeline draws the child's own chart.
  const row = /data-src="(\/runs\/[^"]+\/rows\/\d+\/child)"/.exec(page)![1];
  const nested = await (await fetch(new URL(row, ui.url))).text();
  const own = chartBars(nested, `chart-${train.childId}`);
  assert.ok(own.length >= 2, nested);
  assert.ok(own.every((b) => b.link?.startsWith(`/runs/${train.childId}#row-`)));
});
