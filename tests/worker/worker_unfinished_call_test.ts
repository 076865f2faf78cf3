/**
 * A worker killed (SIGKILL) while a Bash call of a step with tools runs: the worker that takes the
 * run over finds the call started but unfinished (`TOOL_CALL_UNFINISHED`, Bash is not idempotent).
 * It does not retry the job (no second attempt in the queue): it holds the run — open, shown
 * `interrupted` with the error's message by `--runs`, `--show` and the dashboard, and in its own
 * log — and Bash runs again only when someone asks for it:
 * `--resume RUN_ID --rerun-unfinished-call --submit` hands it back. That permission is used only by
 * the worker that holds the run's lease (duplicate jobs that lose the lock leave it), and covers
 * the call the user saw unfinished, not a new start of it: a worker killed while running it again
 * leaves the run held again, and asking once more completes it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { seed001Files, writeAgent } from "../flow/fixtures.ts";
import { runCli, spawnCli } from "../cli/helpers.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { pgConnectionOf } from "../../src/store/postgres.ts";
import type { StepflowError } from "../../src/errors.ts";
import { discoverStores } from "../../src/ui/source.ts";
import { openRunQueue } from "../../src/worker/queue.ts";
import { followRun } from "../../src/worker/submit.ts";
import { startDashboard } from "../ui/browser.ts";
import { waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

const ok = { output: { result: "ok", message: "fine" } };
const SCRIPT = JSON.stringify({
  s_a8f3: ["Plan: append a line."],
  "s_a8f3#check": [ok],
  s_b2c1: [
    // The sleep keeps the call running long enough to kill its worker in it.
    { toolCalls: [{ name: "Bash", arguments: { command: "echo done >> out.txt && sleep 1" } }] },
    "Appended one line.",
  ],
  "s_b2c1#check": [ok],
  s_c9d4: ["Done."],
  "s_c9d4#check": [ok],
});

async function setup(): Promise<string> {
  const user = await Deno.makeTempDir({ prefix: "stepflow-worker-unfinished-" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Bash"],
    permissionMode: "bypassPermissions",
  });
  await writeAgent(user, "code-improver", files);
  await Deno.writeTextFile(join(user, "tool.script.json"), SCRIPT);
  return user;
}

const bashLines = async (user: string) =>
  (await Deno.readTextFile(join(user, "out.txt")).catch(() => "")).split("\n").filter(Boolean)
    .length;

/** Collects a child's stderr as it comes, to wait for lines. */
function collect(stream: ReadableStream<Uint8Array>): { text: () => string; done: Promise<void> } {
  let text = "";
  const done = (async () => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  })();
  return { text: () => text, done };
}

