/**
 * SIGKILL campaign of answers on workers (tests/kill_campaign.ts), on a real PostgreSQL with real
 * worker processes (tests/worker/fixtures/answer_worker.ts, lease 1.5 s):
 *
 * - the answering process (`answerSubmittedRun`: record, then re-queue; a real process) killed
 *   with the run's lease just taken (before or while it records), and right after the answer was
 *   committed (before or after the run was put back on the queue): nothing recorded and the run
 *   still waits (the user answers again), or the answer recorded and a worker continues the run by
 *   itself (the orphan check re-queues a run nobody queued);
 * - the worker continuing the answered run killed while its next model call is in flight: another
 *   worker resumes the run after the lease expired.
 *
 * After each kill every answer is recorded exactly once and the run's history equals an
 * uninterrupted run's.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { HistoryEntry } from "../../src/flow/types.ts";
import { historyFromLog } from "../../src/store/format.ts";
import { hostName } from "../../src/store/file_lock.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { submissionOf } from "../../src/worker/submissions.ts";
import { submitRun } from "../../src/worker/submit.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { releaseFiles } from "../flow/input_fixtures.ts";
import { FULL_CAMPAIGN, killAtMoment, pause } from "../kill_campaign.ts";
import { REPO, waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

const LEASE_MS = "1500";
const FIXTURES = join(REPO, "tests/worker/fixtures");
const ROUNDS = FULL_CAMPAIGN ? 3 : 1;

interface Proc {
  child: Deno.ChildProcess;
  /** Resolves with the first stdout line matching `pattern`. */
  line(pattern: RegExp, ended?: AbortSignal): Promise<string | undefined>;
}

function start(script: string, args: string[]): Proc {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(FIXTURES, script), ...args],
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  void child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({
      write(chunk) {
        lines.push(...chunk.split("\n"));
        for (const wake of [...waiters]) wake();
      },
    }),
  ).catch(() => {}).finally(() => {
    for (const wake of [...waiters]) wake();
  });
  let done = false;
  child.status.finally(() => done = true);
  return {
    child,
    async line(pattern, ended) {
      for (;;) {
        const found = lines.find((l) => pattern.test(l));
        if (found !== undefined) return found;
        if (done || ended?.aborted) return undefined;
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, 50);
          waiters.add(wake);
        });
      }
    },
  };
}

async function stopAll(procs: Proc[]): Promise<void> {
  for (const p of procs) {
    try {
      p.child.kill("SIGKILL");
    } catch {
      // gone
    }
    await p.child.status;
  }
}

/** History entries without what differs between two runs (timing, who answered when). */
function comparable(history: readonly HistoryEntry[]): unknown[] {
  return history.map(({ startedAt: _s, durationMs: _d, input: _i, ...rest }) => rest);
}

type Moment = "locked" | "recorded" | "driving";

