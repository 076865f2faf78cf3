/**
 * The dashboard finds run stores that appear while it runs: an agent added to `.agent/` after the
 * start and run for the first time, a first run under a `--store` folder of run folders, and an
 * agent that did not load at the start (its own `logging.directory`) once fixed. Real runs through
 * the real runner, the dashboard through `uiMain` (what `deno task ui` runs) or the library.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { uiMain } from "../../src/cli/ui.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { discoverStores, type RunPage } from "../../src/ui/source.ts";
import { seed004Files, writeAgent } from "../flow/fixtures.ts";
import { startDashboard } from "./browser.ts";
import { demoProject, runFlow } from "./fixtures.ts";

/** Writes the seed 004 agent again under another name (and `logging`), and runs it once. */
async function firstRunOf(
  root: string,
  name: string,
  logging?: Record<string, unknown>,
): Promise<string> {
  await writeNamedAgent(root, name, logging);
  const def = await loadAgentDefinition(name, { cwd: root });
  const store = runStoreFor(def, { cwd: root, durability: "process" });
  const result = await runFlow({ root, def, store }, { continuations: 1 });
  assert.equal(result.success, true);
  return result.runId;
}

async function writeNamedAgent(root: string, name: string, logging?: Record<string, unknown>) {
  const files = seed004Files();
  files.agent = { ...files.agent, name, ...(logging ? { logging } : {}) };
  await writeAgent(root, name, files);
}

async function runIds(base: string): Promise<string[]> {
  const response = await fetch(new URL("/api/runs", base));
  assert.equal(response.status, 200);
  return ((await response.json()) as RunPage).runs.map((r) => `${r.agent}/${r.runId}`);
}

Deno.test("deno task ui: an agent added after the start shows its first run in /api/runs, on its run page and on the Agents page", async () => {
  const project = await demoProject();
  const first = await runFlow(project, { continuations: 1 });
  const stop = new AbortController();
  const listening = Promise.withResolvers<string>();
  let output = "";
  const exit = uiMain(["--port", "0"], {
    cwd: project.root,
    env: {},
    signal: stop.signal,
    stdout: { write: (t) => void (output += t) },
    stderr: { write: (t) => void (output += t) },
    onListen: (url) => listening.resolve(url),
  });
  try {
    const base = await Promise.race([
      listening.promise,
      exit.then((code) => Promise.reject(new Error(`ui exited ${code}: ${output}`))),
    ]);
    assert.deepEqual(await runIds(base), [`issue-solver/${first.runId}`]);

    const added = await firstRunOf(project.root, "triager");
    const ids = await runIds(base);
    assert.ok(ids.includes(`triager/${added}`), `the new agent's run is listed: ${ids}`);
    const runPage = await fetch(new URL(`/runs/${added}`, base));
    assert.equal(runPage.status, 200);
    assert.match(await runPage.text(), /Fixed the flaky login test/);
    const agents = await (await fetch(new URL("/agents", base))).text();
    const row = agents.slice(agents.indexOf('href="/agents/triager"'));
    assert.match(row.slice(0, row.indexOf("</tr>")), /completed/);
    const filtered = await fetch(new URL("/api/runs?agent=triager", base));
    assert.deepEqual(
      ((await filtered.json()) as RunPage).runs.map((r) => r.runId),
      [added],
    );
  } finally {
    stop.abort();
    assert.equal(await exit, 0);
  }
});

Deno.test("dashboard over a --store folder of run folders: a new run folder is listed", async () => {
  const project = await demoProject();
  const first = await runFlow(project, { continuations: 1 });
  const stores = await discoverStores(project.root, "tmp/logs/agents");
  await using ui = await startDashboard(project.root, { stores });
  assert.deepEqual(await runIds(ui.url), [`issue-solver/${first.runId}`]);
  const added = await firstRunOf(project.root, "triager");
  assert.ok((await runIds(ui.url)).includes(`triager/${added}`));
  assert.equal(stores.length, 2, "the new folder's store joined the list");
  // A run of a known store does not find the stores again: the list stays as it is.
  await runFlow(project, { continuations: 1 });
  assert.equal((await runIds(ui.url)).length, 3);
  assert.equal(stores.length, 2);
});

Deno.test("dashboard: an agent that did not load at the start, with its own logging.directory, shows its runs once fixed", async () => {
  const project = await demoProject();
  const logging = { directory: "runs/triage" };
  await writeNamedAgent(project.root, "triager", logging);
  // Broken at the start: its registry is not JSON, so its run folder is not known.
  const registry = join(project.root, ".agent", "triager", "steps_registry.json");
  const good = await Deno.readTextFile(registry);
  await Deno.writeTextFile(registry, "{ not json");
  await using ui = await startDashboard(project.root);
  assert.deepEqual(await runIds(ui.url), []);
  await Deno.writeTextFile(registry, good);
  const added = await firstRunOf(project.root, "triager", logging);
  assert.deepEqual(await runIds(ui.url), [`triager/${added}`]);
  const page = await fetch(new URL(`/runs/${added}`, ui.url));
  assert.equal(page.status, 200);
  await page.body?.cancel();
});
