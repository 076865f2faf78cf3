/**
 * The dashboard in a real browser (Debian chromium via playwright-core): real runs recorded by the
 * real runner into real stores, the real server on a free loopback port. Chromium is launched once
 * (a launch costs 1-2 s of CPU); every check opens its own browser context.
 *
 * - runs: the list, a run's path and timeline, a model's `<script>` and a 10 MB answer as text, a
 *   run followed live, a run of 1000 iterations opened whole;
 * - actions: Cancel a running run, then Redrive it through the real `run-agent` to completion;
 * - approvals: Approve and Deny the waiting steps of a real `run-plan --approvals dashboard`;
 * - agent steps: the parent's agent-step row opens the child run's timeline nested under it;
 * - PostgreSQL: the runs list and a run page over the PostgreSQL store.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { main as runPlanMain } from "../../src/cli/run_plan.ts";
import { listApprovals } from "../../src/plan/file_approver.ts";
import type { Plan } from "../../src/plan/types.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { runMain } from "../cli/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";
import {
  chromiumInstalled,
  launchBrowser,
  openTab,
  startDashboard,
  textOnceShown,
} from "./browser.ts";
import { releaseTrainRun } from "./release_train.ts";
import { demoProject, FINISH, holdAt, reachingCall, runFlow } from "./fixtures.ts";

const TEN_MB = 10 * 1024 * 1024;
const SCRIPT = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;
const badgeOf = (step: string) => `svg.graph .node[data-id="${step}"] .badge text`;

Deno.test({
  name: "dashboard in chromium: runs, actions, approvals, PostgreSQL (one browser)",
  // Outside CI a machine without chromium skips it; CI installs chromium (.ci/run) and must run it.
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  // Off so that the checks that mostly wait can run as concurrent steps.
  sanitizeResources: false,
  sanitizeOps: false,
  sanitizeExit: false,
  fn: async (t) => {
    // The runs of the first check are recorded while chromium starts (another process).
    const recorded = recordRuns();
    recorded.catch(() => {}); // awaited (and reported) by its check
    await using browser = await launchBrowser();
    await t.step(
      "runs: list, run, path, timeline, live run, injection, 1000 iterations",
      (t) => runsChecks(t, browser, recorded),
    );
    // These three mostly wait (page reloads, a run-agent process starting, run-plan polling for
    // answers), each with its own project, dashboard and browser context: they run together.
    await Promise.all([
      t.step(
        "actions: Cancel a running run, then Redrive it to completion",
        () => cancelThenRedrive(browser),
      ),
      t.step(
        "approvals: Approve and Deny waiting tool-plan steps of a real run-plan",
        () => approveAndDeny(browser),
      ),
      t.step(
        "agent step: the parent's row opens the child run's timeline nested under it",
        () => nestedChildRun(browser),
      ),
      t.step({
        name: "over PostgreSQL: the runs list and a run page",
        ignore: pg === undefined,
        fn: () => postgresRuns(browser),
      }),
    ]);
  },
});

/** A finished run, one with a hostile 10 MB handoff and one of 1000 iterations. */
async function recordRuns() {
  const project = await demoProject();
  const done = await runFlow(project, { runId: "r-done", continuations: 3 });
  assert.equal(done.success, true);
  const hostile = await runFlow(project, {
    runId: "r-hostile",
    issue: SCRIPT + "x".repeat(TEN_MB),
    continuations: 1,
  });
  assert.equal(hostile.success, true);
  await runFlow(project, { runId: "r-long", continuations: 998 });
  return project;
}

