/**
 * Fan-out steps on the workers: the children are runs of their own, queued as jobs and taken by
 * every worker; the parent gives its slot back while they run and is queued again when the last
 * one ends (or one fails under `fail`); the step's `concurrency` holds over all workers, measured
 * from the children's recorded start and end times.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { submitRun } from "../../src/worker/submit.ts";
import { answerSubmittedRun } from "../../src/worker/answer.ts";
import { fleetResponder, reviewedPath, writeFleetAgents } from "../flow/fan_out_fixtures.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";
import { mostAtOnce, untilEnded } from "./fan_out_worker_helpers.ts";

const files = (n: number) => Array.from({ length: n }, (_, i) => `src/f${i}.ts`);

Deno.test({
  name:
    "fan-out on two workers: children spread over both, concurrency held across them, the parent holds no slot and is picked up after its last child",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow_fanout_workers_" });
    await writeFleetAgents(root, { concurrency: 2, onItemError: "fail" });
    const paths = files(6);
    const drivenBy = new Map<string, string>();
    // One slot per worker: with the parent holding one, two children could never run at once.
    const start = (owner: string) =>
      startWorker({
        store: db,
        agentRoot: join(root, ".agent"),
        pollMs: 200,
        owner,
        log: () => {},
        backendFor: () =>
          Promise.resolve(
            new ScriptedBackend((req) => {
              if (req.stepId === "complete.review") drivenBy.set(req.prompt, owner);
              return fleetResponder({ files: paths, delayMs: () => 150 })(req);
            }),
          ),
      });
    const workers = [await start("wa"), await start("wb")];
    const store = new PostgresRunStore(db, { agent: "fleet" });
    try {
      const definition = await loadAgentDefinition("fleet", { cwd: root });
      const runId = await submitRun(store, definition, {}, { url: db });
      const parent = await untilEnded(store, runId, 60_000);
      assert.equal(parent.status, "completed", JSON.stringify(parent.state.end));
      const handoff = (parent.state.handoff as Record<string, unknown>)["review.each"] as {
        results: { item: string; status: string; output: { verdict: string } }[];
        counts: unknown;
      };
      assert.deepEqual(handoff.results.map((r) => r.item), paths);
      assert.deepEqual(handoff.results.map((r) => r.output.verdict), paths.map((p) => `ok ${p}`));
      assert.deepEqual(handoff.counts, { total: 6, completed: 6, failed: 0 });
      // One child per item, each a completed run of the reviewer linked to its parent.
      const [fanOut] = fanOutsOf(await store.readLog(runId));
      const children: string[] = [];
      for (const item of fanOut.items.values()) {
        assert.equal(item.children.length, 1);
        const child = (await store.loadCheckpoint(item.children[0].childRunId))!;
        assert.equal(child.status, "completed");
        assert.equal(child.agent, "reviewer");
        assert.equal((child.state.parent as { runId: string }).runId, runId);
        children.push(child.runId);
      }
      assert.deepEqual(new Set(drivenBy.values()), new Set(["wa", "wb"]), "both workers drove");
      // Two at once (so the parent held no slot of the two), never three.
      assert.equal(await mostAtOnce(store, children), 2);
    } finally {
      for (const w of workers) await w.stop();
      await store.close();
    }
  },
});

Deno.test({
  name:
    "fan-out on workers under onItemError fail: the first failed child wakes the parent, the queued ones never start, the step fails",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow_fanout_workers_fail_" });
    await writeFleetAgents(root, { concurrency: 2, onItemError: "fail" });
    const paths = files(8);
    const worker = await startWorker({
      store: db,
      agentRoot: join(root, ".agent"),
      concurrency: 3,
      pollMs: 200,
      log: () => {},
      backendFor: () =>
        Promise.resolve(
          new ScriptedBackend(
            fleetResponder({
              files: paths,
              failing: (p) => p === "src/f1.ts",
              delayMs: (p) => p === "src/f1.ts" ? 20 : 1_000,
            }),
          ),
        ),
    });
    const store = new PostgresRunStore(db, { agent: "fleet" });
    try {
      const definition = await loadAgentDefinition("fleet", { cwd: root });
      const runId = await submitRun(store, definition, {}, { url: db });
      const parent = await untilEnded(store, runId, 60_000);
      assert.equal(parent.status, "failed");
      assert.equal(
        (parent.state.end as { error: { code: string } }).error.code,
        "FANOUT_ITEM_FAILED",
      );
      const [fanOut] = fanOutsOf(await store.readLog(runId));
      assert.equal(fanOut.items.size, 8);
      const reviewer = new PostgresRunStore(db, { agent: "reviewer" });
      try {
        const runs = (await reviewer.list()).filter((r) => r.agent === "reviewer");
        // Items 0 and 1 went out together and 1 failed at once: one more went out in its place
        // (more only on a machine so busy that the parent's pickup took seconds); the others never
        // started, and never more than two at once.
        assert.ok(runs.length >= 3 && runs.length < 8, `children that ran: ${runs.length}`);
        assert.ok(await mostAtOnce(reviewer, runs.map((r) => r.runId)) <= 2);
      } finally {
        await reviewer.close();
      }
    } finally {
      await worker.stop();
      await store.close();
    }
  },
});

Deno.test({
  name:
    "fan-out on workers run again after it failed (onError retry): a new child for the failed item only, on the workers; the completed items keep theirs",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow_fanout_workers_redrive_" });
    await writeFleetAgents(root, { concurrency: 1, onItemError: "fail", onError: "retry=1" });
    const paths = files(3);
    const failedOnce = new Set<string>();
    const model = fleetResponder({ files: paths });
    const worker = await startWorker({
      store: db,
      agentRoot: join(root, ".agent"),
      concurrency: 2,
      pollMs: 200,
      log: () => {},
      backendFor: () =>
        Promise.resolve(
          new ScriptedBackend((req) => {
            const path = reviewedPath(req);
            // The second item's first review fails; its next child's review succeeds.
            if (req.stepId === "complete.review" && path === "src/f1.ts" && !failedOnce.has(path)) {
              failedOnce.add(path);
              return { error: `cannot review ${path}` };
            }
            return model(req);
          }),
        ),
    });
    const store = new PostgresRunStore(db, { agent: "fleet" });
    try {
      const definition = await loadAgentDefinition("fleet", { cwd: root });
      const runId = await submitRun(store, definition, {}, { url: db });
      const parent = await untilEnded(store, runId, 60_000);
      assert.equal(parent.status, "completed", JSON.stringify(parent.state.end));
      const handoff = (parent.state.handoff as Record<string, unknown>)["review.each"] as {
        results: { item: string; status: string; output: { verdict: string } }[];
        counts: unknown;
      };
      assert.deepEqual(handoff.results.map((r) => r.output.verdict), paths.map((p) => `ok ${p}`));
      assert.deepEqual(handoff.counts, { total: 3, completed: 3, failed: 0 });
      const [fanOut] = fanOutsOf(await store.readLog(runId));
      const attempts = [...fanOut.items.values()].map((i) => i.children.length);
      assert.deepEqual(attempts, [1, 2, 1], "a second child for the failed item only");
      const reviewer = new PostgresRunStore(db, { agent: "reviewer" });
      try {
        const failed = fanOut.items.get(1)!.children;
        assert.equal((await reviewer.loadCheckpoint(failed[0].childRunId))?.status, "failed");
        assert.equal((await reviewer.loadCheckpoint(failed[1].childRunId))?.status, "completed");
      } finally {
        await reviewer.close();
      }
    } finally {
      await worker.stop();
      await store.close();
    }
  },
});

Deno.test({
  name:
    "fan-out on workers: an answered waiting child waits for a place among the step's concurrency, never over it",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow_fanout_workers_answer_" });
    await writeFleetAgents(root, { concurrency: 1, onItemError: "fail" }, "confirm");
    const paths = files(2);
    const model = fleetResponder({ files: paths, delayMs: (p) => p === "src/f1.ts" ? 1_500 : 0 });
    const calls: { at: number; step: string; path: string }[] = [];
    let secondReviewing!: () => void;
    const secondStarted = new Promise<void>((r) => secondReviewing = r);
    const worker = await startWorker({
      store: db,
      agentRoot: join(root, ".agent"),
      concurrency: 3,
      pollMs: 200,
      log: () => {},
      backendFor: () =>
        Promise.resolve(
          new ScriptedBackend((req) => {
            const path = reviewedPath(req);
            calls.push({ at: Date.now(), step: req.stepId, path });
            if (req.stepId === "review.file" && path === "src/f1.ts") secondReviewing();
            return model(req);
          }),
        ),
    });
    const store = new PostgresRunStore(db, { agent: "fleet" });
    const reviewer = new PostgresRunStore(db, { agent: "reviewer" });
    try {
      const fleet = await loadAgentDefinition("fleet", { cwd: root });
      const reviewerDef = await loadAgentDefinition("reviewer", { cwd: root });
      const runId = await submitRun(store, fleet, {}, { url: db });
      // The first child waits for a person, so the second goes out (one place) and reviews for
      // 1.5 s; the first child is answered meanwhile.
      await secondStarted;
      const [fanOut] = fanOutsOf(await store.readLog(runId));
      const first = fanOut.items.get(0)!.children[0].childRunId;
      const waiting = (await reviewer.loadCheckpoint(first))!;
      assert.equal(waiting.status, "waiting");
      const request = (waiting.state.waiting as { requestId: string }).requestId;
      const answeredAt = Date.now();
      await answerSubmittedRun(reviewer, reviewerDef, first, { decision: "next", note: "ok" }, {
        url: db,
        requestId: request,
      });
      // Both children then wait for answers (the second at its confirm step): answer the second.
      let second: string | undefined;
      for (let i = 0; i < 300 && !second; i++) {
        const items = fanOutsOf(await store.readLog(runId))[0].items;
        const id = items.get(1)?.children[0]?.childRunId;
        const cp = id ? await reviewer.loadCheckpoint(id) : undefined;
        if (cp?.status === "waiting") second = id;
        else await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(second, "the second child reached its confirm step");
      const secondWait = (await reviewer.loadCheckpoint(second!))!;
      await answerSubmittedRun(reviewer, reviewerDef, second!, { decision: "next" }, {
        url: db,
        requestId: (secondWait.state.waiting as { requestId: string }).requestId,
      });
      const parent = await untilEnded(store, runId, 60_000);
      assert.equal(parent.status, "completed", JSON.stringify(parent.state.end));
      // The answered first child went on only after the second left its place (it reviewed
      // 1.5 s from its start): its closing call came after that, not at the answer.
      const secondReview = calls.find((c) => c.step === "review.file" && c.path === "src/f1.ts")!;
      const firstClose = calls.find((c) => c.step === "complete.file" && c.path === "src/f0.ts")!;
      assert.ok(firstClose.at >= answeredAt, "closed after its answer");
      assert.ok(
        firstClose.at - secondReview.at >= 1_400,
        `the answered child ran while the other held the one place (${
          firstClose.at - secondReview.at
        } ms after the other's review began)`,
      );
    } finally {
      await worker.stop();
      await reviewer.close();
      await store.close();
    }
  },
});
