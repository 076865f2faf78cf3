/**
 * A fan-out whose three children wait, answered one by one from the parent's page in Chromium:
 * each answer goes through the dashboard's one answer action (the real `stepflow answer RUN_ID
 * --request-id …`), is recorded in its own child run, and continues that child while the others
 * wait; the parent completes once the last child did. Checked on disk.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { fleetResponder, writeFleetAgents } from "../flow/fan_out_fixtures.ts";
import {
  chromiumInstalled,
  launchBrowser,
  openTab,
  startDashboard,
  textOnceShown,
} from "./browser.ts";

const FILES = ["src/f0.ts", "src/f1.ts", "src/f2.ts"];

/** What the answering `run-agent` processes are given: each closes its child's review, then the report. */
const SCRIPT = {
  "complete.file": FILES.map((path, i) => ({
    promptIncludes: `Close the review of ${path}`,
    // The first child answered takes a while: the next answer comes while it still runs.
    delayMs: i === 2 ? 1000 : 100,
    output: { verdict: `published ${path}`, next_action: { action: "complete" } },
  })),
  "complete.fleet": [{ output: { summary: "reported", next_action: { action: "complete" } } }],
};

Deno.test({
  name:
    "dashboard in chromium: three waiting fan-out children answered from the parent's page, each recorded in its child",
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const root = await Deno.makeTempDir({ prefix: "stepflow-ui-fanout-waits-" });
    await writeFleetAgents(root, { concurrency: 4 }, "confirm");
    await Deno.writeTextFile(join(root, "fleet.script.json"), JSON.stringify(SCRIPT));
    const definition = await loadAgentDefinition("fleet", { cwd: root });
    const store = runStoreFor(definition, { cwd: root });
    const first = await new StepFlowRunner(definition, {
      backend: new ScriptedBackend(fleetResponder({ files: FILES })),
      store,
    }).run();
    assert.equal(first.completionReason, "waiting");
    assert.equal(first.waits?.length, 3);
    const runId = first.runId;

    const children: Deno.ChildProcess[] = [];
    await using ui = await startDashboard(root, {
      actions: {
        runAgentArgs: ["--script", "fleet.script.json"],
        onSpawn: (c) => void children.push(c),
      },
    });
    await using browser = await launchBrowser();
    await using tab = await openTab(browser);
    const { page, errors } = tab;
    await page.goto(`${ui.url}runs/${runId}`);
    assert.equal(await page.locator("form.answer").count(), 3);
    assert.match(
      await page.locator("#fan-outs").innerText(),
      /0\/3 done · 0 running · 0 failed · 3 waiting/,
    );

    // The last item first, then the first, then the middle one: no child waits for another.
    for (const item of [2, 0, 1]) {
      const form = `#answer-form-item-${item}`;
      await page.waitForSelector(form, { timeout: 30_000 });
      await page.fill(`${form} input[data-kind=string]`, `from chromium ${item}`);
      const shown = await textOnceShown(page, `#answer-result-item-${item}.ok`, 30_000);
      await page.click(`${form} button[type="submit"]`);
      assert.match(await shown(), /answer recorded in its child run|answered|finished/);
      // The page reloads by itself; the answered child's form is gone, the others stay.
      await page.waitForSelector(form, { state: "detached", timeout: 30_000 });
    }
    await Promise.all(children.map((c) => c.status));

    // On disk: every child answered once, by the dashboard, with its own note; the parent done.
    let status = (await store.loadCheckpoint(runId))?.status;
    for (let i = 0; i < 150 && status !== "completed"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await store.loadCheckpoint(runId))?.status;
    }
    assert.equal(status, "completed");
    const reviewers = new FileRunStore(join(root, "tmp", "logs", "agents", "reviewer"));
    const [fanOut] = fanOutsOf(await store.readLog(runId));
    assert.equal(fanOut.items.size, 3);
    for (const [index, item] of fanOut.items) {
      assert.equal(item.children.length, 1, "no item got a second child");
      const child = item.children[0].childRunId;
      assert.equal((await reviewers.loadCheckpoint(child))?.status, "completed");
      const answers = (await reviewers.readLog(child)).filter((e) => e.type === "input_answer");
      assert.equal(answers.length, 1, `item ${index}: one answer`);
      assert.equal(answers[0].answeredBy, "dashboard");
      assert.deepEqual(answers[0].value, { decision: "next", note: `from chromium ${index}` });
    }
    const results = (await store.loadCheckpoint(runId))!.state.handoff as Record<
      string,
      { results?: { item: string; status: string }[] }
    >;
    assert.deepEqual(
      results["review.each"].results!.map((r) => `${r.item} ${r.status}`),
      FILES.map((f) => `${f} completed`),
    );
    // The parent's page, reloaded, shows every child done and no form.
    await page.goto(`${ui.url}runs/${runId}`);
    assert.match(await page.locator("#fan-outs").innerText(), /3\/3 done · 0 running · 0 failed/);
    assert.equal(await page.locator("form.answer").count(), 0);
    assert.deepEqual(errors, []);
  },
});