Deno.test({
  name:
    "workers: SIGKILL of the answering process or of the worker continuing the run → the answer recorded once, the history of an uninterrupted run",
  ignore: pg === undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow-answer-kill-" });
    await writeAgent(root, "release", releaseFiles());
    const agentRoot = join(root, ".agent");
    const definition = await loadAgentDefinition(join(agentRoot, "release"));
    const store = new PostgresRunStore(db, { agent: "release" });
    await store.list(); // the schemas exist before the workers race to create them
    const procs: Proc[] = [];
    const worker = () => {
      const w = start("answer_worker.ts", [db, agentRoot, LEASE_MS, "400"]);
      procs.push(w);
      return w;
    };
    let round = 0;
    /** A submitted run waiting at approve.release (driven there by a live worker). */
    const waitingRun = async (): Promise<{ runId: string; note: string }> => {
      const note = `r${++round}`;
      const runId = await submitRun(store, definition, { args: { version: note } }, { url: db });
      // Waiting, and let go: the worker released its lease after the `waiting` checkpoint.
      await waitFor(`run ${runId} to wait`, async () => {
        const submitted = await submissionOf(store, runId);
        return submitted?.status === "waiting" && submitted.worker === undefined ? true : undefined;
      }, 30_000);
      return { runId, note };
    };
    const value = (note: string) => JSON.stringify({ decision: "next", note });
    /** The answered run's end, then the checks of every kill. */
    const verify = async (runId: string, what: string, reference?: unknown[]) => {
      await waitFor(
        `${what}: run ${runId} to complete`,
        async () => (await store.loadCheckpoint(runId))?.status === "completed" ? true : undefined,
        30_000,
      );
      const checkpoint = (await store.loadCheckpoint(runId))!;
      const log = await store.readLog(runId);
      const answers = log.filter((e) => e.type === "input_answer");
      assert.equal(answers.length, 1, `${what}: one answer recorded`);
      assert.equal(log.filter((e) => e.type === "run_end").length, 1, `${what}: one run_end`);
      const history = comparable(
        historyFromLog(log, checkpoint.state.historyLength as number) as HistoryEntry[],
      );
      assert.deepEqual(
        history.map((e) => (e as { stepId: string }).stepId),
        ["draft.release", "approve.release", "complete.release"],
        what,
      );
      if (reference) assert.deepEqual(history, reference, `${what}: an uninterrupted run's`);
      return history;
    };
    try {
      // The reference: a run answered and continued with no kill.
      const first = worker();
      assert.ok(await first.line(/^ready/), "the first worker started");
      const plain = await waitingRun();
      const answerer = start("answer_process.ts", [
        db,
        agentRoot,
        plain.runId,
        value(plain.note),
        LEASE_MS,
      ]);
      procs.push(answerer);
      assert.equal((await answerer.child.status).code, 0);
      const reference = (await verify(plain.runId, "uninterrupted")).map((e) => {
        // The notes differ per round: compare the rest.
        const { handoff: _h, answer: _a, ...rest } = e as Record<string, unknown>;
        return rest;
      });
      const sameAsReference = (history: unknown[], what: string) =>
        assert.deepEqual(
          history.map((e) => {
            const { handoff: _h, answer: _a, ...rest } = e as Record<string, unknown>;
            return rest;
          }),
          reference,
          `${what}: an uninterrupted run's history`,
        );

      const moments: Moment[] = ["locked", "recorded", "driving"];
      for (let r = 0; r < ROUNDS; r++) {
        for (const moment of moments) {
          let killedOnce = false;
          for (let attempt = 1; !killedOnce; attempt++) {
            assert.ok(attempt <= 6, `no kill landed at "${moment}" in ${attempt - 1} runs`);
            const { runId, note } = await waitingRun();
            const what = `${moment} #${attempt}`;
            const answersNow = async () =>
              (await store.readLog(runId)).filter((e) => e.type === "input_answer").length;
            let driver: Proc | undefined;
            const killed = await killAtMoment({
              describe: moment,
              tries: 1,
              atEnd: true, // each moment races the process: one that got past it is checked too
              spawn: () => {
                if (moment !== "driving") {
                  const p = start("answer_process.ts", [
                    db,
                    agentRoot,
                    runId,
                    value(note),
                    LEASE_MS,
                  ]);
                  procs.push(p);
                  return p.child;
                }
                // The only worker alive: it takes the answered run, and is killed mid-call.
                for (const p of procs) {
                  try {
                    p.child.kill("SIGKILL");
                  } catch {
                    // gone
                  }
                }
                driver = worker();
                return driver.child;
              },
              arm: () => async (child, ended) => {
                if (moment === "locked") {
                  // The answering process holds the run's lease (one statement took it).
                  const owner = `${hostName()}:${child.pid}`;
                  await waitFor(`${what}: the lease`, async () => {
                    if (ended.aborted) return true;
                    const c = await submissionOf(store, runId);
                    return c?.worker === owner ? true : undefined;
                  }, 30_000).catch(() => {});
                  return;
                }
                if (moment === "recorded") {
                  await waitFor(`${what}: the answer`, async () => {
                    if (ended.aborted) return true;
                    return await answersNow() > 0 ? true : undefined;
                  }, 30_000).catch(() => {});
                  return;
                }
                assert.ok(await driver!.line(/^ready/, ended), "the driving worker started");
                const answered = await new Deno.Command(Deno.execPath(), {
                  args: [
                    "run",
                    "-A",
                    join(FIXTURES, "answer_process.ts"),
                    db,
                    agentRoot,
                    runId,
                    value(note),
                    LEASE_MS,
                  ],
                  stdout: "null",
                  stderr: "piped",
                }).output();
                assert.equal(answered.code, 0, new TextDecoder().decode(answered.stderr));
                await driver!.line(new RegExp(`^call complete\\.release .*\\(${note}\\)`), ended);
              },
              afterRun: () => {},
            });
            killedOnce = killed;
            const status = (await store.loadCheckpoint(runId))?.status;
            const recorded = await answersNow();
            assert.equal(recorded === 1, status !== "waiting", `${what}: recorded iff moved on`);
            assert.ok(recorded <= 1, `${what}: at most one answer`);
            if (moment === "driving") {
              // Another worker resumes the run once the killed one's lease expired.
              worker();
            }
            if (status === "waiting") {
              // Recover as a user would: answer again while it still waits.
              const again = start("answer_process.ts", [
                db,
                agentRoot,
                runId,
                value(note),
                LEASE_MS,
              ]);
              procs.push(again);
              assert.equal((await again.child.status).code, 0, `${what}: answered again`);
            }
            sameAsReference(await verify(runId, what), what);
            await pause(10);
          }
        }
      }
    } finally {
      await stopAll(procs);
      await store.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});