async function runsChecks(
  t: Deno.TestContext,
  browser: Browser,
  recorded: ReturnType<typeof recordRuns>,
) {
  const project = await recorded;
  await using ui = await startDashboard(project.root, { liveIntervalMs: 50 });
  await using tab = await openTab(browser);
  const { page } = tab;

  await t.step("the runs list opens, newest first, with usage", async () => {
    const response = await page.goto(ui.url);
    assert.equal(response?.status(), 200);
    assert.match(response!.headers()["content-security-policy"], /script-src 'self'/);
    const ids = await page.locator("#runs tbody tr").evaluateAll((rows) =>
      rows.map((r) => r.getAttribute("data-run"))
    );
    assert.deepEqual(ids, ["r-long", "r-hostile", "r-done"]);
    const row = page.locator('tr[data-run="r-done"]');
    assert.match(await row.innerText(), /issue-solver\s+completed/);
    assert.match(await row.innerText(), /6000 \/ 1550/); // 5 calls × (1200 / 310) tokens
    await page.selectOption('select[name="status"]', "running");
    await page.click('button[type="submit"]');
    assert.equal(await page.locator("#runs tbody tr").count(), 0);
  });

  await t.step("a run opens: its path is highlighted, the timeline and output shown", async () => {
    await page.goto(ui.url);
    await page.click('a[href="/runs/r-done"]');
    await page.waitForURL(/\/runs\/r-done$/);
    const taken = await page.locator("svg.graph .edge.taken").evaluateAll((edges) =>
      edges.map((e) => `${e.getAttribute("data-from")}>${e.getAttribute("data-to")}`)
    );
    assert.deepEqual(taken.sort(), [
      "#start>initial.issue",
      "complete.issue>#done",
      "continuation.issue>complete.issue",
      "continuation.issue>continuation.issue",
      "initial.issue>continuation.issue",
    ]);
    // Declared routes the run did not take are drawn, not highlighted.
    assert.ok(await page.locator("svg.graph .edge:not(.taken)").count() >= 2);
    assert.equal(await page.locator(badgeOf("continuation.issue")).textContent(), "3");
    const rows = page.locator("#timeline .row.iteration");
    assert.equal(await rows.count(), 5);
    assert.match(
      await rows.nth(1).innerText(),
      /continuation\.issue[\s\S]*next → continuation\.issue/,
    );
    await rows.nth(1).locator("details.handoff summary").click();
    assert.match(
      await rows.nth(1).locator('details.handoff[data-loaded="true"] pre').innerText(),
      /src\/file_1\.ts/,
    );
    assert.match(await page.locator("#final-output").innerText(), /Ended completed/);
  });

  await t.step("a model's <script> and a 10 MB answer render as text", async () => {
    const response = await page.goto(`${ui.url}runs/r-hostile`);
    assert.equal(response?.status(), 200);
    const first = page.locator("#timeline .row.iteration").first();
    await first.locator("details.handoff summary").click();
    const shown = await first.locator('details.handoff[data-loaded="true"] pre').innerText();
    // JSON escapes the quotes; the tags themselves are shown, not interpreted.
    assert.ok(
      shown.includes("<script>window.__pwned = 1</script><img src=x"),
      shown.slice(0, 200),
    );
    const note = first.locator("details.handoff .note");
    assert.match(await note.innerText(), /Showing 20000 of 10\d{6} characters/);
    const full = await fetch(new URL((await note.locator("a").getAttribute("href"))!, ui.url));
    assert.equal(full.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.ok((await full.text()).length > TEN_MB);
    assert.equal(
      await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned),
      undefined,
    );
    assert.deepEqual(
      await page.locator("script").evaluateAll((s) => s.map((e) => e.getAttribute("src"))),
      ["/assets/app.js"],
    );
    assert.equal(await page.locator("main img").count(), 0);
  });

  await t.step("a running run advances live (server-sent events, no reload)", async () => {
    // The run is held before its second model call until the page is open: mid-run for sure.
    using hold = holdAt(2);
    const live = runFlow(project, {
      runId: "r-live",
      continuations: 6,
      beforeAnswer: hold.beforeAnswer,
    });
    await hold.reached;
    const streams: string[] = [];
    const onRequest = (r: { url(): string }) => {
      if (r.url().includes("/events")) streams.push(r.url());
    };
    page.on("request", onRequest);
    await page.goto(`${ui.url}runs/r-live`);
    const navigations: string[] = [];
    page.on("framenavigated", (f) => navigations.push(f.url()));
    assert.equal(await page.locator("#live-badge").count(), 1);
    const before = await page.locator("#timeline .row.iteration").count();
    assert.ok(before < 8, `opened mid-run (${before} iterations)`);
    hold.release();
    await page.locator("#timeline .row.iteration").nth(before).waitFor();
    await page.waitForSelector("body[data-ended=true]", { timeout: 60_000 });
    assert.equal((await live).success, true);
    assert.equal(await page.locator("#timeline .row.iteration").count(), 8);
    assert.equal(await page.locator("#live-badge").count(), 0);
    assert.equal(await page.locator("#run-meta").getAttribute("data-status"), "completed");
    assert.equal(await page.locator(badgeOf("continuation.issue")).textContent(), "6");
    assert.deepEqual(navigations, [], "the page was never reloaded");
    assert.equal(streams.length, 1, "one event stream, never re-opened (no polling)");
    page.off("request", onRequest);
  });

  await t.step("a run of 1000 iterations opens whole, without page errors", async () => {
    // Its speed is measured by bench/ui_bench.ts ("run page, 1,000 iterations"), not by a timed
    // test: a time bound here failed whenever the machine was busy.
    await page.goto(`${ui.url}runs/r-long`, { waitUntil: "load" });
    assert.equal(await page.locator("#timeline .row.iteration").count(), 1000);
  });

  assert.deepEqual(tab.errors, []);
}

