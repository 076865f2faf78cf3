/**
 * A waiting run on the dashboard: listed `waiting`, its question shown, and under
 * `--allow-actions` a form generated from the step's schema whose answer (POST /runs/ID/answer,
 * same secret and Origin rules as every action) is recorded by the real `run-agent --answer` and
 * continues the run — over HTTP, and filled in by hand in Chromium.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { releaseBackend, releaseFiles } from "../flow/input_fixtures.ts";
import {
  chromiumInstalled,
  launchBrowser,
  openTab,
  startDashboard,
  textOnceShown,
} from "./browser.ts";

const SCRIPT = {
  "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
};

/** A project whose release run waits at approve.release. */
async function waitingRun() {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-input-" });
  await writeAgent(root, "release", releaseFiles());
  await Deno.writeTextFile(join(root, "release.script.json"), JSON.stringify(SCRIPT));
  const definition = await loadAgentDefinition("release", { cwd: root });
  const store = runStoreFor(definition, { cwd: root });
  const result = await new StepFlowRunner(definition, { backend: releaseBackend(), store }).run({
    args: { version: "3.0" },
    cwd: root,
  });
  assert.equal(result.completionReason, "waiting");
  return { root, store, runId: result.runId, requestId: result.waiting!.requestId };
}

Deno.test("dashboard: a waiting run's answer is refused without the secret, checked, recorded once, and continues the run", async () => {
  const { root, store, runId, requestId } = await waitingRun();
  const children: Deno.ChildProcess[] = [];
  await using ui = await startDashboard(root, {
    actions: {
      runAgentArgs: ["--script", "release.script.json"],
      onSpawn: (c) => void children.push(c),
    },
  });
  const list = await (await fetch(`${ui.url}?status=waiting`)).text();
  assert.match(list, new RegExp(`data-run="${runId}"`));
  assert.match(list, /<span class="status waiting">waiting<\/span>/);
  // Waiting for an answer, not for a tool call's approval.
  assert.match(
    list,
    /<span class="waiting-for input"[^>]*><span class="sep">· <\/span>answer <code>approve\.release<\/code>/,
  );

  const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
  assert.match(page, /Waiting for an answer at <code>approve\.release<\/code>/);
  assert.match(page, /Ship 3\.0\? The plan: tag, build, publish/);
  assert.match(page, new RegExp(`id="answer-form"[^>]*data-request="${requestId}"`));
  assert.match(page, /<option value="&quot;next&quot;">next<\/option>/);
  assert.doesNotMatch(page, /data-action=/, "a waiting run is answered, not resumed or redriven");
  const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
  const origin = new URL(ui.url).origin;
  const post = async (body: unknown, headers: Record<string, string>) => {
    const res = await fetch(`${ui.url}runs/${runId}/answer`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, json: text.startsWith("{") ? JSON.parse(text) : {} };
  };
  const ok = { "x-stepflow-csrf": secret, origin };
  const logBefore = (await store.readLog(runId)).length;

  assert.equal((await post({ requestId, value: { decision: "next" } }, {})).status, 403);
  assert.equal(
    (await post({ requestId, value: { decision: "next" } }, { ...ok, origin: "http://evil" }))
      .status,
    403,
  );
  assert.equal((await post("{not json", ok)).status, 400);
  assert.equal((await post({ value: {} }, ok)).status, 400);
  const cancel = await fetch(`${ui.url}runs/${runId}/cancel`, { method: "POST", headers: ok });
  assert.equal(cancel.status, 409);
  assert.match((await cancel.json()).message, /waits for an answer at an input step/);
  const stale = await post({ requestId: "old", value: { decision: "next" } }, ok);
  assert.equal(stale.status, 409);
  assert.equal(stale.json.code, "INPUT_NOT_WAITING");
  const bad = await post({ requestId, value: { decision: "ship" } }, ok);
  assert.equal(bad.status, 409, bad.text);
  assert.match(bad.json.message, /allowed values/);
  await Promise.all(children.map((c) => c.status));
  assert.equal((await store.readLog(runId)).length, logBefore, "a refused answer records nothing");

  const good = await post({ requestId, value: { decision: "next", note: "from the web" } }, ok);
  assert.ok(good.status === 202 || good.status === 200, good.text);
  assert.equal((await children.at(-1)!.status).code, 0);
  assert.equal((await store.loadCheckpoint(runId))?.status, "completed");
  const answers = (await store.readLog(runId)).filter((e) => e.type === "input_answer");
  assert.equal(answers.length, 1);
  assert.equal(answers[0].answeredBy, "dashboard");
  assert.deepEqual(answers[0].value, { decision: "next", note: "from the web" });

  const again = await post({ requestId, value: { decision: "next" } }, ok);
  assert.equal(again.status, 409);
  assert.equal(again.json.code, "INPUT_NOT_WAITING");
});

