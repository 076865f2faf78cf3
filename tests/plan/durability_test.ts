/**
 * Durability of `run-plan` (tool plans): the plan file's lock (one runner per plan file, exit 75
 * for the other), temp files left by a kill, the "incomplete" exit status (3) for steps skipped
 * for want of approval, and SIGKILL of the real CLI at points spread over a run. Steps are
 * `http_get` calls to a local server that counts them, so every execution — even one cut short by a
 * kill — is seen. The guarantee under test (docs/tool-plans.md): a step saved as completed never
 * runs again; only steps in flight at a kill may run again (at most `--concurrency` per kill).
 *
 * `STEPFLOW_FULL_CAMPAIGN=1` enlarges the sized loops: four lock races instead of two, and 20 kills
 * at random moments after the eight kills timed by events.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { main } from "../../src/cli/run_plan.ts";
import { hostName, lockPlanFile } from "../../src/store/file_lock.ts";
import type { Plan } from "../../src/plan/types.ts";
import { finish, spawnCli } from "../cli/helpers.ts";
import { FULL_CAMPAIGN, jitter, killAtMoment, pause, tempFilesCreated } from "../kill_campaign.ts";

/**
 * A local server that counts requests per path and answers after `delayMs` — and not before
 * `gate` opens, when one is set (so a run is still going when a rival starts, however slow the
 * machine). `seen` counts requests received and answers sent; `until` waits for a count.
 */
function countingServer(delayMs: number) {
  const hits = new Map<string, number>();
  const answered = new Set<string>();
  const seen = { requests: 0, answers: 0 };
  const state: { gate?: Promise<void> } = {};
  let waiters: Array<() => void> = [];
  const changed = () => {
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const id = new URL(req.url).pathname.slice(1);
    hits.set(id, (hits.get(id) ?? 0) + 1);
    seen.requests++;
    changed();
    await state.gate;
    await new Promise((r) => setTimeout(r, delayMs));
    answered.add(id);
    seen.answers++;
    changed();
    return Response.json({ id });
  });
  /** Resolves once `reached()` is true (checked after every request and answer). */
  const until = async (reached: () => boolean) => {
    while (!reached()) await new Promise<void>((wake) => waiters.push(wake));
  };
  return {
    hits,
    answered,
    seen,
    until,
    state,
    port: server.addr.port,
    close: () => server.shutdown(),
  };
}

/** `n` http_get steps: a chain of pairs (step i depends on step i-2), so two run at once. */
function planJson(n: number, port: number): string {
  const steps = Array.from({ length: n }, (_, i) => ({
    id: `s${i + 1}`,
    description: `Fetch ${i + 1}`,
    tool: "http_get",
    args: { url: `http://127.0.0.1:${port}/s${i + 1}` },
    ...(i >= 2 ? { dependsOn: [`s${i - 1}`] } : {}),
  }));
  return JSON.stringify({
    id: "durable",
    taskId: "t",
    version: 1,
    createdAt: "2026-01-01T00:00:00Z",
    steps,
  });
}

function spawnRunPlan(dir: string, ...extra: string[]): Deno.ChildProcess {
  return spawnCli("run-plan", ["plan.json", "--yes", "--enable-http", ...extra], { userDir: dir });
}

async function inProcess(dir: string, args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await main(args, {
    cwd: dir,
    env: {},
    isTerminal: { stdin: false, stdout: false, stderr: false },
    stdin: null,
    stdout: { write: (t) => void (stdout += t) },
    stderr: { write: (t) => void (stderr += t) },
  });
  return { code, stdout, stderr };
}

const readPlan = async (file: string): Promise<Plan> => JSON.parse(await Deno.readTextFile(file));
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

async function deadPid(): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), { args: ["eval", "0"] }).spawn();
  await child.status;
  return child.pid;
}

