/**
 * The run page tells what the run is now: its final output is the run's own output (the closing
 * step's, as `--json` gives it), a redriven run is followed live like any running run, a failed
 * run's graph ends on `failed` (not `aborted`), and statuses and tokens use the same words as the
 * CLI. Runs are real runs of the real runner over the agent's file store.
 */
import assert from "node:assert/strict";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { startDashboard } from "./browser.ts";
import { demoProject, FINISH, holdAt, runFlow } from "./fixtures.ts";

/** Reads server-sent events until `pattern` matched what arrived (or the stream ended). */
function eventReader(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let received = "";
  return {
    get received() {
      return received;
    },
    async until(pattern: RegExp): Promise<void> {
      while (!pattern.test(received)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}: ${received}`);
        received += value;
      }
    },
    cancel: () => reader.cancel(),
  };
}

Deno.test("run page: Final output is the closing step's output, the one --json gives", async () => {
  const project = await demoProject();
  const result = await runFlow(project, { runId: "done" });
  assert.equal(result.completionReason, "completed");
  assert.deepEqual(result.output, {
    stepId: "complete.issue",
    summary: "Fixed the flaky login test.",
  });
  await using ui = await startDashboard(project.root);
  const page = await (await fetch(`${ui.url}runs/done`)).text();
  const output = page.slice(page.indexOf('id="final-output"'), page.indexOf("<h2>Timeline"));
  assert.match(output, /Output of the run \(step <code>complete\.issue<\/code>\)/);
  assert.match(output, /Fixed the flaky login test\./);
  // Not the handoff of the step before the closing step.
  assert.doesNotMatch(output, /completed_files|Handoff of the last step/);
});

Deno.test("run page: a run whose backend used a prompt cache shows its cache reads and writes", async () => {
  const project = await demoProject();
  await runFlow(project, {
    runId: "cached",
    usage: { inputTokens: 1200, outputTokens: 310, cacheReadTokens: 900, cacheWriteTokens: 100 },
  });
  await runFlow(project, { runId: "uncached" });
  await using ui = await startDashboard(project.root);
  const meta = async (runId: string) => {
    const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
    return page.slice(page.indexOf('id="run-meta"'), page.indexOf("</div></div>"));
  };
  // Four calls: initial, two continuations, complete.
  assert.match(
    await meta("cached"),
    /<span>Prompt cache<\/span>3600 cache read, 400 cache write \(of the input\)/,
  );
  assert.doesNotMatch(await meta("uncached"), /Prompt cache/);
});

Deno.test("run page: a redriven run is live — status, end and stream follow the current attempt", async () => {
  const project = await demoProject();
  const failed = await runFlow(project, { runId: "again", continuations: 2, failAt: 1 });
  assert.equal(failed.completionReason, "step_failed");
  await using ui = await startDashboard(project.root, { liveIntervalMs: 20 });
  const before = await (await fetch(`${ui.url}runs/again`)).text();
  assert.match(before, /data-status="failed"/);
  assert.doesNotMatch(before, /data-live=/);

  // Redrive it (as the dashboard's Redrive does through run-agent) and hold its first call.
  using hold = holdAt(1);
  let calls = 0;
  const backend = new ScriptedBackend(async (req) => {
    await hold.beforeAnswer(++calls);
    return FINISH[req.stepId as keyof typeof FINISH][0];
  });
  const redriven = new StepFlowRunner(project.def, { backend, store: project.store })
    .run({ redrive: "again", cwd: project.root });
  await hold.reached;

  const during = await (await fetch(`${ui.url}runs/again`)).text();
  assert.match(during, /data-status="running"/);
  assert.match(during, /data-live="\/runs\/again\/events\?from=\d+"/);
  assert.match(during, /id="live-badge"/);
  assert.match(during, /<span>End<\/span>–/);
  assert.match(during, /The run has not ended\./);
  assert.doesNotMatch(during, /Ended <b>step_failed/);

  const live = during.match(/data-live="([^"]+)"/)![1];
  const events = eventReader(await fetch(new URL(live, ui.url)));
  hold.release();
  const result = await redriven;
  assert.equal(result.completionReason, "completed");
  await events.until(/event: end\n/);
  assert.match(events.received, /event: output\ndata: .*Ended <b>completed/);
  assert.match(events.received, /event: output\ndata: .*Finished from the page\./);
  assert.match(events.received, /event: header\ndata: .*data-status=\\"completed\\"/);
  await events.cancel();
});

Deno.test("run page: a failed run's graph ends on failed, not aborted; the status words are the CLI's", async () => {
  const project = await demoProject();
  await runFlow(project, { runId: "broken", continuations: 2, failAt: 1 });
  // A run its process left behind (killed): running in its checkpoint, nobody holds its lock.
  await runFlow(project, { runId: "killed", continuations: 3, failAt: 2 });
  const file = project.store.files("killed").checkpoint;
  const checkpoint = JSON.parse(await Deno.readTextFile(file));
  checkpoint.status = "running";
  delete checkpoint.state.end;
  checkpoint.state.usage = {
    inputTokens: 0,
    outputTokens: 0,
    costUsd: 0,
    calls: 2,
    callsWithoutUsage: 2,
  };
  await Deno.writeTextFile(file, JSON.stringify(checkpoint));
  await using ui = await startDashboard(project.root);

  const broken = await (await fetch(`${ui.url}runs/broken`)).text();
  const graph = broken.slice(broken.indexOf('id="flow-graph"'), broken.indexOf("<h2>Final output"));
  assert.match(graph, />failed</);
  assert.doesNotMatch(graph, />aborted</);

  const killed = await (await fetch(`${ui.url}runs/killed`)).text();
  assert.match(killed, /data-status="interrupted"/);
  assert.match(killed, /<span class="status interrupted">interrupted<\/span>/);
  assert.match(killed, /<span>Tokens in \/ out<\/span>\?/);
  const list = await (await fetch(ui.url)).text();
  const row = list.slice(list.indexOf('data-run="killed"'));
  assert.match(row, /<span class="status interrupted">interrupted<\/span>/);
  assert.match(row.slice(0, row.indexOf("</tr>")), /<td class="num">\?<\/td>/);
});

Deno.test("a declined run: its badge is neutral (no failure colour) and its graph ends on declined", async () => {
  const { APP_CSS } = await import("../../src/ui/assets.ts");
  const { statusBadge } = await import("../../src/ui/pages.ts");
  const { endNode } = await import("../../src/ui/timeline.ts");
  assert.match(String(statusBadge({ status: "declined" })), /class="status declined"/);
  const coloured = APP_CSS.split("\n").filter((line) => /\.status\.declined\b/.test(line));
  assert.deepEqual(coloured, [], "a person's decision is not drawn as a failure");
  assert.equal(endNode("declined"), "declined");
});
