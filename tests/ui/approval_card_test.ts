/**
 * A run whose tool call waits for permission (`behavior.permissionAsks: "wait"`) on the dashboard:
 * listed as waiting for approval, its page an approval card (step, tool, target, the full
 * arguments escaped and cut, why it asks, the rule that would allow it) — with the two
 * `run-agent --answer` commands, or under `--allow-actions` Approve and Deny, answered through the
 * one answer action by the real `run-agent --answer`. The runs are real: the `tool-fixer` example
 * agent driven by the real runner with a scripted model whose Bash call asks (acceptEdits).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { ScriptedScript, ScriptedToolCall } from "../../src/llm/scripted.ts";
import { APPROVAL_ARGS_LIMIT } from "../../src/ui/approval_card.ts";
import {
  chromiumInstalled,
  launchBrowser,
  openTab,
  startDashboard,
  textOnceShown,
} from "./browser.ts";
import { DEMO_SCRIPT, runTools, toolProject } from "./tool_runs.ts";

/** What the asking call writes: model text with markup in it (the page must escape it). */
const COMMAND = "echo '<b>approved</b>' > tmp/tool-fixer-demo/out.txt";

/** The demo's script, its fix step's `rm` swapped for a Bash call no rule allows: it asks. */
function script(command: string): ScriptedScript {
  const copy = structuredClone(DEMO_SCRIPT);
  const turn = copy.s_f1e0[0] as { toolCalls: ScriptedToolCall[] };
  turn.toolCalls[1] = {
    name: "Bash",
    id: "c_ask",
    arguments: { command, description: "write <script>x</script>" },
  };
  return copy;
}

