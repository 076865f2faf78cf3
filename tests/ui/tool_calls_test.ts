/**
 * Each timeline row of the run page lists the tool calls of its iteration: tool, arguments and
 * result excerpts, duration, the permission decision and who made it — a refused call apart, a
 * call not finished yet as running while the run is live — bounded for a step of 1,000 calls and
 * escaped for a model's hostile names and arguments. Runs are real runs of the `tool-fixer`
 * example agent by the real runner with a scripted model whose calls run the real tools, recorded
 * into the file store and PostgreSQL; the live view is read from the real event stream.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { ScriptedScript } from "../../src/llm/scripted.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import type { RunLogEntry } from "../../src/store/types.ts";
import { timelineRow } from "../../src/ui/pages.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { foldLog, type IterationRow, newTimeline } from "../../src/ui/timeline.ts";
import { callDetails } from "../../src/ui/tool_calls_view.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";
import { startDashboard } from "./browser.ts";
import { holdAt } from "./fixtures.ts";
import { releaseTrainRun } from "./release_train.ts";
import { DEMO_SCRIPT, manyCalls, runTools, toolProject } from "./tool_runs.ts";

/** The iteration rows of a run page, in order, as their HTML. */
function iterationRows(page: string): string[] {
  return page.split('<div class="row ').slice(1).filter((r) => r.startsWith("iteration"));
}

/** `tool:state` of each call a row shows, in order. */
function callsOf(row: string): string[] {
  return [
    ...row.matchAll(
      /<li class="call [a-z]+" data-call="\d+" data-tool="([^"]*)" data-state="([a-z]+)"/g,
    ),
  ]
    .map((m) => `${m[1]}:${m[2]}`);
}

/**
 * The counts above a row's calls, without the model's turns (counted only where the log records
 * them).
 */
function countsOf(row: string): string | undefined {
  return row.match(/<details class="calls"[^>]*><summary>([^<]*)<\/summary>/)?.[1]
    .replace(/ · in \d+ model turns/, "");
}

/** The demo, but the first step's check says "ng" once: the step runs again with other calls. */
const RETRIED: ScriptedScript = {
  ...DEMO_SCRIPT,
  s_f1d0: [
    DEMO_SCRIPT.s_f1d0[0],
    DEMO_SCRIPT.s_f1d0[1],
    "Somewhere in greet.ts.",
    DEMO_SCRIPT.s_f1d0[2],
    DEMO_SCRIPT.s_f1d0[3],
  ],
  "s_f1d0#check": [
    { output: { result: "ng", message: "Name the line" } },
    ...DEMO_SCRIPT["s_f1d0#check"],
  ],
};

