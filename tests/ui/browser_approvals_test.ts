/**
 * Tool-plan approvals from the dashboard in a real browser (Debian chromium via playwright-core):
 * the real `run-plan --approvals dashboard` waits on two steps; the plan page shows both with
 * Approve and Deny, a click answers each, the run ends accordingly and the page shows the answers.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { listApprovals } from "../../src/plan/file_approver.ts";
import type { Plan } from "../../src/plan/types.ts";
import { serveDashboard } from "../../src/ui/server.ts";
import { chromiumInstalled, launchBrowser } from "./browser.ts";

const REPO = new URL("../../", import.meta.url).pathname;

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

Deno.test({
  name: "dashboard in chromium: Approve and Deny waiting tool-plan steps of a real run-plan",
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const root = await toolPlanProject();
    const planFile = join(root, "plans", "release.json");
    const runPlan = new Deno.Command(Deno.execPath(), {
      args: ["task", "-q", "run-plan", "plans/release.json", "--approvals", "dashboard"],
      cwd: REPO,
      env: { INIT_CWD: root, NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const result = runPlan.output();
    const ui = serveDashboard({ source: { cwd: root, stores: [] }, port: 0, actions: {} });
    await using browser = await launchBrowser();
    try {
      // The page is open before run-plan asks: the requests appear without a reload by hand
      // (the server tells the page when the plan's files change).
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${ui.url}plans/tool/release`);
      await page.locator('#approvals tr[data-state="waiting"]').nth(1).waitFor({
        timeout: 20_000,
      });
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
      await page.click('#approvals tr[data-approval="note"] button[data-action="approve"]');
      await page.waitForSelector('#approvals tr[data-approval="note"] [role=status].ok');
      assert.match(
        await page.locator('#approvals tr[data-approval="note"] [role=status]').innerText(),
        /approved: run-plan runs it now/,
      );
      // The page reloads after an answer; the other step is still waiting.
      await page.waitForSelector('#approvals tr[data-approval="note"][data-state="approved"]', {
        timeout: 10_000,
      });
      await page.click('#approvals tr[data-approval="constructor"] button[data-action="deny"]');
      await page.waitForSelector('#approvals tr[data-approval="constructor"] [role=status].ok');
      const out = await result;
      assert.equal(out.code, 3, new TextDecoder().decode(out.stderr)); // one step denied
      await page.goto(`${ui.url}plans/tool/release`);
      assert.match(
        await page.locator('#approvals tr[data-approval="note"]').innerText(),
        /approved\s+by dashboard/,
      );
      assert.match(
        await page.locator('#approvals tr[data-approval="constructor"]').innerText(),
        /denied\s+by dashboard/,
      );
      assert.equal(await page.locator("#approvals button").count(), 0);
      const saved: Plan = JSON.parse(await Deno.readTextFile(planFile));
      assert.deepEqual(saved.steps.map((s) => s.status), ["completed", "skipped"]);
      assert.equal(saved.steps[1].result?.error, "User denied approval (denied by dashboard)");
      assert.equal(
        await Deno.readTextFile(join(root, "NOTE.md")),
        "<script>window.__pwned = 1</script>",
      );
      assert.equal(await page.evaluate(() => "__pwned" in globalThis), false);
      // Answering again is refused with the request's state.
      const again = await fetch(
        `${ui.url}plans/tool/release/approvals/note/${requestId}/deny`,
        { method: "POST", headers: { "x-stepflow-csrf": secret } },
      );
      assert.equal(again.status, 409);
      const refused = await again.json();
      assert.equal(refused.code, "APPROVAL_NOT_WAITING");
      assert.match(refused.message, /its request was already approved/);
      assert.deepEqual(errors, []);
    } finally {
      await ui.close();
    }
  },
});