Deno.test("run-plan: a plan file another process runs is refused with exit 75; nothing runs or is written", async () => {
  const dir = await Deno.makeTempDir();
  const server = countingServer(0);
  try {
    const file = join(dir, "plan.json");
    await Deno.writeTextFile(file, planJson(2, server.port));
    const before = await Deno.readTextFile(file);
    const held = lockPlanFile(file, { runId: "other", onWarning: () => {} });
    const r = await inProcess(dir, ["plan.json", "--yes", "--enable-http"]);
    held.release();
    assert.equal(r.code, 75, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `^run-plan: Plan file .*plan\\.json is already being run by pid ${Deno.pid} on host .* since .* \\(lock file .*plan\\.json\\.lock\\)\\. Only one process may run a plan file at a time`,
      ),
    );
    assert.equal(server.hits.size, 0);
    assert.equal(await Deno.readTextFile(file), before);
    // --dry-run only reads: it does not need the lock.
    const again = lockPlanFile(file, { runId: "other", onWarning: () => {} });
    const dry = await inProcess(dir, ["plan.json", "--dry-run", "--enable-http"]);
    again.release();
    assert.equal(dry.code, 0, dry.stderr);
  } finally {
    await server.close();
  }
});

Deno.test("run-plan: temp files a killed run left beside the plan are removed when it is opened", async () => {
  const dir = await Deno.makeTempDir();
  const server = countingServer(0);
  try {
    await Deno.writeTextFile(join(dir, "plan.json"), planJson(1, server.port));
    const stale = join(dir, `.plan.json.${await deadPid()}-0a1b2c3d.tmp`);
    await Deno.writeTextFile(stale, '{"id":');
    const r = await inProcess(dir, ["plan.json", "--yes", "--enable-http"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`Removed ${stale.replaceAll(".", "\\.")}, left by a run`));
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["plan.json"]);
  } finally {
    await server.close();
  }
});

Deno.test("run-plan: steps skipped because approval was not given make the run incomplete (exit 3) unless --allow-skipped", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "a.txt"), "old");
  const plan = (skipByUser: boolean) =>
    JSON.stringify({
      id: "p",
      taskId: "t",
      version: 1,
      createdAt: "2026-01-01T00:00:00Z",
      steps: [
        { id: "read", description: "Read", tool: "read_file", args: { path: "a.txt" } },
        {
          id: "over",
          description: "Overwrite",
          tool: "write_file",
          args: { path: "a.txt", content: "new" },
          ...(skipByUser ? { status: "skipped", result: skippedByUser } : {}),
        },
        {
          id: "after",
          description: "After",
          tool: "read_file",
          args: { path: "a.txt" },
          dependsOn: ["over"],
        },
      ],
    });
  const skippedByUser = {
    ok: false,
    error: "Skipped by user",
    duration: 0,
    timestamp: "2026-01-01T00:00:00Z",
  };
  await Deno.writeTextFile(join(dir, "plan.json"), plan(false));
  // --approve for another tool starts the run without a terminal; write_file is denied.
  const r = await inProcess(dir, ["plan.json", "--approve", "read_file"]);
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stdout,
    /\nPlan incomplete: 1 completed, 0 failed, 2 skipped, 0 blocked, 0 pending/,
  );
  assert.match(
    r.stdout,
    /2 step\(s\) did not run because approval was not given \(over, after\): over: User denied approval/,
  );
  assert.match(r.stdout, /--allow-skipped/);
  // Running again has nothing to run, and still says incomplete.
  const again = await inProcess(dir, ["plan.json", "--approve", "read_file"]);
  assert.equal(again.code, 3);
  assert.match(again.stderr, /Nothing to run, but the plan is incomplete: 2 step\(s\) did not run/);
  const accepted = await inProcess(dir, ["plan.json", "--approve", "read_file", "--allow-skipped"]);
  assert.equal(accepted.code, 0, accepted.stderr);
  // --json says so too.
  const json = await inProcess(dir, ["plan.json", "--restart", "--approve", "read_file", "--json"]);
  assert.equal(json.code, 3);
  const summary = JSON.parse(json.stdout);
  assert.equal(summary.incomplete, true);
  assert.deepEqual(summary.notExecuted, ["over", "after"]);
  // Steps the user skipped on purpose (and their dependents) do not make a run incomplete.
  await Deno.writeTextFile(join(dir, "plan.json"), plan(true));
  const skipped = await inProcess(dir, ["plan.json", "--approve", "read_file"]);
  assert.equal(skipped.code, 0, skipped.stdout + skipped.stderr);
  assert.match(skipped.stdout, /\nPlan completed: 1 completed, 0 failed, 2 skipped/);
});