Deno.test("tool calls: each iteration's row lists its own calls — decision, who decided, duration, excerpts", async () => {
  const project = await toolProject();
  const result = await runTools(project, { runId: "tools", script: RETRIED });
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  await using ui = await startDashboard(project.root);
  const page = await (await fetch(`${ui.url}runs/tools`)).text();
  const rows = iterationRows(page);
  // The step that ran twice keeps each attempt's calls apart; a check call's Read is its step's.
  assert.deepEqual(rows.map(callsOf), [
    ["Write:ok", "Grep:ok"],
    ["Read:ok"],
    ["Edit:ok", "Bash:denied", "Bash:ok", "Read:ok"],
  ]);
  assert.equal(countsOf(rows[0]), "2 tool calls");
  assert.equal(countsOf(rows[2]), "4 tool calls · 1 refused");
  const edit = rows[2].slice(rows[2].indexOf('data-tool="Edit"'), rows[2].indexOf("</li>"));
  assert.match(
    edit,
    /<b>Edit<\/b> <code class="args">\{&quot;file_path&quot;:&quot;tmp\/tool-fixer-demo\/greet\.ts&quot;/,
  );
  assert.match(edit, /<span class="state">\d+ ms<\/span>/);
  assert.match(edit, /<span class="k decision">allowed · rule Edit(?: at [^<]+)?<\/span>/);
  assert.match(
    edit,
    /<span class="result">→ Edited tmp\/tool-fixer-demo\/greet\.ts: 1 replacement\.<\/span>/,
  );
  // The refused call is told apart: its class, its mark, and the rule that refused it.
  const denied = rows[2].slice(rows[2].indexOf('<li class="call denied"'));
  assert.match(
    denied,
    /^<li class="call denied" data-call="1" data-tool="Bash" data-state="denied">/,
  );
  assert.match(denied, /<span class="mark">⊘<\/span> <b>Bash<\/b>/);
  assert.match(
    denied,
    /<span class="state">refused<\/span> <span class="k decision">by rule Bash\(rm:\*\)(?: at [^<]+)?<\/span>/,
  );

  // Opened, a call shows every recorded field, its arguments indented and its result.
  const rowIndex = Number(page.match(/id="row-(\d+)" data-step="s_f1e0"/)![1]);
  const opened = await (await fetch(`${ui.url}runs/tools/rows/${rowIndex}/call1`)).text();
  assert.match(opened, /<span>Decision<\/span>deny/);
  assert.match(opened, /<span>Decided by<\/span>rule Bash\(rm:\*\)/);
  assert.match(
    opened,
    /<pre>\{\n {2}&quot;command&quot;: &quot;rm -rf tmp\/tool-fixer-demo&quot;,/,
  );
  assert.match(opened, /<pre>Permission denied: Bash is refused by the rule/);
  assert.equal((await fetch(`${ui.url}runs/tools/rows/${rowIndex}/call9`)).status, 404);
  // A row with few calls hides none; a row without calls has no calls part.
  assert.equal((await fetch(`${ui.url}runs/tools/rows/${rowIndex}/morecalls`)).status, 404);
  assert.equal((await fetch(`${ui.url}runs/tools/rows/0/calls`)).status, 404);
});

Deno.test("tool calls: a step of 1,000 calls shows its first and last ten, the rest on demand", async () => {
  const project = await toolProject();
  const script: ScriptedScript = {
    s_f1d0: [...manyCalls(1000, 25), "Looked everywhere."],
    "s_f1d0#check": [{ output: { result: "ok", message: "fine" } }],
    s_f1e0: ["Nothing to fix."],
    "s_f1e0#check": [{ output: { result: "ok", message: "fine" } }],
  };
  const result = await runTools(project, { runId: "many", script });
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  await using ui = await startDashboard(project.root);
  const page = await (await fetch(`${ui.url}runs/many`)).text();
  const row = iterationRows(page)[0];
  assert.equal(countsOf(row), "1000 tool calls");
  const shown = [...row.matchAll(/data-call="(\d+)"/g)].map((m) => Number(m[1]));
  assert.deepEqual(shown, [...Array(10).keys(), ...Array.from({ length: 10 }, (_, i) => 990 + i)]);
  assert.match(row, /<summary>… 980 more calls \(11–990\)<\/summary>/);
  assert.match(row, /<ol class="calls-list" start="991">/);
  assert.match(row, /nothing-1\/\*\.none/);
  assert.match(row, /nothing-1000\/\*\.none/);
  assert.ok(row.length < 20_000, `the row is ${row.length} characters`);

  const rowIndex = Number(page.match(/id="row-(\d+)" data-step="s_f1d0"/)![1]);
  const hidden = await (await fetch(`${ui.url}runs/many/rows/${rowIndex}/morecalls`)).text();
  const listed = [...hidden.matchAll(/data-call="(\d+)"/g)].map((m) => Number(m[1]));
  assert.equal(listed.length, 500);
  assert.equal(listed[0], 10);
  assert.equal(listed.at(-1), 509);
  assert.match(hidden, /<ol class="calls-list" start="11">/);
  assert.match(
    hidden,
    /Showing 500 of the 980 calls hidden here; calls 511–990 are in the run log/,
  );
  const call500 = await (await fetch(`${ui.url}runs/many/rows/${rowIndex}/call499`)).text();
  assert.match(call500, /nothing-500\/\*\.none/);
});

Deno.test("tool calls: a run of many iterations draws the calls of its last 20 rows with calls; earlier ones load when opened", async () => {
  const project = await toolProject();
  const result = await runTools(project, { runId: "long" });
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  // 30 more iterations of the first step after the second, as the runner would append them over
  // a long run: its lines copied (with their calls), the run's end after them.
  const logFile = join(project.root, "tmp/logs/agents/tool-fixer/long.jsonl");
  const lines = (await Deno.readTextFile(logFile)).trimEnd().split("\n");
  const end = lines.findIndex((l) => l.includes('"type":"run_end"'));
  const first = lines.findIndex((l) => l.includes('"type":"step_start"'));
  const last = lines.findIndex((l) => l.includes('"type":"step_end"'));
  const iteration = lines.slice(first, last + 1).filter((l) => !l.includes("store_checkpoint"));
  const more = Array.from({ length: 30 }, () => iteration).flat();
  await Deno.writeTextFile(
    logFile,
    [...lines.slice(0, end), ...more, ...lines.slice(end)].join("\n") + "\n",
  );
  await using ui = await startDashboard(project.root);
  const page = await (await fetch(`${ui.url}runs/long`)).text();
  const rows = iterationRows(page);
  assert.equal(rows.length, 32);
  const open = rows.map((r) => /<details class="calls"[^>]* open data-loaded="true">/.test(r));
  assert.deepEqual(open, [...Array(12).fill(false), ...Array(20).fill(true)]);
  assert.deepEqual(callsOf(rows[1]), [], "an early row's calls are not in the page");
  assert.equal(countsOf(rows[1]), "4 tool calls · 1 refused");
  assert.deepEqual(callsOf(rows[31]), ["Write:ok", "Grep:ok", "Read:ok"]);
  const src = rows[1].match(/<details class="calls" data-calls="4" data-src="([^"]+)"/)![1];
  const loaded = await (await fetch(new URL(src, ui.url))).text();
  assert.deepEqual(callsOf(loaded), ["Edit:ok", "Bash:denied", "Bash:ok", "Read:ok"]);
});

Deno.test("tool calls: a model's hostile tool names, ids and arguments are shown as text, bounded", async () => {
  const project = await toolProject();
  const attack = "<script>window.__pwned=1</script>";
  const script: ScriptedScript = {
    s_f1d0: [
      {
        toolCalls: [
          { id: "__proto__", name: attack, arguments: { x: '<img src=x onerror="alert(1)">' } },
          { id: "constructor", name: "constructor", arguments: {} },
          {
            id: "__proto__",
            name: "Write",
            arguments: { file_path: "tmp/h.txt", content: attack + "x".repeat(200_000) },
          },
        ],
      },
      "Done.",
    ],
    "s_f1d0#check": [{ output: { result: "ok", message: "fine" } }],
    s_f1e0: ["Nothing to fix."],
    "s_f1e0#check": [{ output: { result: "ok", message: "fine" } }],
  };
  const result = await runTools(project, { runId: "hostile", script });
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  await using ui = await startDashboard(project.root);
  const page = await (await fetch(`${ui.url}runs/hostile`)).text();
  assert.ok(!page.includes("<script>window"), "no model text as markup");
  assert.ok(!page.includes("<img"), "no model text as markup");
  const row = iterationRows(page)[0];
  assert.deepEqual(callsOf(row), [
    "&lt;script&gt;window.__pwned=1&lt;/script&gt;:invalid",
    "constructor:invalid",
    "Write:ok",
  ]);
  // The Write's 200,000-character argument: an excerpt on the line, the log's excerpt when opened.
  const write = row.slice(row.indexOf('data-tool="Write"'));
  const args = write.match(/<code class="args">([^<]*)<\/code>/)![1];
  assert.ok(args.endsWith("…") && args.length < 400, args);
  const rowIndex = Number(page.match(/id="row-(\d+)" data-step="s_f1d0"/)![1]);
  const opened = await (await fetch(`${ui.url}runs/hostile/rows/${rowIndex}/call2`)).text();
  assert.ok(opened.length < 10_000, `${opened.length} characters`);
  assert.match(
    opened,
    /&lt;script&gt;window\.__pwned=1&lt;\/script&gt;x+… \(200\d{3} characters\)/,
  );
  assert.ok(!opened.includes("<script>window"));
  const invalid = await (await fetch(`${ui.url}runs/hostile/rows/${rowIndex}/call1`)).text();
  assert.match(invalid, /<span>Call id<\/span><code>constructor<\/code>/);
  assert.match(invalid, /<span>Decision<\/span>invalid/);
});

Deno.test("tool calls: a call appears in its row live, over the run's event stream", async () => {
  const project = await toolProject();
  // Held before the model's second turn: the Write has run, the Grep has not been asked for.
  using hold = holdAt(2);
  const run = runTools(project, { runId: "live", beforeAnswer: hold.beforeAnswer });
  await hold.reached;
  await using ui = await startDashboard(project.root, { liveIntervalMs: 20 });
  const page = await (await fetch(`${ui.url}runs/live`)).text();
  assert.deepEqual(iterationRows(page).map(callsOf), [["Write:ok"]]);
  const live = page.match(/data-live="([^"]+)"/)![1];
  const response = await fetch(new URL(live.replaceAll("&amp;", "&"), ui.url));
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let received = "";
  const until = async (pattern: RegExp) => {
    while (!pattern.test(received)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before ${pattern}: ${received.slice(-2000)}`);
      received += value;
    }
  };
  hold.release();
  await until(/event: rows\ndata: [^\n]*data-tool=\\"Grep\\" data-state=\\"ok\\"/);
  await until(/event: end\n/);
  assert.match(received, /data-tool=\\"Bash\\" data-state=\\"denied\\"/);
  await reader.cancel();
  assert.equal((await run).completionReason, "completed");
});

Deno.test("tool calls: a run nobody drives shows its unfinished call as such; once its log grows again, a new call runs", async () => {
  const project = await toolProject();
  const result = await runTools(project, { runId: "left" });
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  // The run as a killed process leaves it: `running`, nobody holding it, in the middle of its
  // first step with a call started and not finished.
  const dir = join(project.root, "tmp/logs/agents/tool-fixer");
  const lines = (await Deno.readTextFile(join(dir, "left.jsonl"))).trimEnd().split("\n");
  const firstCall = lines.findIndex((l) => l.includes('"type":"tool_call"'));
  const base = { ts: new Date().toISOString(), runId: "left", iteration: 1, stepId: "s_f1d0" };
  const start = (callId: string, tool: string) =>
    JSON.stringify({ ...base, type: "tool_call_start", callId, tool, decidedBy: "rule " + tool });
  await Deno.writeTextFile(
    join(dir, "left.jsonl"),
    [...lines.slice(0, firstCall + 1), start("c-grep", "Grep")].join("\n") + "\n",
  );
  const checkpointFile = join(dir, "left.checkpoint.json");
  const checkpoint = JSON.parse(await Deno.readTextFile(checkpointFile));
  checkpoint.status = "running";
  delete checkpoint.state.end;
  await Deno.writeTextFile(checkpointFile, JSON.stringify(checkpoint));

  await using ui = await startDashboard(project.root, { liveIntervalMs: 20 });
  const page = await (await fetch(`${ui.url}runs/left`)).text();
  assert.match(page, /data-status="interrupted"/);
  assert.deepEqual(iterationRows(page).map(callsOf), [["Write:ok", "Grep:unfinished"]]);
  const live = page.match(/data-live="([^"]+)"/)![1];
  // (A run that never shows the call would keep the stream open: the test fails after 20 s.)
  const reader = (await fetch(new URL(live.replaceAll("&amp;", "&"), ui.url), {
    signal: AbortSignal.timeout(20_000),
  })).body!.pipeThrough(new TextDecoderStream()).getReader();
  let received = "";
  // Resumed by another process: its lines arrive under the open stream.
  await Deno.writeTextFile(
    join(dir, "left.jsonl"),
    [JSON.stringify({ ...base, type: "run_resume" }), start("c-read", "Read")].join("\n") + "\n",
    { append: true },
  );
  while (!/data-tool=\\"Read\\" data-state=\\"running\\"/.test(received)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stream ended: ${received}`);
    received += value;
  }
  assert.match(received, /data-tool=\\"Grep\\" data-state=\\"unfinished\\"/);
  await reader.cancel();
});

