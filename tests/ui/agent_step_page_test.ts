/**
 * The run pages of an agent step's parent and child link to each other, and the dashboard graph
 * draws the agent step as its own kind. Real runs of the real runner over the file store.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { runStoreFor } from "../../src/store/mod.ts";
import { shipBackend, writeShipAgents } from "../flow/agent_step_fixtures.ts";
import { startDashboard } from "./browser.ts";

Deno.test("run page: a parent links to its child run (in its timeline) and the child back to its parent", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-agent-" });
  await writeShipAgents(root);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const store = runStoreFor(definition, { cwd: root, durability: "process" });
  const first = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run();
  const childId = first.waiting!.child!.runId;
  await using ui = await startDashboard(root);
  // While the child waits, the parent's open agent-step row already names it.
  const waitingPage = await (await fetch(`${ui.url}runs/${first.runId}`)).text();
  assert.match(
    waitingPage,
    new RegExp(`child run</span> <a href="/runs/${childId}">${childId}</a>`),
  );

  await new StepFlowRunner(definition, { backend: shipBackend(), store }).answer(first.runId, {
    decision: "next",
  });
  const parentPage = await (await fetch(`${ui.url}runs/${first.runId}`)).text();
  assert.match(parentPage, new RegExp(`<a href="/runs/${childId}">${childId}</a>`));
  assert.match(parentPage, /class="node agent/);
  const childPage = await (await fetch(`${ui.url}runs/${childId}`)).text();
  assert.match(
    childPage,
    new RegExp(
      `Parent run</span><a href="/runs/${first.runId}">${first.runId}</a> \\(agent step <code>release\\.ship</code>\\)`,
    ),
  );
});

Deno.test("dashboard: a parent waiting on its child shows the child's question and form; its answer continues both", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-agent-" });
  await writeShipAgents(root);
  await Deno.writeTextFile(
    join(root, "ship.script.json"),
    JSON.stringify({
      "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
      "complete.ship": [{ output: { summary: "done", next_action: { action: "complete" } } }],
    }),
  );
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const store = runStoreFor(definition, { cwd: root });
  const first = await new StepFlowRunner(definition, { backend: shipBackend(), store }).run({
    cwd: root,
  });
  const { requestId } = first.waiting!;
  const children: Deno.ChildProcess[] = [];
  await using ui = await startDashboard(root, {
    actions: {
      runAgentArgs: ["--script", "ship.script.json"],
      onSpawn: (c) => void children.push(c),
    },
  });
  const page = await (await fetch(`${ui.url}runs/${first.runId}`)).text();
  assert.match(page, /Ship 2\.0\.0\? The plan: tag, publish/);
  assert.match(page, new RegExp(`id="answer-form"[^>]*data-request="${requestId}"`));
  assert.match(page, /<option value="&quot;next&quot;">next<\/option>/, "the child's schema");
  const secret = page.match(/data-csrf="([0-9a-f]+)"/)![1];
  const res = await fetch(`${ui.url}runs/${first.runId}/answer`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-stepflow-csrf": secret,
      origin: new URL(ui.url).origin,
    },
    body: JSON.stringify({ requestId, value: { decision: "next" } }),
  });
  const text = await res.text();
  assert.ok(res.status === 202 || res.status === 200, text);
  assert.equal((await children.at(-1)!.status).code, 0);
  assert.equal((await store.loadCheckpoint(first.runId))?.status, "completed");
  const childId = first.waiting!.child!.runId;
  // The child is a run of its own agent, in that agent's folder.
  const childStore = store.forAgent(await loadAgentDefinition("release", { cwd: root }));
  assert.equal((await childStore.loadCheckpoint(childId))?.status, "completed");
  const answers = (await childStore.readLog(childId)).filter((e) => e.type === "input_answer");
  assert.equal(answers.length, 1);
  assert.equal(answers[0].answeredBy, "dashboard");
});