Deno.test("run-plan CLI: two starters on a fresh and on a stale lock — exactly one runs, the other exits 75", async () => {
  const dir = await Deno.makeTempDir();
  const server = countingServer(20);
  try {
    const kinds = FULL_CAMPAIGN ? ["fresh", "stale", "fresh", "stale"] : ["fresh", "stale"];
    for (const kind of kinds) {
      server.hits.clear();
      // Requests wait until one of the two has exited (the loser, refused at once) — or 20 s, by
      // which time two runners without a lock would both have sent every request.
      let open = () => {};
      server.state.gate = new Promise<void>((resolve) => (open = resolve));
      const timer = setTimeout(open, 20_000);
      const file = join(dir, "plan.json");
      await Deno.writeTextFile(file, planJson(4, server.port));
      if (kind === "stale") {
        await Deno.writeTextFile(
          `${file}.lock`,
          JSON.stringify({
            runId: "old",
            pid: await deadPid(),
            hostname: hostName(),
            started: "2026-01-01T00:00:00Z",
          }),
        );
      }
      const results = await Promise.all(
        [finish(spawnRunPlan(dir)), finish(spawnRunPlan(dir))].map((p) => p.finally(open)),
      );
      clearTimeout(timer);
      server.state.gate = undefined;
      assert.deepEqual(results.map((r) => r.code).sort(), [0, 75], JSON.stringify(results));
      assert.match(
        results.find((r) => r.code === 75)!.stderr,
        // The winner writes its pid just after taking the lock: a loser that looks in between
        // can only say "another process".
        /run-plan: Plan file .*plan\.json is already being run by (pid \d+|another process)/,
      );
      assert.deepEqual(
        [...server.hits.entries()].sort(),
        [["s1", 1], ["s2", 1], ["s3", 1], ["s4", 1]],
        `${kind}: every step ran exactly once`,
      );
      const saved = await readPlan(file);
      assert.ok(saved.steps.every((s) => s.status === "completed"));
      await assert.rejects(Deno.stat(`${file}.lock`), Deno.errors.NotFound);
    }
  } finally {
    await server.close();
  }
});

/**
 * When the campaign kills a run (counted from the run's start): once it holds the plan's lock;
 * once its n-th request reached the server (steps in flight); as soon as the temp file of its n-th
 * save of the plan appears (in the middle of that write: the temp file is written and flushed
 * before its rename); `jitterMs` after its n-th answer or after the plan's last step was answered
 * (the plan is being saved — `completed`, the next step's `running`, or the last write and the
 * lock's release); or at a random moment (drawn again for each run).
 */
type KillMoment =
  | { at: "locked" }
  | { at: "request"; n: number }
  | { at: "writing"; n: number }
  | { at: "answer"; n: number; jitterMs: number }
  | { at: "last-answer"; jitterMs: number }
  | { at: "random" };

/**
 * Eight kills spread over a run of the 8-step plan (two steps at a time), each counted from the
 * start of its run: before the first request, with the first steps in flight, in the middle of
 * saves of the plan, around later steps, and at its end (the last kill).
 */
const EVENT_KILLS: KillMoment[] = [
  { at: "locked" },
  { at: "request", n: 1 },
  { at: "writing", n: 2 },
  { at: "request", n: 3 },
  { at: "answer", n: 2, jitterMs: jitter(10) },
  { at: "writing", n: 4 },
  { at: "answer", n: 1, jitterMs: jitter(10) },
  { at: "last-answer", jitterMs: jitter(10) },
];