Deno.test("tool calls: a call logged as started shows running while the run is live, then finished", () => {
  // The lines of a run in the middle of a step: a rule someone allowed for the run when the call
  // asked, the model's turn, and the call allowed and started (its `tool_call_start` line, written
  // before the tool runs — it names who allowed it, not the decision), with extra fields.
  const ts = "2026-01-01T00:00:00.000Z";
  const base = { ts, runId: "r", iteration: 1 };
  const log: RunLogEntry[] = [
    { ...base, type: "run_start", stepId: "s" },
    { ...base, type: "step_start", stepId: "s", attempt: 1 },
    { ...base, type: "tool_turn", stepId: "s", turn: 1, calls: [{ id: "c1", name: "Bash" }] },
    {
      ...base,
      type: "permission_grant",
      stepId: "s",
      callId: "c1",
      rule: "Bash(npm test)",
      grantedBy: "terminal (erin)",
      grantedAt: "2026-01-01T00:00:01.000Z",
    },
    {
      ...base,
      type: "tool_call_start",
      stepId: "s",
      call: 0,
      turn: 1,
      callId: "c1",
      tool: "Bash",
      args: '{"command":"npm test"}',
      target: "npm test",
      decidedBy: "terminal (erin)",
      decidedAt: "2026-01-01T00:00:01.000Z",
      idempotent: false,
    },
  ];
  const timeline = newTimeline();
  foldLog(timeline, log);
  // No row for the model's turn or the grant: they belong to the step's row.
  assert.deepEqual(timeline.rows.map((r) => r.kind), ["event", "iteration"]);
  const row = timeline.rows[1] as IterationRow;
  const running = timelineRow("r", row, { live: true }).text;
  assert.match(
    running,
    /<li class="call running" data-call="0" data-tool="Bash" data-state="running">/,
  );
  assert.match(running, /<span class="state">running…<\/span>/);
  assert.match(running, /allowed · terminal \(erin\) at 2026-01-01 00:00:01Z/);
  assert.match(running, /1 tool call · 1 running · in 1 model turns · 1 allowed for the run/);
  assert.match(
    running,
    /⊕ Allowed for the rest of the run: <code>Bash\(npm test\)<\/code> · by terminal \(erin\) at 2026-01-01 00:00:01Z/,
  );
  // Not followed live (nobody drives the run): it did not finish.
  assert.match(timelineRow("r", row, { live: false }).text, /data-state="unfinished"/);

  // Its finished line completes the same call (one call, not two); odd field types are ignored.
  const touched = foldLog(timeline, [{
    ...base,
    type: "tool_call",
    stepId: "s",
    callId: "c1",
    tool: "Bash",
    decision: "allow",
    isError: false,
    durationMs: 1200,
    result: "ok 12 tests",
    content: "the whole output",
    surprise: { nested: true },
  }, { ...base, type: "tool_call", stepId: "s", callId: 7, tool: 42, durationMs: "slow" }]);
  assert.deepEqual([...touched], [1]);
  const done = timelineRow("r", row, { live: true }).text;
  assert.deepEqual(callsOf(done), ["Bash:ok", "?:ok"]);
  assert.match(done, /<span class="state">1\.2 s<\/span>/);

  // A log written by something else: huge names and fields are cut, on the line and opened.
  const huge = "<b>" + "T".repeat(100_000);
  foldLog(timeline, [{
    ...base,
    type: "tool_call",
    stepId: "s",
    callId: huge,
    tool: huge,
    decision: huge,
    decidedBy: huge,
    decidedAt: huge,
    result: huge,
    args: { deep: [huge] },
  }]);
  const line = timelineRow("r", row, { live: true }).text;
  assert.ok(line.length < 10_000, `${line.length} characters`);
  assert.ok(!line.includes("<b>TTT"));
  assert.ok(callDetails(row.calls!.list[2], true).text.length < 50_000);

  // A run that stops with a call unfinished: the call did not finish, even if the run goes on.
  foldLog(timeline, [
    {
      ...base,
      type: "tool_call_start",
      stepId: "s",
      callId: "c2",
      tool: "Read",
      decision: "allow",
    },
    { ...base, type: "run_resume", stepId: "s" },
  ]);
  assert.match(
    timelineRow("r", row, { live: true }).text,
    /data-tool="Read" data-state="unfinished"/,
  );
  // The step's end after lines of other kinds is still its own row's.
  foldLog(timeline, [{ ...base, type: "step_end", stepId: "s", entry: { stepId: "s" } }]);
  assert.deepEqual(timeline.rows.map((r) => r.kind), ["event", "iteration", "event"]);
  assert.ok(row.end);
});

