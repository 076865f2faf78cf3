/**
 * The parent's run page opens an agent step's child run nested in its timeline (on demand, from
 * the child's log in the same store), through the real dashboard server over a real release-train
 * run of the real runner with the example's scripted backend.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FileRunStore } from "../../src/store/file.ts";
import { CHILD_ROWS_SHOWN } from "../../src/ui/child_timeline.ts";
import { timelineRow } from "../../src/ui/pages.ts";
import { foldLog, newTimeline } from "../../src/ui/timeline.ts";
import { startDashboard } from "./browser.ts";
import { releaseTrainRun } from "./release_train.ts";

/** The index of the parent's agent-step row, read from its page. */
function agentRowIndex(page: string): number {
  const row = page.match(/id="row-(\d+)" data-step="ship\.train"/);
  assert.ok(row, "the page has the agent step's row");
  return Number(row[1]);
}

Deno.test("run page: the agent step's row opens the child run's timeline nested under it, linking both ways", async () => {
  const { root, parentId, childId } = await releaseTrainRun();
  await using ui = await startDashboard(root);
  const page = await (await fetch(`${ui.url}runs/${parentId}`)).text();
  const index = agentRowIndex(page);
  const src = `/runs/${parentId}/rows/${index}/child`;
  assert.match(page, new RegExp(`<details class="child" data-src="${src}">`));
  assert.doesNotMatch(page, /data-step="plan\.release"/, "the child's rows load when opened");

  const res = await fetch(new URL(src, ui.url));
  assert.equal(res.status, 200);
  const nested = await res.text();
  assert.match(nested, new RegExp(`Child run <a href="/runs/${childId}">${childId}</a>`));
  assert.match(nested, /class="status completed"/);
  for (const step of ["plan.release", "approve.release", "complete.release"]) {
    assert.match(nested, new RegExp(`data-step="${step.replace(".", "\\.")}"`), step);
  }
  // The nested rows' ids and parts name the child run: they do not clash with the parent's rows.
  assert.doesNotMatch(nested, /id="row-/);
  assert.match(nested, new RegExp(`id="run-${childId}-row-\\d+"`));
  assert.match(nested, new RegExp(`data-src="/runs/${childId}/rows/\\d+/prompt"`));
  // And the child's page links back to the parent.
  const childPage = await (await fetch(`${ui.url}runs/${childId}`)).text();
  assert.match(childPage, new RegExp(`Parent run</span><a href="/runs/${parentId}">`));
  // A row without a child run has no such part.
  assert.equal((await fetch(`${ui.url}runs/${parentId}/rows/0/child`)).status, 404);
});

Deno.test("run page: a child with many rows shows the first ones and a link; a missing child says so", async () => {
  const { root, parentId, childId, childStoreDir } = await releaseTrainRun();
  // Many more child iterations than are shown nested: copies of its step lines, as the runner
  // would append them over a long child run.
  const logFile = join(childStoreDir, `${childId}.jsonl`);
  const lines = (await Deno.readTextFile(logFile)).trimEnd().split("\n");
  const steps = lines.filter((l) => /"type":"step_(start|end)"/.test(l));
  assert.ok(steps.length >= 2, "the child logged its steps");
  const extra = Array.from({ length: CHILD_ROWS_SHOWN }, () => steps).flat();
  await Deno.writeTextFile(logFile, [...lines, ...extra].join("\n") + "\n");
  await using ui = await startDashboard(root);
  const page = await (await fetch(`${ui.url}runs/${parentId}`)).text();
  const src = `${ui.url}runs/${parentId}/rows/${agentRowIndex(page)}/child`;
  const nested = await (await fetch(src)).text();
  assert.equal(nested.match(/class="row /g)?.length, CHILD_ROWS_SHOWN);
  assert.match(
    nested,
    new RegExp(
      `Showing the first ${CHILD_ROWS_SHOWN} of \\d+ rows\\. <a href="/runs/${childId}">The child run's page</a>`,
    ),
  );

  await Deno.remove(logFile);
  await Deno.remove(join(childStoreDir, `${childId}.checkpoint.json`)).catch(() => {});
  const missing = await fetch(src);
  assert.equal(missing.status, 200);
  assert.match(
    await missing.text(),
    /is not in this store \(yet\): it has no checkpoint and no log/,
  );
  // A log that cannot be read (here a folder where the file should be).
  await Deno.mkdir(logFile);
  const unreadable = await fetch(src);
  assert.equal(unreadable.status, 200);
  assert.match(
    await unreadable.text(),
    new RegExp(`<div class="errors">Could not read the child run <a href="/runs/${childId}">`),
  );
});

Deno.test("timeline row: nested one level deep — an agent step's row drawn nested links its child run, it does not nest it", async () => {
  const { parentId, childId, storeDir } = await releaseTrainRun();
  const store = new FileRunStore(storeDir);
  const timeline = newTimeline();
  foldLog(timeline, await store.readLog(parentId));
  const agentRow = timeline.rows.find((r) => r.kind === "iteration" && r.stepId === "ship.train")!;
  const top = timelineRow(parentId, agentRow).text;
  assert.match(top, /<details class="child"/);
  const nested = timelineRow(parentId, agentRow, { nested: true }).text;
  assert.match(nested, new RegExp(`child run</span> <a href="/runs/${childId}">${childId}</a>`));
  assert.doesNotMatch(nested, /<details class="child"/);
  assert.match(nested, new RegExp(`id="run-${parentId}-row-${agentRow.index}"`));
});

Deno.test("run page: a hostile child run id in the parent's log is refused by the store and shown as text", async () => {
  const { root, parentId, childId, storeDir } = await releaseTrainRun();
  const logFile = join(storeDir, `${parentId}.jsonl`);
  const hostile = `"><script>window.x=1</script>`;
  const log = await Deno.readTextFile(logFile);
  await Deno.writeTextFile(
    logFile,
    log.replaceAll(childId, JSON.stringify(hostile).slice(1, -1)),
  );
  await using ui = await startDashboard(root);
  const page = await (await fetch(`${ui.url}runs/${parentId}`)).text();
  assert.doesNotMatch(page, /<script>window/);
  const nested = await (await fetch(`${ui.url}runs/${parentId}/rows/${agentRowIndex(page)}/child`))
    .text();
  assert.doesNotMatch(nested, /<script>window/);
  assert.match(nested, /Could not read the child run <a href="\/runs\/%22%3E%3Cscript%3E/);
  assert.match(nested, /&lt;script&gt;window\.x=1&lt;\/script&gt;/);
  assert.match(nested, /Invalid run id/);
});
