/**
 * A real run of the tool-fixer agent,
 * held inside a Bash call, shows that call running on its page; released, the call is ok.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { startDashboard } from "./browser.ts";
import { runTools, toolProject } from "./tool_runs.ts";

Deno.test("tool calls: a real run held inside a Bash call shows it running, then ok", async () => {
  const project = await toolProject();
  const agentFile = join(project.root, ".agent/tool-fixer/agent.json");
  const agent = JSON.parse(await Deno.readTextFile(agentFile));
  agent.behavior.permissionMode = "bypassPermissions";
  agent.behavior.allowedTools = ["Read", "Write", "Edit", "Glob", "Grep", "Bash"];
  delete agent.behavior.disallowedTools;
  await Deno.writeTextFile(agentFile, JSON.stringify(agent));
  const def = await loadAgentDefinition("tool-fixer", { cwd: project.root });
  const store = runStoreFor(def, { cwd: project.root, durability: "process" });
  const started = join(project.root, "started");
  const gate = join(project.root, "go");
  // The command says it started (a file), then waits for the test's file.
  const command = `touch ${started}; while [ ! -f ${gate} ]; do sleep 0.05; done; echo released`;
  const watcher = Deno.watchFs(project.root);
  const run = runTools({ ...project, def, store }, {
    runId: "held",
    script: {
      s_f1d0: ["found"],
      "s_f1d0#check": [{ output: { result: "ok", message: "ok" } }],
      s_f1e0: [{ toolCalls: [{ name: "Bash", arguments: { command } }] }, "done"],
      "s_f1e0#check": [{ output: { result: "ok", message: "ok" } }],
    },
  });
  for await (const event of watcher) if (event.paths.includes(started)) break;
  watcher.close();
  await using ui = await startDashboard(project.root);
  const during = await (await fetch(`${ui.url}runs/held`)).text();
  assert.match(
    during,
    /<li class="call running" data-call="0" data-tool="Bash" data-state="running">/,
  );
  await Deno.writeTextFile(gate, "");
  assert.equal((await run).completionReason, "completed");
  const after = await (await fetch(`${ui.url}runs/held`)).text();
  assert.match(after, /data-tool="Bash" data-state="ok"/);
});
