/**
 * `deno task screenshots`: regenerates the dashboard screenshots in docs/images/ from real runs
 * (the seed 004 agent and the tool-fixer example, scripted backend, real file store) in Debian's
 * chromium.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { launchBrowser, openTab, startDashboard } from "./browser.ts";
import { demoProject, runFlow } from "./fixtures.ts";
import { runTools, toolProject } from "./tool_runs.ts";

const OUT = fileURLToPath(new URL("../../docs/images/", import.meta.url));

const project = await demoProject();
await runFlow(project, { runId: "20261122T091500Z-4c1f2a", continuations: 2 });
await runFlow(project, { runId: "20261122T093000Z-9e02b7", continuations: 3, failAt: 3 });
await runFlow(project, { runId: "20261122T094500Z-17d3aa", continuations: 5 });
await runFlow(project, { runId: "20261122T100000Z-b5e610", continuations: 4 });
await using ui = await startDashboard(project.root);
await using browser = await launchBrowser();
await using tab = await openTab(browser);
const page = tab.page;
await Deno.mkdir(OUT, { recursive: true });

const shots: [string, string, (() => Promise<void>)?][] = [
  ["dashboard-runs.png", ""],
  ["dashboard-run.png", "runs/20261122T094500Z-17d3aa", async () => {
    const row = page.locator("#timeline .row.iteration").nth(2);
    await row.locator("details.handoff summary").click();
    await row.locator('details.handoff[data-loaded="true"]').waitFor();
  }],
  ["dashboard-agent.png", "agents/issue-solver"],
];
for (const [file, path, prepare] of shots) {
  await page.goto(ui.url + path);
  await prepare?.();
  await page.screenshot({ path: OUT + file, fullPage: true });
  console.log(`wrote docs/images/${file}`);
}

// A tool-using run: its second step's calls (one refused), the Edit opened.
const tools = await toolProject();
await runTools(tools, { runId: "20261122T110000Z-7a21c4" });
await using toolsUi = await startDashboard(tools.root);
await page.goto(`${toolsUi.url}runs/20261122T110000Z-7a21c4`);
const fix = page.locator('#timeline .row.iteration[data-step="s_f1e0"]');
await fix.locator('li.call[data-tool="Edit"] summary').click();
await fix.locator('li.call[data-tool="Edit"] details[data-loaded="true"]').waitFor();
await fix.screenshot({ path: OUT + "dashboard-tool-calls.png" });
console.log("wrote docs/images/dashboard-tool-calls.png");

// The same run's timing chart: its two steps and their calls, one refused.
await page.locator("#run-chart").screenshot({ path: OUT + "dashboard-timing.png" });
console.log("wrote docs/images/dashboard-timing.png");
