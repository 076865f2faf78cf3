/**
 * The run pages of an agent step's parent and child link to each other, and the dashboard graph
 * draws the agent step as its own kind. Real runs of the real runner over the file store.
 */
import assert from "node:assert/strict";
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
