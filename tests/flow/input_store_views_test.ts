/**
 * A waiting run as the views show it — `--runs` (formatRunList), `--show` (formatRunHistory), the
 * progress lines — on the file store and on PostgreSQL, and an answer through another store
 * instance (another process's view) continues it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { createLineProgress } from "../../src/cli/progress.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { formatRunHistory, formatRunList } from "../../src/store/format.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import type { RunStore } from "../../src/store/types.ts";
import { freshSchema, pg } from "../store/pg_server.ts";
import { writeAgent } from "./fixtures.ts";
import { releaseBackend, releaseFiles } from "./input_fixtures.ts";

async function release() {
  const root = await Deno.makeTempDir();
  await writeAgent(
    root,
    "release",
    releaseFiles({ waitTimeout: { ms: 3_600_000, intent: "abort" } }),
  );
  return { root, definition: await loadAgentDefinition("release", { cwd: root }) };
}

async function waitingThenAnswered(
  definition: Awaited<ReturnType<typeof loadAgentDefinition>>,
  store: RunStore,
  other: RunStore,
) {
  const lines: string[] = [];
  const progress = createLineProgress({ write: (t) => void lines.push(t), color: false });
  const first = await new StepFlowRunner(definition, {
    backend: releaseBackend(),
    store,
    events: progress.events,
  }).run({ args: { version: "2.0" } });
  assert.equal(first.completionReason, "waiting");
  const text = lines.join("");
  assert.match(text, /waiting for an answer \(run /);
  assert.match(text, /run waiting for an answer at approve\.release after 1 iteration/);

  const [summary] = await other.list();
  assert.equal(summary.status, "waiting");
  const list = formatRunList([summary], { color: false });
  assert.match(list, /waiting/);
  assert.doesNotMatch(list, /interrupted/);

  const shown = formatRunHistory(
    await other.loadCheckpoint(first.runId),
    await other.readLog(first.runId),
    { color: false },
  );
  assert.match(shown, /· waiting/);
  assert.match(shown, /Waiting for an answer at input step "approve\.release"/);
  assert.match(shown, /Ship 2\.0\? The plan: tag, build, publish/);
  assert.match(shown, /then resuming the run takes the intent "abort"/);
  assert.match(
    shown,
    new RegExp(`Answer it with: stepflow answer ${first.runId} --value`),
  );

  const done = await new StepFlowRunner(definition, { backend: releaseBackend(), store: other })
    .answer(first.runId, { decision: "next" }, { answeredBy: "carol" });
  assert.equal(done.success, true, JSON.stringify(done.error));
  const after = formatRunHistory(
    await store.loadCheckpoint(first.runId),
    await store.readLog(first.runId),
    { color: false },
  );
  assert.match(after, /approve\.release .*answered by carol at/);
}

Deno.test("a waiting run in --runs, --show and the progress lines (file store)", async () => {
  const { root, definition } = await release();
  const dir = join(root, "runs");
  await waitingThenAnswered(definition, new FileRunStore(dir), new FileRunStore(dir));
});

Deno.test({
  name: "a waiting run in --runs and --show, answered through another connection (PostgreSQL)",
  ignore: pg === undefined,
  async fn() {
    const { definition } = await release();
    const schema = freshSchema();
    const store = new PostgresRunStore(pg!.url, { schema, agent: "release" });
    const other = new PostgresRunStore(pg!.url, { schema, agent: "release" });
    try {
      await waitingThenAnswered(definition, store, other);
    } finally {
      await store.close();
      await other.close();
    }
  },
});
