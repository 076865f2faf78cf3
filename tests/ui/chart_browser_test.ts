/**
 * The runs list's layout and the run page's timing chart in a real browser (Debian chromium via
 * playwright-core), over real runs recorded by the real runner: a waiting run's badge stays a badge
 * with what it waits for on one unbroken line, run ids do not wrap; the chart draws a bar per
 * iteration and tool call, each bar a named link to its timeline row; a run followed live grows its
 * chart until it ends.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { ScriptedToolCall } from "../../src/llm/scripted.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { seed004Files, writeAgent } from "../flow/fixtures.ts";
import { releaseBackend, releaseFiles } from "../flow/input_fixtures.ts";
import { chromiumInstalled, launchBrowser, openTab, startDashboard } from "./browser.ts";
import { holdAt, runFlow } from "./fixtures.ts";
import { DEMO_SCRIPT, runTools, toolProject } from "./tool_runs.ts";

/**
 * One project: tool-fixer's finished run and one waiting for a Bash call's approval, a release
 * run waiting at its input step, and the issue-solver agent (finished runs, one in a group).
 */
async function project() {
  const tools = await toolProject();
  const root = tools.root;
  await runTools(tools, { runId: "20261122T100000Z-0a1b2c" });
  const agentFile = join(root, ".agent", "tool-fixer", "agent.json");
  const agent = JSON.parse(await Deno.readTextFile(agentFile));
  agent.behavior.permissionAsks = "wait";
  await Deno.writeTextFile(agentFile, JSON.stringify(agent));
  const asking = { ...tools, def: await loadAgentDefinition("tool-fixer", { cwd: root }) };
  const script = structuredClone(DEMO_SCRIPT);
  (script.s_f1e0[0] as { toolCalls: ScriptedToolCall[] }).toolCalls[1] = {
    name: "Bash",
    arguments: { command: "echo asked > tmp/tool-fixer-demo/out.txt" },
  };
  await runTools(asking, { runId: "20261122T110000Z-7a21c4", script });
  await writeAgent(root, "release", releaseFiles());
  const release = await loadAgentDefinition("release", { cwd: root });
  await new StepFlowRunner(release, {
    backend: releaseBackend(),
    store: runStoreFor(release, { cwd: root }),
  }).run({ args: { version: "3.0" }, cwd: root, runId: "20261122T111500Z-5d0e93" });
  const files = seed004Files();
  files.agent = { ...files.agent, limits: { maxTotalIterations: 5000 } };
  await writeAgent(root, "issue-solver", files);
  const def = await loadAgentDefinition("issue-solver", { cwd: root });
  const store = runStoreFor(def, { cwd: root, durability: "process" });
  const solver = { root, def, store };
  await runFlow(solver, { runId: "20261122T091500Z-4c1f2a", group: "eval-2026-11-22" });
  await runFlow(solver, { runId: "20261122T093000Z-9e02b7", continuations: 3, failAt: 3 });
  return solver;
}

/** The page's globals the checks read (the tests type-check without the DOM library). */
interface PageWindow {
  innerHeight: number;
  getComputedStyle(element: unknown): { paddingTop: string; marginTop: string };
  document: {
    documentElement: { scrollWidth: number; clientWidth: number };
    querySelectorAll(selector: string): { length: number };
  };
}

/** An element's rendered text. */
interface Shown {
  innerText: string;
}

/** Each element's client rectangles (an inline element broken over lines has several). */
function lines(page: Page, selector: string): Promise<number[]> {
  return page.locator(selector).evaluateAll((els) => els.map((el) => el.getClientRects().length));
}

