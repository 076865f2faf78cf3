/**
 * The run page counts a run's iterations as `--show`, the runs list and `/api/runs` do (the
 * checkpoint's count): a real run killed inside a step and resumed, and a run whose tool call waits
 * for permission — whose timelines hold one iteration row more than the count (the killed one, the
 * one that stopped to wait).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { ScriptedToolCall } from "../../src/llm/scripted.ts";
import type { RunPage } from "../../src/ui/source.ts";
import { runCli } from "../cli/helpers.ts";
import { startDashboard } from "./browser.ts";
import { chartBars } from "./chart_bars.ts";
import { killedInBash, SCRIPT_FILE } from "./killed_in_bash.ts";
import { DEMO_SCRIPT, runTools, toolProject } from "./tool_runs.ts";
import { demoProject, holdAt, runFlow } from "./fixtures.ts";

/** What each view says: the page's header, its iteration rows, the API, the list and `--show`. */
async function counts(url: string, root: string, agent: string, runId: string) {
  const page = await (await fetch(`${url}runs/${runId}`)).text();
  const header = /<span>Iterations<\/span>([^<]*)<\/div>/.exec(page)?.[1];
  const rows = page.match(/class="row iteration/g)?.length ?? 0;
  const api = (await (await fetch(`${url}api/runs`)).json()) as RunPage;
  const listed = api.runs.find((r) => r.runId === runId)?.iterations;
  const list = await (await fetch(url)).text();
  const row = list.slice(list.indexOf(`<tr data-run="${runId}"`));
  const cells = [...row.slice(0, row.indexOf("</tr>")).matchAll(/<td class="num">([^<]*)<\/td>/g)];
  const show = await runCli(["--agent", agent, "--show", runId], { userDir: root });
  assert.equal(show.code, 0, show.stderr);
  return {
    page: Number(header),
    rows,
    api: listed,
    list: Number(cells[1]?.[1]),
    show: Number(/(\d+) iterations/.exec(show.stdout)?.[1]),
  };
}

Deno.test("run page: a run killed in a step and resumed counts its iterations as --show, the list and the API", async () => {
  const killed = await killedInBash();
  const resumed = await runCli(
    [
      "--agent",
      "code-improver",
      "--resume",
      killed.runId,
      "--rerun-unfinished-call",
      "--script",
      SCRIPT_FILE,
    ],
    { userDir: killed.root },
  );
  assert.equal(resumed.code, 0, resumed.stderr);
  await using ui = await startDashboard(killed.root);
  const seen = await counts(ui.url, killed.root, "code-improver", killed.runId);
  // The killed iteration ran again after the resume: one row more than iterations.
  assert.equal(seen.rows, seen.show + 1, JSON.stringify(seen));
  // The timing chart shows it stopped where it was killed, its Bash call with it.
  const bars = chartBars(await (await fetch(`${ui.url}runs/${killed.runId}`)).text());
  const fix = bars.filter((b) => b.title.startsWith("#2 s_b2c1"));
  assert.deepEqual(fix.map((b) => b.title.split(" — ")[1]), ["interrupted", "completed"]);
  const bash = bars.filter((b) => b.title.startsWith("Bash echo done"));
  assert.deepEqual(bash.map((b) => b.title.split(" — ")[1]), ["interrupted", "completed"]);
  assert.deepEqual(
    { page: seen.page, api: seen.api, list: seen.list },
    { page: seen.show, api: seen.show, list: seen.show },
  );
});

Deno.test("run page: a run whose tool call waits for permission counts its iterations as --show, the list and the API", async () => {
  const project = await toolProject();
  const agentFile = join(project.root, ".agent", "tool-fixer", "agent.json");
  const agent = JSON.parse(await Deno.readTextFile(agentFile));
  agent.behavior.permissionAsks = "wait";
  await Deno.writeTextFile(agentFile, JSON.stringify(agent));
  project.def = await loadAgentDefinition("tool-fixer", { cwd: project.root });
  // The demo's fix step, its second call a Bash command no rule allows: it asks, and waits.
  const script = structuredClone(DEMO_SCRIPT);
  (script.s_f1e0[0] as { toolCalls: ScriptedToolCall[] }).toolCalls[1] = {
    name: "Bash",
    arguments: { command: "echo asked > tmp/tool-fixer-demo/out.txt" },
  };
  const result = await runTools(project, { runId: "asks", script });
  assert.equal(result.completionReason, "waiting");
  await using ui = await startDashboard(project.root);
  const seen = await counts(ui.url, project.root, "tool-fixer", "asks");
  // The waiting step's row is drawn; its iteration counts once it goes on.
  assert.equal(seen.rows, seen.show + 1, JSON.stringify(seen));
  assert.deepEqual(
    { page: seen.page, api: seen.api, list: seen.list },
    { page: seen.show, api: seen.show, list: seen.show },
  );
});

Deno.test("run page followed live: the header's count follows each committed iteration", async () => {
  const project = await demoProject();
  // The run is held before its 2nd model call (the page opens then) and before its 3rd.
  using second = holdAt(2);
  using third = holdAt(3);
  const run = runFlow(project, {
    runId: "followed",
    continuations: 3,
    beforeAnswer: async (call) => {
      await second.beforeAnswer(call);
      await third.beforeAnswer(call);
    },
  });
  await second.reached;
  await using ui = await startDashboard(project.root, { liveIntervalMs: 20 });
  const page = await (await fetch(`${ui.url}runs/followed`)).text();
  assert.match(page, /<span>Iterations<\/span>1<\/div>/);
  const live = /data-live="([^"]+)"/.exec(page)![1].replaceAll("&amp;", "&");
  const giveUp = new AbortController();
  const timer = setTimeout(() => giveUp.abort(new Error("no header said 2 iterations")), 30_000);
  const stream = await fetch(new URL(live, ui.url), { signal: giveUp.signal });
  const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
  second.release();
  await third.reached;
  // Held before its 3rd call: iteration 2 is committed, iteration 3 has started (its row drawn).
  let text = "";
  let header: string | undefined;
  try {
    while (header !== "2") {
      const { value, done } = await reader.read();
      assert.ok(!done, `the stream ended before a header said 2 iterations: ${text}`);
      text += value;
      const headers = [...text.matchAll(/event: header\ndata: (.*)\n/g)];
      const last = headers.at(-1)?.[1];
      header = last ? /<span>Iterations<\/span>(\d+)</.exec(JSON.parse(last))?.[1] : undefined;
      assert.notEqual(header, "3", "the header counts the started iteration's row");
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel();
  }
  third.release();
  assert.equal((await run).success, true);
});