Deno.test({
  name:
    "worker killed mid Bash call: the takeover holds the run (no retry), says why; --resume --rerun-unfinished-call --submit completes it",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const user = await setup();
    const store = new PostgresRunStore(db, { agent: "code-improver" });
    const workerArgs = [
      "--store",
      db,
      "--script",
      "tool.script.json",
      "--lease-ms",
      "800",
      "--poll-ms",
      "100",
    ];
    const cli = (...args: string[]) =>
      runCli(["--agent", "code-improver", "--store", db, ...args], { userDir: user });
    const first = spawnCli("worker", workerArgs, { userDir: user, stdout: "null" });
    const firstErr = collect(first.stderr);
    let second: Deno.ChildProcess | undefined;
    const others: Deno.ChildProcess[] = [];
    const streams: Promise<void>[] = [];
    try {
      const submitted = await cli("--topic", "t", "--submit");
      assert.equal(submitted.code, 0, submitted.stderr);
      const runId = submitted.stdout.trim();

      // The Bash call runs (its start is durable before it runs): kill the worker holding the run.
      await waitFor("the Bash call", async () => (await bashLines(user)) > 0 || undefined);
      const holder = await waitFor("the holder", async () => (await store.summary(runId))?.worker);
      Deno.kill(Number(holder.split(":").pop()), "SIGKILL");
      await first.status;
      await firstErr.done;

      // Another worker takes the run over once the lease expired, and holds it.
      second = spawnCli("worker", workerArgs, { userDir: user, stdout: "null" });
      const secondErr = collect(second.stderr);
      const held = await waitFor(
        "the held run",
        async () => (await store.summary(runId))?.error,
        60_000, // a failure cap: a new worker's start and the lease's expiry on a loaded machine
      );
      assert.match(held, /was stopped \(killed or crashed\) in step "s_b2c1"/);
      assert.match(held, /Bash \(echo done >> out\.txt && sleep 1\)/);
      assert.match(held, /`stepflow resume \S+ --rerun-unfinished-call --submit`/);
      await waitFor(
        "the worker's log",
        () => Promise.resolve(/held/.test(secondErr.text()) || undefined),
      );
      assert.match(
        secondErr.text(),
        new RegExp(
          `error: run ${runId} \\(TOOL_CALL_UNFINISHED\\), held: Run ${runId} was stopped`,
        ),
      );

      // Not retried: the job the takeover ran completed; nothing waits to run it again.
      const c = await pgConnectionOf(store);
      const jobsOfRun = async () =>
        (await c.query<{ state: string; retry_count: number }>(
          `SELECT state, retry_count FROM stepflow_queue.job WHERE data->>'runId' = $1`,
          [runId],
        )).rows;
      // The queue completes the job once the worker's handler returned, just after its log line.
      const jobs = await waitFor("the takeover's job completed", async () => {
        const rows = await jobsOfRun();
        return rows.some((j) => j.state === "completed") ? rows : undefined;
      });
      // The dead worker's job stays active (it would expire in a day; a worker then drops it).
      assert.deepEqual(
        jobs.filter((j) => j.state !== "completed" && j.state !== "active"),
        [],
        JSON.stringify(jobs),
      );
      assert.ok(jobs.every((j) => j.retry_count === 0), JSON.stringify(jobs));
      assert.equal(await bashLines(user), 1, "the held run ran nothing");
      assert.equal((await store.summary(runId))?.status, "running");
      assert.equal((await store.summary(runId))?.live, false);

      // `--submit --wait` following the run ends with the message (exit 2, as a --resume here).
      await assert.rejects(followRun(store, runId), (error: StepflowError) => {
        assert.equal(error.code, "TOOL_CALL_UNFINISHED");
        assert.equal(error.message, held);
        return true;
      });

      const listed = await cli("--runs");
      assert.match(listed.stdout, new RegExp(`${runId}.*interrupted`));
      assert.match(listed.stdout, new RegExp(`! ${runId}: Run ${runId} was stopped`));
      // No plain --resume hint for it: that would stop at the same call.
      assert.doesNotMatch(listed.stdout, /Continue an interrupted run with/);
      const shown = await cli("--show", runId);
      assert.match(shown.stdout, / · interrupted\n/);
      assert.match(shown.stdout, /Held by the workers: Run \S+ was stopped/);
      assert.match(shown.stdout, /--rerun-unfinished-call --submit/);
      assert.doesNotMatch(shown.stdout, /Interrupted: continue it with/);
      const shownJson = JSON.parse((await cli("--show", runId, "--json")).stdout);
      assert.equal(shownJson.shownStatus, "interrupted");
      assert.equal(shownJson.error, held);

      const stores = await discoverStores(user, db);
      try {
        await using ui = await startDashboard(user, { stores });
        const page = await (await fetch(`${ui.url}runs/${runId}`)).text();
        assert.match(page, /data-status="interrupted"/);
        assert.match(page, /was stopped \(killed or crashed\) in step/);
        assert.match(page, /--rerun-unfinished-call --submit/);
      } finally {
        for (const s of stores) await (s.store as PostgresRunStore).close();
      }

      // A resume here without the permission is refused the same way and leaves the run held.
      const refused = await cli("--resume", runId);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, /TOOL_CALL_UNFINISHED|was stopped \(killed or crashed\)/);
      assert.equal((await store.summary(runId))?.error, held);
      // A stale job of the held run (the dead worker's, once it expires) is dropped.
      const queue = await openRunQueue(db);
      await queue.send(runId);
      await queue.stop({ graceful: false });
      await waitFor(
        "the dropped job",
        () =>
          Promise.resolve(/held until someone continues it/.test(secondErr.text()) || undefined),
      );
      assert.equal(await bashLines(user), 1, "the held run ran nothing");

      // --submit --resume without the permission would be held again: refused, with the way on.
      const bare = await cli("--resume", runId, "--submit");
      assert.equal(bare.code, 2, bare.stderr);
      assert.match(
        bare.stderr,
        /hands back a run the workers hold .*: add --rerun-unfinished-call/,
      );

      // The documented continuation, raced: the hand-back is queued while another drive holds
      // the run's lease (a duplicate job that won the lock first), and two workers get jobs of
      // the run. The workers that lose the lock must not use the permission up: it is read only
      // under the lock, by the drive that resumes the run, and Bash runs again exactly once.
      second.kill("SIGTERM");
      await second.status;
      second = undefined;
      const handed = await cli("--resume", runId, "--rerun-unfinished-call", "--submit");
      assert.equal(handed.code, 0, handed.stderr);
      const request = async () =>
        (await c.query<{ request: string }>(
          `SELECT request::text AS request FROM ${c.schema}.runs WHERE run_id = $1`,
          [runId],
        )).rows[0].request;
      assert.match(await request(), /"rerunUnfinishedCall": \{"beforeLine": \d+\}/);
      const rival = new PostgresRunStore(db, { agent: "code-improver" });
      const lease = await rival.lock(runId);
      const duplicate = await openRunQueue(db);
      await duplicate.send(runId);
      const racers = [0, 1].map(() => {
        const child = spawnCli("worker", workerArgs, { userDir: user, stdout: "null" });
        return { child, err: collect(child.stderr) };
      });
      racers.forEach((r) => (others.push(r.child), streams.push(r.err.done)));
      const lost = () =>
        racers.map((r) => r.err.text()).join("").split(`is being driven by ${rival.owner}`)
          .length - 1;
      await waitFor("both jobs lost to the lease", () => Promise.resolve(lost() >= 2 || undefined));
      assert.match(await request(), /rerunUnfinishedCall/, "the losers left the permission");
      assert.equal(await bashLines(user), 1, "nothing ran while the lease was held");
      // The lease is released; two jobs of the run race for it.
      await lease.release();
      await rival.close();
      await duplicate.send(runId);
      await duplicate.send(runId);
      await duplicate.stop({ graceful: false });
      // One racer resumes it with the permission and runs Bash again; it is killed in that call.
      await waitFor("Bash run again", async () => (await bashLines(user)) > 1 || undefined);
      const winner = await waitFor("the winner", async () => (await store.summary(runId))?.worker);
      const winnerPid = Number(winner.split(":").pop());
      const survivor = racers.find((r) => r.child.pid !== winnerPid)!;
      assert.ok(racers.some((r) => r.child.pid === winnerPid), winner);
      Deno.kill(winnerPid, "SIGKILL");
      // The permission covered the call the user saw unfinished, not this new start of it: the
      // survivor takes the run over and holds it again rather than run Bash a third time unasked.
      const heldAgain = await waitFor(
        "the run held again",
        async () => (await store.summary(runId))?.error,
        20_000,
      );
      assert.match(heldAgain, /--rerun-unfinished-call --submit/);
      assert.equal(await bashLines(user), 2, "Bash ran exactly once more");
      assert.doesNotMatch(await request(), /rerunUnfinishedCall/, "the spent permission is gone");

      // Asked again: the survivor resumes it and completes it.
      const last = await cli("--resume", runId, "--rerun-unfinished-call", "--submit", "--wait");
      assert.equal(last.code, 0, last.stderr);
      assert.match(last.stdout, /completed/);
      assert.equal(await bashLines(user), 3);
      assert.equal((await store.summary(runId))?.error, undefined);
      await waitFor(
        "the survivor's log",
        () =>
          Promise.resolve(
            new RegExp(`run ${runId}: completed after`).test(survivor.err.text()) || undefined,
          ),
      );
      await waitFor(
        "the permission cleared",
        async () => !/rerunUnfinishedCall/.test(await request()) || undefined,
      );
      // An ended run is not handed back.
      const again = await cli("--resume", runId, "--rerun-unfinished-call", "--submit");
      assert.notEqual(again.code, 0);
      assert.match(again.stderr, /is completed: only an open run that nobody drives/);
      assert.doesNotMatch(again.stderr, /\n\s+at /, "no stack trace");
    } finally {
      try {
        first.kill("SIGKILL");
      } catch {
        // gone
      }
      for (const child of [...(second ? [second] : []), ...others]) {
        try {
          child.kill("SIGTERM");
        } catch {
          // gone
        }
        await child.status;
      }
      await Promise.all(streams);
      await store.close();
      await Deno.remove(user, { recursive: true }).catch(() => {});
    }
  },
});