Deno.test({
  name: "tool calls: over PostgreSQL, the run page lists each row's calls as over the file store",
  ignore: pg === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const url = await freshDatabase(pg!);
    const project = await toolProject();
    const store = new PostgresRunStore(url, { agent: "tool-fixer", onWarning: () => {} });
    try {
      const result = await runTools(project, { runId: "pg-tools", store });
      assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
      await using ui = await startDashboard(project.root, {
        stores: await discoverStores(project.root, url),
      });
      const page = await (await fetch(`${ui.url}runs/pg-tools`)).text();
      assert.deepEqual(iterationRows(page).map(callsOf), [
        ["Write:ok", "Grep:ok", "Read:ok"],
        ["Edit:ok", "Bash:denied", "Bash:ok", "Read:ok"],
      ]);
      const rowIndex = Number(page.match(/id="row-(\d+)" data-step="s_f1e0"/)![1]);
      const opened = await (await fetch(`${ui.url}runs/pg-tools/rows/${rowIndex}/call2`)).text();
      assert.match(opened, /<span>Decided by<\/span>rule Bash\(grep:\*\)/);
    } finally {
      await store.close();
    }
  },
});

Deno.test("tool calls: an agent step's child run shows its calls nested, running while the child runs", async () => {
  const { root, parentId, childId, childStoreDir } = await releaseTrainRun();
  // The child in the middle of a step with a call started (as a log records it before the tool
  // runs), its checkpoint still `running`.
  const logFile = join(childStoreDir, `${childId}.jsonl`);
  const ts = new Date().toISOString();
  const lines = [
    { ts, runId: childId, iteration: 9, type: "step_start", stepId: "plan.release", attempt: 1 },
    {
      ts,
      runId: childId,
      iteration: 9,
      type: "tool_call_start",
      stepId: "plan.release",
      callId: "c1",
      tool: "Bash",
      args: '{"command":"deno task test"}',
      decision: "allow",
      decidedBy: "bypassPermissions mode",
    },
  ];
  await Deno.writeTextFile(logFile, lines.map((l) => JSON.stringify(l) + "\n").join(""), {
    append: true,
  });
  const checkpointFile = join(childStoreDir, `${childId}.checkpoint.json`);
  const checkpoint = JSON.parse(await Deno.readTextFile(checkpointFile));
  await using ui = await startDashboard(root);
  const page = await (await fetch(`${ui.url}runs/${parentId}`)).text();
  const index = Number(page.match(/id="row-(\d+)" data-step="ship\.train"/)![1]);
  const nested = async () =>
    await (await fetch(`${ui.url}runs/${parentId}/rows/${index}/child`)).text();
  // The child ended (completed): the call did not finish.
  assert.match(await nested(), /data-tool="Bash" data-state="unfinished"/);
  assert.match(await nested(), new RegExp(`data-src="/runs/${childId}/rows/\\d+/call0"`));
  checkpoint.status = "running";
  await Deno.writeTextFile(checkpointFile, JSON.stringify(checkpoint));
  assert.match(await nested(), /data-tool="Bash" data-state="running"/);
});
