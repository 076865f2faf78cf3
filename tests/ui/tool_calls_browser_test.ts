/**
 * The tool calls of a running run in a real browser (Debian chromium via playwright-core): a real
 * run of the `tool-fixer` example agent, its scripted model held between two tool turns, the real
 * dashboard following it. The next calls appear in the step's row as they are logged — no reload —
 * a call the reader opened stays open while its row is redrawn, and the refused call is marked.
 */
import assert from "node:assert/strict";
import { chromiumInstalled, launchBrowser, openTab, startDashboard } from "./browser.ts";
import { holdAt } from "./fixtures.ts";
import { runTools, toolProject } from "./tool_runs.ts";

Deno.test({
  name: "dashboard in chromium: a running step's tool calls appear live in its row",
  // Outside CI a machine without chromium skips it; CI installs chromium (.ci/run) and must run it.
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const project = await toolProject();
    // Held before the model's second turn: the Write has run, the Grep is not asked for yet.
    using hold = holdAt(2);
    const run = runTools(project, { runId: "live-tools", beforeAnswer: hold.beforeAnswer });
    await using browser = await launchBrowser();
    await hold.reached;
    await using ui = await startDashboard(project.root, { liveIntervalMs: 50 });
    await using tab = await openTab(browser);
    const { page } = tab;
    await page.goto(`${ui.url}runs/live-tools`);
    const navigations: string[] = [];
    page.on("framenavigated", (f) => navigations.push(f.url()));
    const row = page.locator('#timeline .row.iteration[data-step="s_f1d0"]');
    assert.equal(await row.locator("li.call").count(), 1);
    const write = row.locator('li.call[data-tool="Write"]');
    assert.equal(await write.getAttribute("data-state"), "ok");

    // The reader opens the Write call: its arguments and result load.
    await write.locator("summary").click();
    const opened = write.locator('details[data-loaded="true"] .body');
    await opened.waitFor();
    assert.match(await opened.innerText(), /Created tmp\/tool-fixer-demo\/greet\.ts/);

    hold.release();
    await row.locator('li.call[data-tool="Grep"][data-state="ok"]').waitFor({ timeout: 60_000 });
    // Redrawn with the new call, the row kept the Write call open with what it had loaded.
    assert.equal(
      await write.locator("details").evaluate((d) => (d as { open: boolean }).open),
      true,
    );
    assert.match(
      await write.locator(".body").innerText(),
      /Created tmp\/tool-fixer-demo\/greet\.ts/,
    );

    await page.waitForSelector("body[data-ended=true]", { timeout: 60_000 });
    assert.equal((await run).completionReason, "completed");
    const fix = page.locator('#timeline .row.iteration[data-step="s_f1e0"]');
    const refused = fix.locator("li.call.denied");
    assert.equal(await refused.count(), 1);
    assert.match(await refused.innerText(), /Bash rm -rf|Bash \{"command":"rm -rf/);
    assert.match(await refused.innerText(), /refused by rule Bash\(rm:\*\)/);
    // Marked apart: its own background, unlike an allowed call's.
    const background = (locator: typeof refused) =>
      locator.evaluate((el) =>
        (globalThis as unknown as {
          getComputedStyle(e: unknown): { backgroundColor: string };
        }).getComputedStyle(el).backgroundColor
      );
    assert.notEqual(
      await background(refused),
      await background(fix.locator('li.call[data-tool="Edit"]')),
    );
    assert.deepEqual(navigations, [], "the page was never reloaded");
    assert.deepEqual(tab.errors, []);
  },
});
