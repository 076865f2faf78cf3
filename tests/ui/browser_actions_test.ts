/**
 * The dashboard's actions in a real browser (Debian chromium via playwright-core): Cancel a run
 * the real runner drives, then Redrive it — the page starts the real `run-agent` with a scripted
 * backend and follows the run live to its end.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { serveDashboard } from "../../src/ui/server.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { chromiumInstalled, launchBrowser } from "./browser.ts";
import { demoProject, FINISH, runFlow } from "./fixtures.ts";

Deno.test({
  name: "dashboard in chromium: Cancel a running run, then Redrive it to completion",
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const project = await demoProject();
    await Deno.writeTextFile(join(project.root, "finish.json"), JSON.stringify(FINISH));
    const children: Deno.ChildProcess[] = [];
    const ui = serveDashboard({
      source: { cwd: project.root, stores: await discoverStores(project.root) },
      port: 0,
      liveIntervalMs: 50,
      actions: { runAgentArgs: ["--script", "finish.json"], onSpawn: (c) => void children.push(c) },
    });
    await using browser = await launchBrowser();
    try {
      const running = runFlow(project, { runId: "live", delayMs: 30_000 });
      const deadline = Date.now() + 10_000;
      while (!(await project.store.list()).some((r) => r.runId === "live" && r.live)) {
        assert.ok(Date.now() < deadline, "the run did not start");
        await new Promise((r) => setTimeout(r, 25));
      }
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${ui.url}runs/live`);
      assert.equal(await page.locator("button[data-action]").count(), 1);
      await page.click('button[data-action="cancel"]');
      await page.waitForSelector("#action-result.ok");
      assert.match(await page.locator("#action-result").innerText(), /Cancel requested/);
      assert.equal((await running).completionReason, "cancelled");
      // The page reloads after an action: the cancelled run now offers Redrive.
      await page.waitForSelector('button[data-action="redrive"]', { timeout: 10_000 });
      assert.equal(
        await page.locator("#run-meta").getAttribute("data-status"),
        "cancelled",
      );
      await page.click('button[data-action="redrive"]');
      await page.waitForSelector("#action-result.ok", { timeout: 20_000 });
      await page.waitForSelector('#run-meta[data-status="completed"]', { timeout: 20_000 });
      assert.equal((await children[0].status).code, 0);
      // The timeline followed the redriven run live: its redrive row and the closing step.
      const timeline = await page.locator("#timeline").innerText();
      assert.match(timeline, /redrive/i);
      assert.match(timeline, /complete\.issue/);
      assert.deepEqual(errors, []);
    } finally {
      await ui.close();
    }
  },
});