/**
 * The full campaign adds 20 kills at random moments, 100–700 ms after the start (a run that ended
 * before its moment is not counted: the moment is drawn again).
 */
const RANDOM_KILLS: KillMoment[] = Array.from({ length: 20 }, () => ({ at: "random" }) as const);

/** The pid in a plan's lock file, if it can be read. */
async function lockHolder(file: string): Promise<number | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(`${file}.lock`)).pid;
  } catch {
    return undefined;
  }
}

Deno.test("run-plan CLI: SIGKILL at points spread over the run — the file always parses, completed steps never run again", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "plan.json");
  const STEPS = 8;
  const CONCURRENCY = 4;
  const server = countingServer(40);
  let campaignKills = 0;
  let frozen = new Map<string, number>();
  const fresh = async () => {
    server.hits.clear();
    server.answered.clear();
    await Deno.writeTextFile(file, planJson(STEPS, server.port));
    frozen = new Map();
    campaignKills = 0;
  };
  const check = () => {
    for (const [id, count] of frozen) {
      assert.equal(server.hits.get(id), count, `step ${id} was saved completed and ran again`);
    }
    assert.ok(
      sum(server.hits) - STEPS <= campaignKills * CONCURRENCY,
      `at most ${CONCURRENCY} re-runs per kill: ${
        sum(server.hits)
      } runs after ${campaignKills} kills`,
    );
  };
  /** Resolves when `moment` has come for `child` (or never, once `ended` is aborted). */
  const momentOf = async (
    moment: KillMoment,
    child: Deno.ChildProcess,
    ended: AbortSignal,
    watcher?: Deno.FsWatcher,
  ) => {
    const { requests, answers } = server.seen;
    switch (moment.at) {
      case "locked":
        while (!ended.aborted && await lockHolder(file) !== child.pid) await pause(5);
        return;
      case "request":
        return await server.until(() =>
          ended.aborted || server.seen.requests >= requests + moment.n
        );
      case "writing":
        return await tempFilesCreated(watcher!, moment.n, file);
      case "answer":
        await server.until(() => ended.aborted || server.seen.answers >= answers + moment.n);
        return await pause(moment.jitterMs);
      case "last-answer":
        await server.until(() => ended.aborted || server.answered.size === STEPS);
        return await pause(moment.jitterMs);
      case "random":
        return await pause(100 + Math.random() * 600);
    }
  };
  try {
    await fresh();
    const moments = FULL_CAMPAIGN ? [...EVENT_KILLS, ...RANDOM_KILLS] : EVENT_KILLS;
    for (const moment of moments) {
      // A run that ends before its moment came (the plan was nearly done) completes the round;
      // the moment is tried again on the fresh plan.
      await killAtMoment({
        describe: JSON.stringify(moment),
        tries: moment.at === "random" ? 10 : 3,
        atEnd: moment.at.startsWith("last-"),
        ...(moment.at === "writing" ? { watch: dir } : {}),
        spawn: () => spawnRunPlan(dir, "--concurrency", String(CONCURRENCY)),
        arm: (watcher) => (child, ended) => momentOf(moment, child, ended, watcher),
        afterRun: async (killed) => {
          if (killed) campaignKills++;
          // Give requests the killed process had sent time to arrive, so none is counted late.
          await pause(20);
          const plan = await readPlan(file); // always whole JSON: writes are atomic
          for (const step of plan.steps) {
            if (step.status === "completed" && !frozen.has(step.id)) {
              frozen.set(step.id, server.hits.get(step.id)!);
            }
          }
          if (plan.steps.every((s) => s.status === "completed")) {
            check();
            await fresh();
          }
        },
      });
    }
    const last = await finish(spawnRunPlan(dir));
    assert.equal(last.code, 0, last.stderr);
    check();
    const names = [...Deno.readDirSync(dir)].map((e) => e.name);
    assert.deepEqual(names, ["plan.json"], "no lock or temp file is left behind");
  } finally {
    await server.close();
  }
});