/** A release-train run: opening its agent step's child part shows the child's steps, linked. */
async function nestedChildRun(browser: Browser) {
  const { root, parentId, childId } = await releaseTrainRun();
  await using ui = await startDashboard(root);
  await using tab = await openTab(browser);
  const { page } = tab;
  await page.goto(`${ui.url}runs/${parentId}`);
  const agentRow = page.locator('#timeline .row.iteration[data-step="ship.train"]').last();
  assert.equal(await agentRow.locator(".child-timeline").count(), 0, "loaded on demand");
  await agentRow.locator("details.child summary").click();
  const nested = agentRow.locator('details.child[data-loaded="true"] .child-timeline');
  await nested.waitFor(); // (evaluateAll does not wait for the fetch)
  const steps = await nested.locator(".row.iteration").evaluateAll((rows) =>
    rows.map((r) => r.getAttribute("data-step"))
  );
  assert.deepEqual(steps, ["plan.release", "approve.release", "complete.release"]);
  await nested.locator(`.note a[href="/runs/${childId}"]`).click();
  await page.waitForURL(new RegExp(`/runs/${childId}$`));
  await page.locator(`a[href="/runs/${parentId}"]`).first().waitFor();
  assert.deepEqual(tab.errors, []);
}

/** Cancel a run the runner drives here, then Redrive it: the page starts the real `run-agent`. */
async function cancelThenRedrive(browser: Browser) {
  const project = await demoProject();
  await Deno.writeTextFile(join(project.root, "finish.json"), JSON.stringify(FINISH));
  const children: Deno.ChildProcess[] = [];
  await using ui = await startDashboard(project.root, {
    liveIntervalMs: 50,
    actions: { runAgentArgs: ["--script", "finish.json"], onSpawn: (c) => void children.push(c) },
  });
  // Its first model call hangs (until cancelled); the runner looks for cancel requests often.
  const started = reachingCall(1);
  const running = runFlow(project, {
    runId: "live",
    delayMs: 30_000,
    cancelPollMs: 25,
    beforeAnswer: started.beforeAnswer,
  });
  await started.reached;
  await using tab = await openTab(browser);
  const { page } = tab;
  await page.goto(`${ui.url}runs/live`);
  assert.equal(await page.locator("button[data-action]").count(), 1);
  const cancelled = await textOnceShown(page, "#action-result.ok");
  await page.click('button[data-action="cancel"]');
  assert.match(await cancelled(), /Cancel requested/);
  assert.equal((await running).completionReason, "cancelled");
  // The page reloads after an action: the cancelled run now offers Redrive.
  await page.waitForSelector('button[data-action="redrive"]', { timeout: 60_000 });
  assert.equal(await page.locator("#run-meta").getAttribute("data-status"), "cancelled");
  const redriven = await textOnceShown(page, "#action-result.ok");
  await page.click('button[data-action="redrive"]');
  assert.match(await redriven(), /redrive (started|finished)/);
  await page.waitForSelector('#run-meta[data-status="completed"]', { timeout: 60_000 });
  assert.equal((await children[0].status).code, 0);
  // The timeline followed the redriven run live: its redrive row and the closing step.
  const timeline = await page.locator("#timeline").innerText();
  assert.match(timeline, /redrive/i);
  assert.match(timeline, /complete\.issue/);
  assert.deepEqual(tab.errors, []);
}

