/**
 * Workers killed with SIGKILL at random points, against a real PostgreSQL: every run completes
 * exactly once with the history of an uninterrupted run, an iteration is executed again only when
 * the worker executing it was killed (at-least-once bounded to the in-flight iteration), and no
 * two live workers ever execute the same iteration.
 *
 * Each kill hits a worker that holds a run it has started (at a random moment of its iteration:
 * waiting for the backend, or writing), so every kill interrupts a run. The default campaign is
 * 12 runs and 3 kills; `STEPFLOW_FULL_CAMPAIGN=1` runs the full one, 24 runs and 6 kills.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { HistoryEntry } from "../../src/flow/types.ts";
import { ScriptedBackend, type ScriptedScript } from "../../src/llm/scripted.ts";
import { historyFromLog } from "../../src/store/format.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { openRunQueue } from "../../src/worker/queue.ts";
import { submitRun } from "../../src/worker/submit.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { pipelineFiles, pipelineScript, REPO } from "../store/helpers.ts";
import { freshSchema, pg } from "../store/pg_server.ts";

const FULL = Deno.env.get("STEPFLOW_FULL_CAMPAIGN") === "1";
const RUNS = FULL ? 24 : 12;
const WORKERS = 3;
const CONCURRENCY = 2;
const LEASE_MS = 1500;
const DELAY_MS = 40;
const KILLS = FULL ? 6 : 3;

interface Worker {
  pid: number;
  child: Deno.ChildProcess;
}

async function spawnWorker(args: string[]): Promise<Worker> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(REPO, "tests/worker/fixtures/crash_worker.ts"), ...args],
    stdout: "piped",
    stderr: "null",
    stdin: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`worker ${child.pid} exited before it was ready`);
    out += value;
  }
  void (async () => {
    while (!(await reader.read().catch(() => ({ done: true }))).done) { /* drain */ }
  })();
  return { pid: child.pid, child };
}

/** History entries without their timing (which differs between any two runs). */
function timeless(history: readonly HistoryEntry[]): unknown[] {
  return history.map(({ startedAt: _s, durationMs: _d, ...rest }) => rest);
}

