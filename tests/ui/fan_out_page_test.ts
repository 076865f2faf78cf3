/**
 * A fan-out step on the dashboard, over real runs of the real runner (the fleet agent fanning the
 * reviewer over files, each child recorded as a run of the reviewer): the graph node's progress
 * bar, the children listed failures first with links both ways, one chart bar per child on one
 * time axis, the children's waiting questions offered on the parent's page, and a followed run's
 * section redrawn as its children end.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import type { LlmRequest } from "../../src/llm/types.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import {
  fleetFiles,
  fleetResponder,
  reviewedPath,
  reviewerFiles,
  writeFleetAgents,
} from "../flow/fan_out_fixtures.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { startDashboard } from "./browser.ts";
import { chartBars } from "./chart_bars.ts";

const files = (n: number) => Array.from({ length: n }, (_, i) => `src/f${i}.ts`);

async function fleet(step: Record<string, unknown>, form?: "plain" | "confirm") {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-fanout-" });
  await writeFleetAgents(root, step, form);
  const definition = await loadAgentDefinition("fleet", { cwd: root });
  // The reviewer's runs go to its own folder (store.forAgent), as run-agent records them.
  const store = runStoreFor(definition, { cwd: root });
  return { root, definition, store };
}

Deno.test("dashboard fan-out: progress bar on the node, children failures first with links both ways, one chart bar per child", async () => {
  const { root, definition, store } = await fleet({ concurrency: 2 });
  const paths = files(5);
  const backend = new ScriptedBackend(
    fleetResponder({
      files: paths,
      delayMs: (p) => (p === "src/f0.ts" ? 120 : 20),
      failing: (p) => p === "src/f1.ts" || p === "src/f3.ts",
    }),
  );
  const result = await new StepFlowRunner(definition, { backend, store }).run();
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  const [fanOut] = fanOutsOf(await store.readLog(result.runId));
  const childOf = (i: number) => fanOut.items.get(i)!.children[0].childRunId;
  await using ui = await startDashboard(root);
  const page = await (await fetch(`${ui.url}runs/${result.runId}`)).text();

  // The graph: the fan-out node carries a bar of its items, in words too.
  const node = page.match(/<g class="([^"]*)" data-id="review\.each">[\s\S]*?<\/g>\s*<\/g>/);
  assert.ok(node, "the fan-out step's node is drawn");
  assert.ok(node[1].split(" ").includes("fanout"), node[1]);
  assert.match(node[0], /<title>review\.each — 3\/5 done · 0 running · 2 failed<\/title>/);
  const segments = [
    ...node[0].matchAll(/<rect class="seg (\w+)" x="[\d.]+" y="[\d.]+" width="([\d.]+)"/g),
  ]
    .map((m) => [m[1], Number(m[2])] as const);
  assert.deepEqual(segments.map((s) => s[0]), ["ok", "bad"]);
  assert.ok(Math.abs(segments[0][1] / segments[1][1] - 1.5) < 0.01, "3 done : 2 failed");

  // The section: counts, then the items, failures first, each linking its child's page.
  const section = page.match(/<section class="fanout" id="fanout-review\.each"[\s\S]*?<\/section>/)
    ?.[0];
  assert.ok(section);
  assert.match(section, /data-total="5" data-completed="3"\s+data-failed="2"/);
  assert.match(section, /3\/5 done · 0 running · 2 failed/);
  const rows = [
    ...section.matchAll(
      /<tr id="fanout-review\.each-item-(\d)" data-item="\d" data-status="(\w+)"/g,
    ),
  ]
    .map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(rows, ["1 failed", "3 failed", "0 completed", "2 completed", "4 completed"]);
  for (let i = 0; i < 5; i++) {
    assert.match(section, new RegExp(`<a href="/runs/${childOf(i)}">${childOf(i)}</a>`));
  }
  // A failed item says why, beside its row.
  assert.deepEqual(
    [...section.matchAll(/<span class="errors">BACKEND_ERROR: [^<]*cannot review (src\/f\d\.ts)/g)]
      .map((m) => m[1]),
    ["src/f1.ts", "src/f3.ts"],
  );

  // The chart: one bar per child on one axis, linking the child's page, coloured by status.
  const bars = chartBars(section, "fanout-chart-0");
  assert.equal(bars.length, 5);
  for (let i = 0; i < 5; i++) {
    const bar = bars.find((b) => b.link === `/runs/${childOf(i)}`);
    assert.ok(bar, `child ${i} has a bar`);
    assert.equal(bar.classes.split(" ")[0], i === 1 || i === 3 ? "bad" : "ok");
  }
  // Two at once: the first (slow) child's bar spans others that started after it.
  const first = bars.find((b) => b.link === `/runs/${childOf(0)}`)!;
  const second = bars.find((b) => b.link === `/runs/${childOf(1)}`)!;
  assert.ok(second.x < first.x + first.width, "item 2 ran while item 1 did");

  // The child's page links back to its item's row on the parent's page.
  const child = await (await fetch(`${ui.url}runs/${childOf(3)}`)).text();
  assert.match(
    child,
    new RegExp(
      `<a href="/runs/${result.runId}#fanout-review\\.each-item-3">${result.runId}</a> \\(item 4 of fan-out step <code>review\\.each</code>\\)`,
    ),
  );
  // A run without fan-outs has an empty host (a fan-out that starts later appears in it).
  const plain = await (await fetch(`${ui.url}runs/${childOf(0)}`)).text();
  assert.match(plain, /<div id="fanout-host"><div id="fan-outs"><\/div><\/div>/);
});

Deno.test("dashboard fan-out: three waiting children are offered on the parent's page, each with its own form and request", async () => {
  const { root, definition, store } = await fleet({ concurrency: 4 }, "confirm");
  const paths = files(3);
  const result = await new StepFlowRunner(definition, {
    backend: new ScriptedBackend(fleetResponder({ files: paths })),
    store,
  }).run();
  assert.equal(result.completionReason, "waiting");
  const waits = result.waits!;
  assert.equal(waits.length, 3);
  await using ui = await startDashboard(root, { actions: {} });
  // Listed as waiting on three answers (on a line of its own under the badge, without a stray ·).
  const list = await (await fetch(`${ui.url}?status=waiting`)).text();
  assert.match(
    list,
    /<span class="status waiting">waiting<\/span> <span class="waiting-for input"[^>]*><span class="sep">· <\/span>3 answers<\/span>/,
  );
  const page = await (await fetch(`${ui.url}runs/${result.runId}`)).text();
  assert.match(page, /3 child runs wait for an answer/);
  for (const wait of waits) {
    const item = wait.child!.item!;
    assert.match(
      page,
      new RegExp(
        `<form id="answer-form-item-${item}" class="answer actions"[^>]*data-run="/runs/${result.runId}" data-request="${wait.requestId}">`,
      ),
    );
    assert.match(page, new RegExp(`id="wait-item-${item}" data-child="${wait.child!.runId}"`));
    assert.match(
      page,
      new RegExp(`Publish the review of src/f${item}\\.ts: ok src/f${item}\\.ts\\?`),
    );
    // The item's row links its question.
    assert.match(
      page,
      new RegExp(
        `id="fanout-review\\.each-item-${item}" data-item="${item}" data-status="waiting"[\\s\\S]*?href="#wait-item-${item}">answer its question`,
      ),
    );
  }
  assert.match(page, /3\/3 done|0\/3 done · 0 running · 0 failed · 3 waiting/);
  // Ids stay unique with several forms on one page.
  const ids = [...page.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]);
  assert.equal(new Set(ids).size, ids.length, "unique ids");

  // An answer for a request the run does not wait on is refused before anything starts.
  const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
  const refused = await fetch(`${ui.url}runs/${result.runId}/answer`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-stepflow-csrf": secret,
      origin: new URL(ui.url).origin,
    },
    body: JSON.stringify({ requestId: "not-a-request", value: { decision: "next" } }),
  });
  assert.equal(refused.status, 409);
  assert.equal((await refused.json()).code, "INPUT_NOT_WAITING");

  // Without actions each question shows the command that answers it, with its request.
  await using readOnly = await startDashboard(root);
  const plain = await (await fetch(`${readOnly.url}runs/${result.runId}`)).text();
  for (const wait of waits) {
    assert.match(plain, new RegExp(` answer ${result.runId} --request-id ${wait.requestId}`));
  }
  assert.doesNotMatch(plain, /answer-form/);
});

Deno.test("dashboard fan-out live: a followed run's section and graph are sent again as its children end", async () => {
  const { root, definition, store } = await fleet({ concurrency: 2 });
  const paths = files(3);
  // Each review waits for its own gate: the test ends the children one at a time.
  const gates = new Map(paths.map((p) => [p, Promise.withResolvers<void>()]));
  const respond = fleetResponder({ files: paths });
  const backend = new ScriptedBackend(async (req: LlmRequest) => {
    if (req.stepId === "complete.review") await gates.get(reviewedPath(req))!.promise;
    return respond(req);
  });
  const running = new StepFlowRunner(definition, { backend, store }).run({ runId: "fan-live" });
  // Open the page once both first children run.
  let log = await store.readLog("fan-live").catch(() => []);
  while (log.filter((e) => e.type === "fanout_child").length < 2) {
    await new Promise((r) => setTimeout(r, 20));
    log = await store.readLog("fan-live").catch(() => []);
  }
  await using ui = await startDashboard(root);
  const page = await (await fetch(`${ui.url}runs/fan-live`)).text();
  assert.match(page, /0\/3 done · 2 running · 0 failed · 1 not started/);
  const live = page.match(/data-live="([^"]+)"/)![1].replaceAll("&amp;", "&");
  const events = await fetch(new URL(live, ui.url));
  const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const until = async (pattern: RegExp) => {
    while (!pattern.test(text)) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error(`stream ended before ${pattern}: ${text.slice(-2000)}`);
      text += chunk.value;
    }
  };
  gates.get("src/f1.ts")!.resolve();
  await until(/event: fanouts\ndata: "[^\n]*1\/3 done · 2 running · 0 failed/);
  await until(/event: graph\ndata: "[^\n]*review\.each — 1\/3 done/);
  gates.get("src/f0.ts")!.resolve();
  gates.get("src/f2.ts")!.resolve();
  await until(/event: fanouts\ndata: "[^\n]*3\/3 done · 0 running · 0 failed/);
  await until(/event: end/);
  await reader.cancel();
  assert.equal((await running).completionReason, "completed");
});

Deno.test("dashboard fan-out: children whose tool calls wait for permission each get an approval card on the parent's page", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-fanout-ask-" });
  // The reviewer may run `echo` only: its `wc` call asks, and the ask waits for an answer.
  const reviewer = reviewerFiles("tools");
  reviewer.agent = {
    ...reviewer.agent,
    behavior: {
      completionType: "review",
      allowedTools: ["Bash(echo:*)"],
      permissionMode: "acceptEdits",
      permissionAsks: "wait",
    },
  };
  const steps = (reviewer.registry as { steps: Record<string, Record<string, unknown>> }).steps;
  steps["complete.review"].allowedTools = ["Bash(echo:*)"];
  await writeAgent(root, "reviewer", reviewer);
  await writeAgent(root, "fleet", fleetFiles({ concurrency: 2 }));
  const definition = await loadAgentDefinition("fleet", { cwd: root });
  const store = runStoreFor(definition, { cwd: root });
  const paths = files(2);
  const fleetModel = fleetResponder({ files: paths });
  const backend: ScriptedBackend = new ScriptedBackend((req) => {
    if (req.stepId !== "complete.review") return fleetModel(req);
    const path = reviewedPath(req);
    return {
      toolCalls: [{
        name: "Bash",
        id: `c_${path.slice(4, 6)}`,
        arguments: { command: `wc -c ${path}` },
      }],
    };
  });
  const result = await new StepFlowRunner(definition, { backend, store }).run({ cwd: root });
  assert.equal(result.completionReason, "waiting", JSON.stringify(result.error));
  assert.equal(result.waits?.length, 2);
  await using ui = await startDashboard(root, { actions: {} });
  const page = await (await fetch(`${ui.url}runs/${result.runId}`)).text();
  assert.match(page, /2 child runs wait for an answer/);
  for (const wait of result.waits!) {
    const item = wait.child!.item!;
    const start = page.indexOf(`id="approval-card-item-${item}"`);
    assert.ok(start >= 0, `item ${item} has its card`);
    const card = page.slice(start, page.indexOf("</section>", start));
    assert.match(card, new RegExp(`data-child="${wait.child!.runId}"`));
    assert.match(card, /asks to run <code>Bash<\/code>/);
    assert.match(card, /<dt>Step<\/dt><dd><code>complete\.review<\/code>/);
    // The arguments come from the child's own log.
    assert.match(
      card,
      new RegExp(`<pre class="args" id="approval-args-item-${item}">[^<]*wc -c src/f${item}\\.ts`),
    );
    assert.match(
      card,
      new RegExp(`<form id="answer-form-item-${item}"[^>]*data-request="${wait.requestId}"`),
    );
  }
  const ids = [...page.matchAll(/ id="([^"]+)"/g)].map((m) => m[1]);
  assert.equal(new Set(ids).size, ids.length, "unique ids");
});