/** A tool-fixer project whose run waits for Approve/Deny of its Bash call. */
async function waitingForApproval(runId: string, command = COMMAND) {
  const project = await toolProject();
  const agentFile = join(project.root, ".agent", "tool-fixer", "agent.json");
  const agent = JSON.parse(await Deno.readTextFile(agentFile));
  agent.behavior.permissionAsks = "wait";
  await Deno.writeTextFile(agentFile, JSON.stringify(agent));
  project.def = await loadAgentDefinition("tool-fixer", { cwd: project.root });
  const steps = script(command);
  // The answering `run-agent` takes the model's next turns from the same script.
  await Deno.writeTextFile(join(project.root, "approval.script.json"), JSON.stringify(steps));
  const result = await runTools(project, { runId, script: steps });
  assert.equal(result.completionReason, "waiting");
  return { ...project, runId, requestId: result.waiting!.requestId };
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

Deno.test("dashboard: a run waiting for a tool's permission is listed as such and shows its approval card", async () => {
  const long = `${COMMAND} # ${"y".repeat(APPROVAL_ARGS_LIMIT)}`;
  const { root, runId, requestId } = await waitingForApproval("ask-1", long);
  {
    await using ui = await startDashboard(root);
    const list = await (await fetch(`${ui.url}?status=waiting`)).text();
    assert.match(
      list,
      /<span class="status waiting">waiting<\/span> <span class="waiting-for approval"[^>]*><span class="sep">· <\/span>approve <code>Bash<\/code>/,
    );
    const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
    assert.match(
      page,
      /<span class="status waiting">waiting<\/span> <span class="waiting-for approval"/,
    );
    const card = page.slice(page.indexOf('id="approval-card"'), page.indexOf("</section>"));
    assert.match(card, /data-tool="Bash"/);
    assert.match(card, /asks to run <code>Bash<\/code>/);
    assert.match(card, /<dt>Step<\/dt><dd><code>s_f1e0<\/code>/);
    // Model text is escaped everywhere: the target, the arguments.
    assert.match(card, /<code class="target">echo &#39;&lt;b&gt;approved&lt;\/b&gt;&#39; &gt; tmp/);
    assert.match(
      card,
      /<pre class="args" id="approval-args">\{\n {2}&quot;command&quot;: &quot;echo &#39;&lt;b&gt;approved/,
    );
    assert.doesNotMatch(page, /<script>x|<b>approved/);
    assert.match(
      card,
      new RegExp(`Showing ${APPROVAL_ARGS_LIMIT} of \\d+ characters`),
      "arguments are cut",
    );
    assert.match(card, /needs permission in acceptEdits mode/);
    // The rule is the whole command: cut too.
    assert.match(card, /the rule <code class="rule">Bash\(echo &#39;[^<]{0,400}…<\/code>/);
    // Without --allow-actions: the exact commands, no buttons, no secret.
    assert.doesNotMatch(page, /answer-form|data-csrf|Approve<\/button>/);
    const approve = card.match(/id="approve-command">([^<]*)</)![1];
    assert.match(
      approve,
      / answer ask-1 --value &#39;\{&quot;decision&quot;:&quot;allow&quot;\}&#39;$/,
    );
    assert.match(
      card,
      /id="deny-command">[^<]*--value &#39;\{&quot;decision&quot;:&quot;deny&quot;\}/,
    );
  }
  await using ui = await startDashboard(root, { actions: {} });
  const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
  assert.match(
    page,
    new RegExp(`id="answer-form"[^>]*\\s+data-run="/runs/ask-1" data-request="${requestId}"`),
  );
  assert.match(page, /data-choice="&quot;allow&quot;">Approve<\/button>/);
  assert.match(page, /data-choice="&quot;deny&quot;">Deny<\/button>/);
  assert.doesNotMatch(page, /approve-command|<select/, "the card replaces the generic form");
  const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
  const cancel = await fetch(`${ui.url}runs/${runId}/cancel`, {
    method: "POST",
    headers: { "x-stepflow-csrf": secret, origin: new URL(ui.url).origin },
  });
  assert.equal(cancel.status, 409);
  assert.match((await cancel.json()).message, /waits for Approve or Deny of a Bash call/);
});

Deno.test({
  name:
    "dashboard in chromium: Approve runs the waiting call, Deny refuses it and the model is told",
  // Outside CI a machine without chromium skips it; CI installs chromium (.ci/run) and must run it.
  ignore: !chromiumInstalled() && !Deno.env.get("CI"),
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using browser = await launchBrowser();
    for (const button of ["Approve", "Deny"] as const) {
      const run = await waitingForApproval(`ask-${button}`);
      const children: Deno.ChildProcess[] = [];
      await using ui = await startDashboard(run.root, {
        actions: {
          runAgentArgs: ["--script", "approval.script.json"],
          onSpawn: (c) => void children.push(c),
        },
      });
      await using tab = await openTab(browser);
      const { page, errors } = tab;
      await page.goto(`${ui.url}runs/${run.runId}`);
      const shown = await textOnceShown(page, "#answer-result.ok");
      // A denial's reason goes to the model with the refusal.
      if (button === "Deny") await page.fill("#approval-reason", "not on a Friday");
      await page.click(`#approval-card button:has-text("${button}")`);
      assert.match(await shown(), /answer recorded|finished/);
      await Promise.all(children.map((c) => c.status));
      assert.equal((await run.store.loadCheckpoint(run.runId))?.status, "completed");
      const log = await run.store.readLog(run.runId);
      const answer = log.find((e) => e.type === "input_answer")!;
      assert.deepEqual([answer.value, answer.answeredBy], [
        button === "Approve"
          ? { decision: "allow" }
          : { decision: "deny", reason: "not on a Friday" },
        "dashboard",
      ]);
      const call = log.find((e) => e.type === "tool_call" && e.callId === "c_ask")!;
      const out = join(run.root, "tmp", "tool-fixer-demo", "out.txt");
      if (button === "Approve") {
        assert.equal(call.decidedBy, "approved when asked by dashboard");
        assert.equal(await Deno.readTextFile(out), "<b>approved</b>\n");
      } else {
        assert.equal(call.decidedBy, "denied when asked by dashboard");
        assert.equal(await exists(out), false, "a denied call never runs");
        // The model was told: the call's result is the refusal.
        assert.match(
          String(call.result),
          /Permission denied: .*denied when asked: not on a Friday/,
        );
      }
      // After the page's reload: completed, no card, and the call's record in the step's list.
      await page.waitForSelector('#run-meta[data-status="completed"]', { timeout: 60_000 });
      assert.equal(await page.locator("#approval-card").count(), 0);
      const listed = page.locator('#timeline .row[data-step="s_f1e0"] li.call[data-tool="Bash"]');
      assert.match(
        await listed.first().innerText(),
        button === "Approve"
          ? /approved when asked by dashboard/
          : /denied when asked by dashboard/,
      );
      assert.deepEqual(errors, []);
    }
  },
});
