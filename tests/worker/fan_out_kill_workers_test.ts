/**
 * The SIGKILL campaign of fan-out steps on PostgreSQL workers: a fan-out's children run as jobs on
 * two real worker processes, and workers are killed with `kill -9` while one of their children is
 * in a model call (a replacement starts each time). After takeover every item has exactly one
 * completed child, the results equal an uninterrupted run's, and a child's call ran again only
 * after the worker running it was killed. Then the submitting process (`submit --wait`) is killed
 * mid-fan-out: the workers finish the run alone. Small by default; `STEPFLOW_FULL_CAMPAIGN=1`: 30
 * kills each.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { fanOutsOf } from "../../src/store/fan_out_lines.ts";
import { submitRun } from "../../src/worker/submit.ts";
import { writeFleetAgents } from "../flow/fan_out_fixtures.ts";
import { FULL_CAMPAIGN, jitter, pause } from "../kill_campaign.ts";
import { REPO } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";
import { untilEnded } from "./fan_out_worker_helpers.ts";
import { spawnCli } from "../cli/helpers.ts";

const ROUNDS = FULL_CAMPAIGN ? 6 : 1;
const KILLS_PER_ROUND = FULL_CAMPAIGN ? 5 : 2;
const ITEMS = FULL_CAMPAIGN ? 20 : 10;
const LEASE_MS = 1_000;
const DELAY_MS = 120;

interface Worker {
  pid: number;
  child: Deno.ChildProcess;
}

async function spawnWorker(args: string[]): Promise<Worker> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(REPO, "tests/worker/fixtures/fan_out_worker.ts"), ...args],
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

Deno.test({
  name: `fan-out on workers: ${
    ROUNDS * KILLS_PER_ROUND
  } kill -9 of workers mid-child → one completed child per item, the uninterrupted results`,
  ignore: pg === undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const paths = Array.from({ length: ITEMS }, (_, i) => `src/f${i}.ts`);
    for (let round = 0; round < ROUNDS; round++) {
      const db = await freshDatabase(pg!);
      const root = await Deno.makeTempDir({ prefix: "stepflow_fanout_kill_workers_" });
      await writeFleetAgents(root, { concurrency: 4, onItemError: "fail" });
      const agentRoot = join(root, ".agent");
      const execLog = join(root, "exec.log");
      await Deno.writeTextFile(execLog, "");
      const args = [db, agentRoot, execLog, String(LEASE_MS), String(DELAY_MS), String(ITEMS)];
      const store = new PostgresRunStore(db, { agent: "fleet", onWarning: () => {} });
      await store.list(); // migrated before the workers race to
      const workers = [await spawnWorker(args), await spawnWorker(args)];
      try {
        const definition = await loadAgentDefinition("fleet", { cwd: root });
        const runId = await submitRun(store, definition, {}, { url: db });
        let kills = 0;
        let seen = 0;
        while (kills < KILLS_PER_ROUND) {
          // A worker with a child in a model call: killed a moment later, mid-call.
          const lines = (await Deno.readTextFile(execLog)).trim().split("\n").filter(Boolean);
          const starts = lines.slice(seen).filter((l) => l.endsWith(" start"));
          seen = lines.length;
          const victim = workers.find((w) => starts.some((l) => l.includes(` ${w.pid} `)));
          const checkpoint = await store.loadCheckpoint(runId).catch(() => undefined);
          if (checkpoint?.status === "completed") break;
          if (!victim) {
            await pause(20);
            continue;
          }
          await pause(jitter(DELAY_MS / 2));
          Deno.writeTextFileSync(execLog, `kill ${victim.pid}\n`, { append: true });
          victim.child.kill("SIGKILL");
          await victim.child.status;
          workers.splice(workers.indexOf(victim), 1);
          kills++;
          workers.push(await spawnWorker(args));
        }
        assert.ok(kills > 0, "the fan-out ended before any kill landed");
        const parent = await untilEnded(store, runId, 90_000);
        assert.equal(parent.status, "completed", JSON.stringify(parent.state.end));
        const handoff = (parent.state.handoff as Record<string, unknown>)["review.each"] as {
          results: { item: string; output: { verdict: string } }[];
          counts: unknown;
        };
        assert.deepEqual(handoff.results.map((r) => r.item), paths);
        assert.deepEqual(handoff.results.map((r) => r.output.verdict), paths.map((p) => `ok ${p}`));
        assert.deepEqual(handoff.counts, { total: ITEMS, completed: ITEMS, failed: 0 });
        const [fanOut] = fanOutsOf(await store.readLog(runId));
        for (const [index, item] of fanOut.items) {
          assert.equal(item.children.length, 1, `item ${index}: one child`);
          const child = (await store.loadCheckpoint(item.children[0].childRunId))!;
          assert.equal(child.status, "completed", `item ${index}`);
        }
        // A child's call ran again only after the worker running it was killed.
        const killedAt = new Map<number, number>();
        const lastStart = new Map<string, number>();
        const lines = (await Deno.readTextFile(execLog)).trim().split("\n");
        lines.forEach((line, at) => {
          const [what, pid, kind] = line.split(" ");
          if (what === "kill") return void killedAt.set(Number(pid), at);
          if (kind !== "start") return;
          const before = lastStart.get(what);
          if (before !== undefined) {
            const kill = killedAt.get(before);
            assert.ok(kill !== undefined && kill < at, `${what} ran again while ${before} lived`);
          }
          lastStart.set(what, Number(pid));
        });
      } finally {
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
    }
  },
});

const SUBMIT_ROUNDS = FULL_CAMPAIGN ? 30 : 2;
const RUN_ID = /\d{8}T\d{6}Z-[0-9a-f]{6}/;

Deno.test({
  name:
    `fan-out on workers: ${SUBMIT_ROUNDS} kill -9 of the submitting process (--submit --wait) mid-fan-out → the run goes on, one completed child per item`,
  ignore: pg === undefined,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const items = FULL_CAMPAIGN ? 20 : 8;
    const paths = Array.from({ length: items }, (_, i) => `src/f${i}.ts`);
    const db = await freshDatabase(pg!);
    const root = await Deno.makeTempDir({ prefix: "stepflow_fanout_kill_submitter_" });
    await writeFleetAgents(root, { concurrency: 4, onItemError: "fail" });
    const execLog = join(root, "exec.log");
    await Deno.writeTextFile(execLog, "");
    const args = [
      db,
      join(root, ".agent"),
      execLog,
      String(LEASE_MS),
      String(DELAY_MS),
      String(items),
    ];
    const store = new PostgresRunStore(db, { agent: "fleet", onWarning: () => {} });
    await store.list(); // migrated before the workers race to
    const workers = [await spawnWorker(args), await spawnWorker(args)];
    let midFanOut = 0;
    try {
      for (let round = 0; round < SUBMIT_ROUNDS; round++) {
        const submitter = spawnCli("stepflow", [
          "submit",
          "fleet",
          "--store",
          db,
          "--wait",
        ], { userDir: root, stdout: "null" });
        // `--wait` names the run on stderr as it follows it.
        const reader = submitter.stderr.pipeThrough(new TextDecoderStream()).getReader();
        let out = "";
        while (!RUN_ID.test(out)) {
          const { value, done } = await reader.read();
          if (done) throw new Error(`the submitter ended before it named its run: ${out}`);
          out += value;
        }
        void (async () => {
          while (!(await reader.read().catch(() => ({ done: true }))).done) { /* drain */ }
        })();
        const runId = RUN_ID.exec(out)![0];
        // Killed once the fan-out is under way (some child started), at a random moment after.
        let started = false;
        for (let i = 0; i < 500 && !started; i++) {
          const log = await store.readLog(runId).catch(() => []);
          started = log.some((e) => e.type === "fanout_child");
          if (!started) await pause(20);
        }
        assert.ok(started, `round ${round}: the fan-out began`);
        await pause(jitter(DELAY_MS));
        const before = await store.loadCheckpoint(runId);
        submitter.kill("SIGKILL");
        await submitter.status;
        if (before?.status !== "completed") midFanOut++;
        const parent = await untilEnded(store, runId, 90_000);
        assert.equal(parent.status, "completed", JSON.stringify(parent.state.end));
        const handoff = (parent.state.handoff as Record<string, unknown>)["review.each"] as {
          results: { item: string; output: { verdict: string } }[];
          counts: unknown;
        };
        assert.deepEqual(handoff.results.map((r) => r.output.verdict), paths.map((p) => `ok ${p}`));
        assert.deepEqual(handoff.counts, { total: items, completed: items, failed: 0 });
        const [fanOut] = fanOutsOf(await store.readLog(runId));
        for (const [index, item] of fanOut.items) {
          assert.equal(item.children.length, 1, `round ${round}, item ${index}: one child`);
          const child = (await store.loadCheckpoint(item.children[0].childRunId))!;
          assert.equal(child.status, "completed", `round ${round}, item ${index}`);
        }
      }
      assert.ok(midFanOut > 0, "no kill landed before the run completed");
      // No worker died: no review call ran twice.
      const starts = (await Deno.readTextFile(execLog)).trim().split("\n")
        .filter((l) => l.endsWith(" start")).map((l) => l.split(" ")[0]);
      assert.equal(starts.length, SUBMIT_ROUNDS * items, "each review call once per round");
    } finally {
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
