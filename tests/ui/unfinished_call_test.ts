/**
 * The run page of a run killed inside a non-idempotent tool call (a real `run-agent`, SIGKILLed
 * while its Bash command ran): before any click it says a resume would stop there, which call
 * (tool and command) and what to check; the plain Resume is refused with the runner's words
 * (TOOL_CALL_UNFINISHED) and starts nothing; a re-run needs a confirmation naming the calls shown;
 * "Resume, re-running Bash …" clicked in chromium (confirm step, the page's CSRF secret) runs
 * `run-agent --resume RUN --rerun-unfinished-call` and the run completes with the call run again.
 */
import assert from "node:assert/strict";
import { serveDashboard } from "../../src/ui/server.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { escapeHtml } from "../../src/ui/html.ts";
import { chromiumInstalled, launchBrowser, openTab, textOnceShown } from "./browser.ts";
import { BASH_COMMAND, killedInBash, SCRIPT_FILE } from "./killed_in_bash.ts";

Deno.test({
  name:
    "dashboard: a run killed in a Bash call says Resume would stop, refuses the plain Resume, and re-runs the call once confirmed",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const run = await killedInBash();
    const children: Deno.ChildProcess[] = [];
    const stores = await discoverStores(run.root);
    const readOnly = serveDashboard({ source: { cwd: run.root, stores }, port: 0 });
    const ui = serveDashboard({
      source: { cwd: run.root, stores },
      port: 0,
      actions: { runAgentArgs: ["--script", SCRIPT_FILE], onSpawn: (c) => void children.push(c) },
    });
    try {
      // Read-only: the notice, and the command that re-runs the call.
      const plain = await (await fetch(`${readOnly.url}runs/${run.runId}`)).text();
      const notice = plain.match(/<div id="unfinished-call"[^]*?<\/div>/)?.[0] ?? "";
      assert.match(notice, /Resume would stop here/);
      assert.match(notice, /in step\s+<code>s_b2c1<\/code>/);
      assert.ok(notice.includes(`<code>Bash ${escapeHtml(BASH_COMMAND)}</code>`), notice);
      assert.match(notice, /— check whether the command ran already/);
      assert.match(
        notice,
        new RegExp(` resume ${run.runId} --rerun-unfinished-call</code>`),
      );
      assert.doesNotMatch(plain, /data-action=/);

      // With actions: the re-run behind its confirm step, and the plain Resume.
      const page = await (await fetch(`${ui.url}runs/${run.runId}`)).text();
      assert.match(
        page,
        /<button type="button" data-arm="rerun-confirm">Resume, re-running Bash echo/,
      );
      assert.match(page, /<span id="rerun-confirm" class="confirm" hidden>/);
      assert.match(page, /data-action="resume">Resume</);
      const callId = (await run.store.readLog(run.runId)).find((e) => e.type === "tool_call_start")
        ?.callId;
      assert.ok(
        page.includes(`data-body="${escapeHtml(JSON.stringify({ calls: [callId] }))}"`),
        "the confirmation names the call shown",
      );
      const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
      const post = async (action: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(`${ui.url}runs/${run.runId}/${action}`, {
          method: "POST",
          headers: { "x-stepflow-csrf": secret, origin: new URL(ui.url).origin, ...headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        return { status: res.status, json: res.status === 403 ? { text } : JSON.parse(text) };
      };
      const resume = await post("resume");
      assert.equal(resume.status, 409);
      assert.equal(resume.json.code, "TOOL_CALL_UNFINISHED");
      assert.match(resume.json.message, /while the tool call Bash \(echo done >> out\.txt/);
      assert.match(resume.json.message, /resume the run with the unfinished call re-run anyway/);
      const stale = await post("rerun", { calls: ["another-call"] });
      assert.equal(stale.json.code, "UI_ACTION_REFUSED");
      assert.match(stale.json.message, /other unfinished calls than the ones confirmed/);
      assert.match((await post("rerun", {})).json.message, /names the calls it confirms/);
      const foreign = await post("rerun", { calls: [callId] }, { origin: "http://evil.example" });
      assert.equal(foreign.status, 403);
      assert.equal(children.length, 0, "nothing started");
      assert.equal(await run.bashRuns(), 1);

      if (chromiumInstalled()) {
        await using browser = await launchBrowser();
        await using tab = await openTab(browser);
        await tab.page.goto(`${ui.url}runs/${run.runId}`);
        const confirm = tab.page.locator("#rerun-confirm");
        assert.equal(await confirm.isVisible(), false);
        await tab.page.getByRole("button", { name: /^Resume, re-running Bash echo/ }).click();
        assert.equal(await confirm.isVisible(), true);
        assert.match(await confirm.innerText(), /Run Bash echo done >> out\.txt .* again\?/);
        const result = await textOnceShown(tab.page, "#action-result.ok");
        await confirm.getByRole("button", { name: "Yes, re-run and resume" }).click();
        assert.match(await result(), /resume started, re-running the unfinished call/);
        assert.deepEqual(tab.errors, []);
      } else {
        // Without chromium (outside CI), the request the button sends.
        const rerun = await post("rerun", { calls: [callId] });
        assert.equal(rerun.status, 202, rerun.json.message);
      }
      assert.equal(children.length, 1);
      assert.equal((await children[0].status).code, 0);
      assert.equal((await run.store.loadCheckpoint(run.runId))?.status, "completed");
      assert.equal(await run.bashRuns(), 2, "the call ran again, as confirmed");
      const after = await (await fetch(`${ui.url}runs/${run.runId}`)).text();
      assert.doesNotMatch(after, /unfinished-call|data-arm=/);
    } finally {
      await readOnly.close();
      await ui.close();
      for (const c of children) await c.status;
      await Deno.remove(run.root, { recursive: true });
    }
  },
});