Deno.test("dashboard without --allow-actions: the question is shown, with the command that answers it, and no form", async () => {
  const { root, runId } = await waitingRun();
  await using ui = await startDashboard(root);
  const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
  assert.match(page, /Ship 3\.0\? The plan/);
  assert.doesNotMatch(page, /answer-form|data-csrf/);
  assert.match(
    page,
    new RegExp(` answer ${runId} --value &#39;\\{&quot;decision&quot;:&quot;next&quot;\\}&#39;<`),
  );
});

Deno.test({
  name: "dashboard in chromium: a person fills in the generated form and the run completes",
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const { root, store, runId } = await waitingRun();
    const children: Deno.ChildProcess[] = [];
    await using ui = await startDashboard(root, {
      actions: {
        runAgentArgs: ["--script", "release.script.json"],
        onSpawn: (c) => void children.push(c),
      },
    });
    await using browser = await launchBrowser();
    await using tab = await openTab(browser);
    const { page, errors } = tab;
    await page.goto(`${ui.url}runs/${runId}`);
    assert.match(await page.locator("#waiting-question").innerText(), /Ship 3\.0\?/);
    await page.selectOption("#answer-form select[data-kind=choice]", { label: "next" });
    await page.fill("#answer-form input[data-kind=string]", "clicked in chromium");
    const shown = await textOnceShown(page, "#answer-result.ok");
    await page.click('#answer-form button[type="submit"]');
    assert.match(await shown(), /answer recorded|finished/);
    await Promise.all(children.map((c) => c.status));
    assert.equal((await store.loadCheckpoint(runId))?.status, "completed");
    const answer = (await store.readLog(runId)).find((e) => e.type === "input_answer")!;
    assert.deepEqual(answer.value, { decision: "next", note: "clicked in chromium" });
    // After the page's reload the run shows completed, with no form any more.
    await page.waitForSelector('#run-meta[data-status="completed"]', { timeout: 60_000 });
    assert.equal(await page.locator("#answer-form").count(), 0);
    assert.deepEqual(errors, []);
  },
});

Deno.test("dashboard live view: a run followed live that reaches an input step tells the page to reload", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-input-live-" });
  await writeAgent(root, "release", releaseFiles());
  const definition = await loadAgentDefinition("release", { cwd: root });
  const store = runStoreFor(definition, { cwd: root });
  await using ui = await startDashboard(root);
  const gate = Promise.withResolvers<void>();
  const backend = releaseBackend();
  const slow = {
    name: backend.name,
    complete: async (...args: Parameters<typeof backend.complete>) => {
      await gate.promise; // the page opens while the first step is in flight
      return backend.complete(...args);
    },
  };
  const running = new StepFlowRunner(definition, { backend: slow, store }).run({
    args: { version: "4" },
    runId: "live-wait",
    cwd: root,
  });
  while (!(await store.loadCheckpoint("live-wait").catch(() => undefined))) {
    await new Promise((r) => setTimeout(r, 10));
  }
  const page = await (await fetch(`${ui.url}runs/live-wait`)).text();
  const live = page.match(/data-live="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
  assert.ok(live, "a running run is followed live");
  const events = await fetch(new URL(live, ui.url));
  const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
  gate.resolve();
  assert.equal((await running).completionReason, "waiting");
  let text = "";
  while (!text.includes("event: waiting")) {
    const chunk = await reader.read();
    if (chunk.done) break;
    text += chunk.value;
  }
  await reader.cancel();
  assert.match(text, /event: waiting/);
});