async function toolPlanProject(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-approvals-" });
  await Deno.mkdir(join(root, "plans"));
  await Deno.writeTextFile(
    join(root, "plans", "release.json"),
    JSON.stringify({
      id: "plan_release",
      taskId: "task_release",
      version: 1,
      createdAt: "2025-01-01T00:00:00Z",
      steps: [
        {
          id: "note",
          description: "Write the release note",
          tool: "write_file",
          args: { path: "NOTE.md", content: "<script>window.__pwned = 1</script>" },
          requiresApproval: true,
        },
        {
          id: "constructor",
          description: "Write the changelog",
          tool: "write_file",
          args: { path: "CHANGELOG.md", content: "v2" },
          requiresApproval: true,
        },
      ],
    }),
  );
  return root;
}

/**
 * `run-plan --approvals dashboard` (in-process through its `main`; tests/plan covers the process)
 * waits on two steps; the plan page shows both, a click answers each, the run ends accordingly.
 */
async function approveAndDeny(browser: Browser) {
  const root = await toolPlanProject();
  const planFile = join(root, "plans", "release.json");
  const stop = new AbortController();
  const result = runMain(runPlanMain, ["plans/release.json", "--approvals", "dashboard"], {
    userDir: root,
    io: { signal: stop.signal },
  });
  await using ui = await startDashboard(root, { stores: [], actions: {} });
  try {
    // The page is open before run-plan asks: the requests appear without a reload by hand
    // (the server tells the page when the plan's files change).
    await using tab = await openTab(browser);
    const { page } = tab;
    // Only until the response arrives: the page reloads itself when run-plan's requests appear,
    // which may be before its load event.
    await page.goto(`${ui.url}plans/tool/release`, { waitUntil: "commit" });
    await page.locator('#approvals tr[data-state="waiting"]').nth(1).waitFor({ timeout: 60_000 });
    // Without the secret an answer is refused.
    const requestId = (await listApprovals(planFile)).records.get("note")!.requestId;
    const forged = await fetch(
      `${ui.url}plans/tool/release/approvals/note/${requestId}/approve`,
      { method: "POST" },
    );
    assert.equal(forged.status, 403);
    await forged.body?.cancel();

    assert.equal(await page.locator('#approvals tr[data-state="waiting"]').count(), 2);
    const secret = (await page.locator("#approvals [data-csrf]").first().getAttribute(
      "data-csrf",
    ))!;
    assert.match(
      await page.locator('#tool-steps tr[data-step="note"]').innerText(),
      /waiting for approval/,
    );
    // The arguments are shown as text, never as markup.
    assert.match(
      await page.locator('#approvals tr[data-approval="note"] pre').innerText(),
      /<script>window.__pwned = 1<\/script>/,
    );
    const approved = await textOnceShown(
      page,
      '#approvals tr[data-approval="note"] [role=status].ok',
    );
    await page.click('#approvals tr[data-approval="note"] button[data-action="approve"]');
    assert.match(await approved(), /approved: run-plan runs it now/);
    // The page reloads after an answer; the other step is still waiting. Once the approved step
    // shows completed, run-plan writes nothing until the next answer: no reload races the click.
    await page.waitForSelector('#approvals tr[data-approval="note"][data-state="approved"]', {
      timeout: 60_000,
    });
    await page.waitForSelector('#tool-steps tr[data-step="note"][data-status="completed"]', {
      timeout: 60_000,
    });
    assert.equal(
      await page.locator('#approvals tr[data-approval="constructor"]').getAttribute("data-state"),
      "waiting",
    );
    const denied = await textOnceShown(
      page,
      '#approvals tr[data-approval="constructor"] [role=status].ok',
    );
    await page.click('#approvals tr[data-approval="constructor"] button[data-action="deny"]');
    assert.match(await denied(), /denied: run-plan skips it/);
    const out = await result;
    assert.equal(out.code, 3, out.stderr); // one step denied
    // The end state in a tab of its own: the first one reloads itself after the answer, and a
    // navigation of ours could be cut short by it.
    await using end = await openTab(browser);
    await end.page.goto(`${ui.url}plans/tool/release`);
    assert.match(
      await end.page.locator('#approvals tr[data-approval="note"]').innerText(),
      /approved\s+by dashboard/,
    );
    assert.match(
      await end.page.locator('#approvals tr[data-approval="constructor"]').innerText(),
      /denied\s+by dashboard/,
    );
    assert.equal(await end.page.locator("#approvals button").count(), 0);
    const saved: Plan = JSON.parse(await Deno.readTextFile(planFile));
    assert.deepEqual(saved.steps.map((s) => s.status), ["completed", "skipped"]);
    assert.equal(saved.steps[1].result?.error, "User denied approval (denied by dashboard)");
    assert.equal(
      await Deno.readTextFile(join(root, "NOTE.md")),
      "<script>window.__pwned = 1</script>",
    );
    assert.equal(await end.page.evaluate(() => "__pwned" in globalThis), false);
    // Answering again is refused with the request's state.
    const again = await fetch(
      `${ui.url}plans/tool/release/approvals/note/${requestId}/deny`,
      { method: "POST", headers: { "x-stepflow-csrf": secret } },
    );
    assert.equal(again.status, 409);
    const refused = await again.json();
    assert.equal(refused.code, "APPROVAL_NOT_WAITING");
    assert.match(refused.message, /its request was already approved/);
    assert.deepEqual([...tab.errors, ...end.errors], []);
  } finally {
    // A failed check must not leave run-plan waiting for an answer.
    stop.abort();
    await result;
  }
}