Deno.test({
  name: "dashboard in chromium: the runs list's badges and ids, the run page's timing chart",
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    const solver = await project();
    await using ui = await startDashboard(solver.root, { liveIntervalMs: 50 });
    await using browser = await launchBrowser();
    await using tab = await openTab(browser);
    const { page } = tab;

    await t.step(
      "runs list: a waiting badge stays a badge, what it waits for one line under it, ids unbroken",
      async () => {
        await page.goto(ui.url);
        assert.equal(await page.locator("#runs tbody tr").count(), 5);
        assert.deepEqual(await lines(page, "#runs td.run > a:first-child"), [1, 1, 1, 1, 1]);
        const badges = await page.locator("#runs .status.waiting").evaluateAll((els) =>
          els.map((el) => {
            const style = (globalThis as unknown as PageWindow).getComputedStyle(el);
            return {
              height: el.getBoundingClientRect().height,
              padding: style.paddingTop,
              margin: style.marginTop,
            };
          })
        );
        assert.equal(badges.length, 2);
        for (const badge of badges) {
          assert.ok(badge.height < 24, `a badge, not a box: ${JSON.stringify(badge)}`);
          assert.deepEqual([badge.padding, badge.margin], ["1px", "0px"]);
        }
        // What it waits for: one line of its own under the badge, without a stray "·".
        assert.deepEqual(await lines(page, "#runs .waiting-for"), [1, 1]);
        const notes = await page.locator("#runs td.state").evaluateAll((cells) =>
          cells.filter((c) => c.querySelector(".waiting-for")).map((cell) => {
            const badge = cell.querySelector(".status")!.getBoundingClientRect();
            const note = cell.querySelector(".waiting-for")!;
            return {
              below: note.getBoundingClientRect().top >= badge.bottom - 1,
              text: (note as unknown as Shown).innerText,
            };
          })
        );
        assert.deepEqual(notes.map((n) => n.below), [true, true]);
        assert.deepEqual(notes.map((n) => n.text).sort(), [
          "answer approve.release",
          "approve Bash",
        ]);
        // The list fits a 1280 px window: nothing hidden behind a scroll bar.
        const fits = await page.locator(".table-scroll").evaluate((el) =>
          el.scrollWidth <= el.clientWidth
        );
        assert.ok(fits, "the runs table fits the window");
        assert.deepEqual(tab.errors, []);
      },
    );

    await t.step("run page header: the badge and what it waits for on one line", async () => {
      await page.goto(`${ui.url}runs/20261122T110000Z-7a21c4`);
      const header = await page.locator("#run-meta").evaluate((meta) => {
        const badge = meta.querySelector(".status")!.getBoundingClientRect();
        const note = meta.querySelector(".waiting-for")!;
        const box = note.getBoundingClientRect();
        return {
          rects: note.getClientRects().length,
          sameLine: Math.abs(box.top + box.height / 2 - (badge.top + badge.height / 2)) < 4,
          text: (note as unknown as Shown).innerText,
          badge: badge.height,
        };
      });
      assert.deepEqual(header, {
        rects: 1,
        sameLine: true,
        text: "· approve Bash",
        badge: header.badge,
      });
      assert.ok(header.badge < 24);
    });

    await t.step(
      "run page: the timing chart, a bar per iteration and call, each a link to its row",
      async () => {
        await page.goto(`${ui.url}runs/20261122T100000Z-0a1b2c`);
        const chart = page.locator("#run-chart");
        assert.equal(await chart.getAttribute("data-mode"), "rows");
        const boxes = await chart.locator("rect.bar").evaluateAll((rects) =>
          rects.map((r) => {
            const box = r.getBoundingClientRect();
            return { x: box.x, width: box.width, title: r.parentElement!.textContent ?? "" };
          })
        );
        assert.equal(boxes.length, 9);
        const svg = (await chart.locator("svg").boundingBox())!;
        for (const box of boxes) {
          assert.ok(box.width >= 1.5, `${box.title} is drawn`);
          assert.ok(box.x >= svg.x && box.x + box.width <= svg.x + svg.width + 0.5);
        }
        const steps = boxes.filter((b) => b.title.startsWith("#"));
        assert.ok(steps[1].x >= steps[0].x + steps[0].width - 1, "the second step after the first");
        // The chart fits the page at 1280 px.
        const page1280 = await page.evaluate(() => {
          const root = (globalThis as unknown as PageWindow).document.documentElement;
          return root.scrollWidth <= root.clientWidth;
        });
        assert.ok(page1280, "no horizontal scroll");
        // A bar is a link named by its title; it leads to its row of the timeline.
        const link = page.getByRole("link", { name: /^#2 s_f1e0 — completed — / });
        await link.click();
        await page.waitForFunction(() => location.hash.startsWith("#row-"));
        const hash = await page.evaluate(() => location.hash);
        const row = page.locator(hash);
        assert.equal(await row.getAttribute("data-step"), "s_f1e0");
        const inView = await row.evaluate((el) => {
          const box = el.getBoundingClientRect();
          return box.top < (globalThis as unknown as PageWindow).innerHeight && box.bottom > 0;
        });
        assert.ok(inView, "the row is scrolled into view");
        assert.ok(
          await page.getByRole("link", { name: /^Bash rm -rf tmp\/tool-fixer-demo — denied/ })
            .count() === 1,
        );
        assert.deepEqual(tab.errors, []);
      },
    );

    await t.step(
      "a run followed live grows its chart, the running bar open, until it ends",
      async () => {
        using hold = holdAt(2);
        const live = runFlow(solver, {
          runId: "20261122T120000Z-live01",
          continuations: 4,
          beforeAnswer: hold.beforeAnswer,
        });
        await hold.reached;
        await page.goto(`${ui.url}runs/20261122T120000Z-live01`);
        const bars = page.locator("#run-chart rect.bar");
        assert.equal(await bars.count(), 2);
        assert.equal(await page.locator("#run-chart rect.bar.open.run").count(), 1);
        hold.release();
        await page.waitForSelector("body[data-ended=true]", { timeout: 60_000 });
        assert.equal((await live).success, true);
        // 1 + 4 continuations + the closing step, all ended: none open.
        await page.waitForFunction(() =>
          (globalThis as unknown as PageWindow).document.querySelectorAll("#run-chart rect.bar")
            .length === 6
        );
        assert.equal(await page.locator("#run-chart rect.bar.open").count(), 0);
        assert.equal(await page.locator("#run-chart rect.bar.ok").count(), 6);
        assert.deepEqual(tab.errors, []);
      },
    );
  },
});