Deno.test({
  name:
    `workers: ${RUNS} runs, ${WORKERS} workers, ${KILLS} SIGKILLs → each run once, same history`,
  ignore: pg === undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const url = pg!.url;
    const schema = freshSchema();
    const root = await Deno.makeTempDir({ prefix: "stepflow-workers-" });
    await writeAgent(root, "pipeline", pipelineFiles());
    const agentRoot = join(root, ".agent");
    const execLog = join(root, "exec.log");
    await Deno.writeTextFile(execLog, "");
    const definition = await loadAgentDefinition(join(agentRoot, "pipeline"));

    // The reference: the same run, uninterrupted, in memory.
    const reference = await new StepFlowRunner(definition, {
      backend: new ScriptedBackend(pipelineScript() as ScriptedScript),
      store: new MemoryRunStore(),
    }).run({ args: { topic: "reference" }, cwd: root });
    assert.equal(reference.completionReason, "completed");
    const expected = timeless(reference.state.history);

    const store = new PostgresRunStore(url, { schema, agent: "pipeline", onWarning: () => {} });
    const workerArgs = [
      url,
      schema,
      agentRoot,
      execLog,
      String(LEASE_MS),
      String(CONCURRENCY),
      String(DELAY_MS),
    ];
    // The store's migrations must exist before the workers race to apply them (they also would).
    await store.list();
    const workers = await Promise.all(
      Array.from({ length: WORKERS }, () => spawnWorker(workerArgs)),
    );
    const killed = new Set<number>();
    const starting: Promise<void>[] = [];
    try {
      const queue = await openRunQueue(url, { schema });
      const runIds = await Promise.all(
        Array.from(
          { length: RUNS },
          (_, i) =>
            submitRun(store, definition, { args: { topic: `topic-${i}` } }, {
              url,
              schema,
              queue,
            }),
        ),
      );
      await queue.stop({ graceful: false });

      const deadline = Date.now() + 50_000;
      let kills = 0;
      for (;;) {
        // Kills come 50–250 ms apart, each at a random moment of the victim's iteration. The
        // pause comes before the listing: a run seen driving must still be driven at the kill.
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
        const runs = await store.list();
        const open = runs.filter((s) => s.status !== "completed");
        if (open.length === 0) break;
        assert.ok(Date.now() < deadline, `runs still open: ${open.length}`);
        // Never the last ready worker: the others keep the runs moving while replacements start.
        if (kills >= KILLS || workers.length < 2) continue;
        // A worker driving a run it has committed an iteration of: killing it interrupts a run.
        const driving = new Set(
          open.filter((s) => s.live && (s.steps ?? 0) > 0).map((s) => s.worker),
        );
        const candidates = workers.filter((w) => driving.has(`w${w.pid}`));
        if (candidates.length === 0) continue;
        const victim = candidates[Math.floor(Math.random() * candidates.length)];
        workers.splice(workers.indexOf(victim), 1);
        Deno.writeTextFileSync(execLog, `kill ${victim.pid}\n`, { append: true });
        victim.child.kill("SIGKILL");
        await victim.child.status;
        killed.add(victim.pid);
        kills++;
        // Its replacement starts meanwhile; the campaign goes on without waiting for it.
        starting.push(spawnWorker(workerArgs).then((w) => void workers.push(w)));
      }
      await Promise.all(starting);
      assert.equal(kills, KILLS, "the runs ended before every kill landed");

      // Every run completed exactly once, with the uninterrupted history.
      let resumed = 0;
      for (const runId of runIds) {
        const checkpoint = await store.loadCheckpoint(runId);
        assert.equal(checkpoint?.status, "completed", runId);
        const log = await store.readLog(runId);
        const count = (type: string) => log.filter((e) => e.type === type).length;
        assert.equal(count("run_start"), 1, `${runId}: run_start entries in its committed log`);
        assert.equal(count("run_end"), 1, `${runId}: run_end entries in its committed log`);
        resumed += count("run_resume") > 0 ? 1 : 0;
        const history = historyFromLog(log, checkpoint!.state.historyLength as number);
        assert.deepEqual(timeless(history as HistoryEntry[]), expected, runId);
        const iterations = log.filter((e) => e.type === "step_end").map((e) => e.iteration);
        assert.deepEqual(iterations, [1, 2, 3, 4, 5, 6], `${runId} repeated a finished iteration`);
      }
      assert.ok(resumed > 0, "no kill landed in the middle of a run: the test proved nothing");

      // An iteration runs again only after the worker running it was killed.
      const lines = (await Deno.readTextFile(execLog)).trim().split("\n");
      const killedAt = new Map<number, number>();
      const lastRun = new Map<string, { pid: number; at: number }>();
      let reruns = 0;
      lines.forEach((line, at) => {
        const parts = line.split(" ");
        if (parts[0] === "kill") {
          killedAt.set(Number(parts[1]), at);
          return;
        }
        const [topic, iteration, pid, what] = parts;
        if (what !== "start" || topic === "reference") return;
        const key = `${topic}#${iteration}`;
        const before = lastRun.get(key);
        if (before && before.pid !== Number(pid)) {
          const kill = killedAt.get(before.pid);
          assert.ok(
            kill !== undefined && kill < at,
            `${key} executed by ${pid} while ${before.pid}, which had it, was alive`,
          );
          reruns++;
        } else {
          assert.equal(before, undefined, `${key} executed twice by worker ${pid}`);
        }
        lastRun.set(key, { pid: Number(pid), at });
      });
      assert.ok(reruns <= KILLS * CONCURRENCY, `${reruns} iterations executed again`);
    } finally {
      await Promise.allSettled(starting);
      for (const w of workers) {
        try {
          w.child.kill("SIGKILL");
        } catch {
          // gone
        }
        await w.child.status;
      }
      await store.close();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    }
  },
});