/** The runs list and a run page over the PostgreSQL store. */
async function postgresRuns(browser: Browser) {
  const url = await freshDatabase(pg!);
  const project = await demoProject();
  const writer = new PostgresRunStore(url, { agent: "issue-solver", onWarning: () => {} });
  try {
    await runFlow({ ...project, store: writer }, { runId: "pg-done", continuations: 2 });
    await runFlow({ ...project, store: writer }, { runId: "pg-broken", failAt: 1 });
  } finally {
    await writer.close();
  }
  const stores = await discoverStores(project.root, url);
  try {
    await using ui = await startDashboard(project.root, { stores });
    await using tab = await openTab(browser);
    const { page } = tab;
    await page.goto(ui.url);
    const ids = await page.locator("#runs tbody tr").evaluateAll((rows) =>
      rows.map((r) => r.getAttribute("data-run"))
    );
    assert.deepEqual(ids.sort(), ["pg-broken", "pg-done"]);
    await page.selectOption('select[name="status"]', "failed");
    await page.click('button[type="submit"]');
    assert.deepEqual(
      await page.locator("#runs tbody tr").evaluateAll((rows) =>
        rows.map((r) => r.getAttribute("data-run"))
      ),
      ["pg-broken"],
    );
    await page.goto(ui.url);
    await page.click('a[href="/runs/pg-done"]');
    await page.waitForURL(/\/runs\/pg-done$/);
    const taken = await page.locator("svg.graph .edge.taken").count();
    assert.ok(taken >= 4, `the path is highlighted (${taken} edges)`);
    assert.equal(await page.locator("#timeline .row.iteration").count(), 4);
    assert.equal(await page.locator("#run-meta").getAttribute("data-status"), "completed");
    assert.deepEqual(tab.errors, []);
  } finally {
    await (stores[0].store as PostgresRunStore).close();
  }
}
