/**
 * Durability of `plan run` (PlanSpec): the plan file's lock (the run store's lock: atomic stale
 * takeover, pid-reuse protection), the run history's torn tail, temp files left by a kill, and
 * SIGKILL of the real CLI at points spread over a run. The guarantee under test (docs/planspec.md):
 * one process runs a plan file at a time; a step marked done in the file never runs again; only
 * the step in flight at a kill may run again (at most one per kill: steps run one at a time).
 *
 * `STEPFLOW_FULL_CAMPAIGN=1` adds 20 kills at random moments after the eight timed by events.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { StepflowError } from "../../src/errors.ts";
import { archivePlan, PlanRunner, readHistory, readPlanFile } from "../../src/planspec/mod.ts";
import type { PlanStep } from "../../src/planspec/types.ts";
import { hostName, lockPlanFile } from "../../src/store/file_lock.ts";
import { finish, spawnCli } from "../cli/helpers.ts";
import { FULL_CAMPAIGN, jitter, killAtMoment, pause, tempFilesCreated } from "../kill_campaign.ts";

/** A plan of `n` act steps, each producing `o<i>`. */
function planText(n: number): string {
  const steps = Array.from({ length: n }, (_, i) => `${i + 1}. [act] Step ${i + 1} → o${i + 1}`);
  return `# Plan: Durable\nGoal: survive kills\n## Steps\n${steps.join("\n")}\n`;
}

/** Scripted answers: every step OK after `delayMs`. */
function scriptYaml(n: number, delayMs: number): string {
  return Array.from(
    { length: n },
    (_, i) =>
      `planspec.step.${i + 1}:\n  - {output: {status: OK, result: r${i + 1}, outputs: {o${i + 1}: ${
        i + 1
      }}}, delayMs: ${delayMs}}\n`,
  ).join("");
}

const okAnswers = (n: number) =>
  Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`planspec.step.${i + 1}`, [{
      output: { status: "OK", result: `r${i + 1}`, outputs: { [`o${i + 1}`]: i + 1 } },
    }]]),
  );

function spawnPlanRun(dir: string, script: string): Deno.ChildProcess {
  return spawnCli("plan", ["run", "p.md", "--script", script, "--quiet"], { userDir: dir });
}

/** History `step` entries per step id. */
async function stepRuns(history: string): Promise<Map<string, number>> {
  const runs = new Map<string, number>();
  for (const entry of await readHistory(history)) {
    if (entry.kind === "step") runs.set(entry.stepId!, (runs.get(entry.stepId!) ?? 0) + 1);
  }
  return runs;
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const doneIds = (steps: PlanStep[]) =>
  steps.filter((s) => s.status === "done").map((s) => s.stepId);

async function deadPid(): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), { args: ["eval", "0"] }).spawn();
  await child.status;
  return child.pid;
}

function writeLock(file: string, pid: number, ageMs: number) {
  Deno.writeTextFileSync(
    `${file}.lock`,
    JSON.stringify({ runId: "old", pid, hostname: hostName(), started: "2026-01-01T00:00:00Z" }) +
      "\n",
  );
  const when = new Date(Date.now() - ageMs);
  Deno.utimeSync(`${file}.lock`, when, when);
}

Deno.test("plan run: a two-day-old lock whose pid now belongs to a live process is taken over", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "p.md");
  await Deno.writeTextFile(file, planText(2));
  writeLock(file, Deno.pid, 2 * 86_400_000); // the pid is alive: it was reused
  const logs: string[] = [];
  const runner = await PlanRunner.fromFile(file, {
    backend: new ScriptedBackend(okAnswers(2)),
    onLog: (m) => void logs.push(m),
  });
  assert.equal((await runner.run()).status, "completed");
  assert.match(
    logs.join("\n"),
    new RegExp(
      `warning: took over the stale lock of plan file .*p\\.md \\(pid ${Deno.pid} on host .*\\): its heartbeat is 172800 s old \\(pid ${Deno.pid} now belongs to another process\\)`,
    ),
  );
  await assert.rejects(Deno.stat(`${file}.lock`), Deno.errors.NotFound);
});

Deno.test("plan run: a torn last history line is cut before appending, so the next runs still read it", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "p.md");
  const history = join(dir, "p.history.jsonl");
  await Deno.writeTextFile(file, planText(2));
  // A killed session: its start, then a kill in the middle of an append.
  await Deno.writeTextFile(
    history,
    `{"kind":"start","round":1,"at":"2026-01-01T00:00:00.000Z"}\n{"kind":"round","round":1,"at":"2026-01-01T00:00:00.000Z"}\n{"kind":"step","round":1,"st`,
  );
  const logs: string[] = [];
  const first = await PlanRunner.fromFile(file, {
    backend: new ScriptedBackend(okAnswers(2)),
    onLog: (m) => void logs.push(m),
  });
  assert.equal((await first.run()).status, "completed");
  assert.match(
    logs.join("\n"),
    /warning: run history .*p\.history\.jsonl ended with a torn line \(28 bytes written by a crash in the middle of an append\); it was cut off before appending/,
  );
  const text = await Deno.readTextFile(history);
  assert.ok(text.split("\n").slice(0, -1).every((line) => JSON.parse(line)), text);
  // The run after next: reads the whole history without error and runs a new session.
  await Deno.writeTextFile(file, planText(3));
  const second = await PlanRunner.fromFile(file, {
    backend: new ScriptedBackend(okAnswers(3)),
  });
  assert.equal((await second.run()).status, "completed");
  assert.deepEqual([...(await stepRuns(history)).keys()], ["1", "2", "3"]);
});

Deno.test("plan run: temp files a killed writer left beside the plan are removed when it is opened", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "p.md");
  await Deno.writeTextFile(file, planText(1));
  const dead = await deadPid();
  const stale = join(dir, `.p.md.${dead}-0a1b2c3d.tmp`);
  const live = join(dir, `.p.md.1-0a1b2c3e.tmp`); // pid 1 is alive and the file is fresh
  await Deno.writeTextFile(stale, "# Plan: half");
  await Deno.writeTextFile(live, "# Plan: half");
  const logs: string[] = [];
  const runner = await PlanRunner.fromFile(file, {
    backend: new ScriptedBackend(okAnswers(1)),
    onLog: (m) => void logs.push(m),
  });
  assert.equal((await runner.run()).status, "completed");
  await assert.rejects(Deno.stat(stale), Deno.errors.NotFound);
  await Deno.stat(live);
  assert.ok(
    logs.includes(`removed ${stale}, left by a run that was killed while writing the plan`),
  );
});

Deno.test("plan run CLI: two starters on a fresh and on a stale lock — exactly one runs, the other exits 75", async () => {
  // The two races use their own folders and run at the same time.
  await Promise.all(["fresh", "stale"].map(async (kind) => {
    const dir = await Deno.makeTempDir();
    const file = join(dir, "p.md");
    // The winner's first step takes `firstStepMs`, so its rival normally starts while it runs. On a
    // machine so busy that the rival started only after the winner had finished (it then finds
    // nothing to do), the race is run again with a longer first step.
    for (const firstStepMs of [250, 1500, 5000]) {
      await Deno.writeTextFile(
        join(dir, "s.yaml"),
        scriptYaml(3, 0).replace("delayMs: 0", `delayMs: ${firstStepMs}`),
      );
      await Deno.writeTextFile(file, planText(3));
      await Deno.remove(join(dir, "p.history.jsonl")).catch(() => {});
      if (kind === "stale") writeLock(file, await deadPid(), 0);
      const results = await Promise.all([
        finish(spawnPlanRun(dir, "s.yaml")),
        finish(spawnPlanRun(dir, "s.yaml")),
      ]);
      // Whatever the timing, the steps ran exactly once and the lock is gone.
      const runs = await stepRuns(join(dir, "p.history.jsonl"));
      assert.deepEqual([...runs.entries()], [["1", 1], ["2", 1], ["3", 1]], kind);
      await assert.rejects(Deno.stat(`${file}.lock`), Deno.errors.NotFound);
      const codes = results.map((r) => r.code).sort();
      if (codes[0] === 0 && codes[1] === 0 && firstStepMs < 5000) continue; // they did not overlap
      assert.deepEqual(codes, [0, 75], `${kind}: ${JSON.stringify(results)}`);
      const loser = results.find((r) => r.code === 75)!;
      assert.match(
        loser.stderr,
        // The winner writes its pid just after taking the lock: a loser that looks in between
        // can only say "another process".
        /error: Plan file .*p\.md is already being run by (pid \d+ on host .*|another process) \(lock file .*p\.md\.lock\)/,
      );
      break;
    }
  }));
});

/**
 * When the campaign kills a run (counted from the run's start): once it holds the plan's lock;
 * once its n-th step is marked active in the plan file (its backend call is in flight); as soon as
 * the temp file of its n-th save of the plan appears (in the middle of that write: the temp file
 * is written and flushed before its rename); `jitterMs` after its n-th step reached the history,
 * or after the plan's last step did (the plan is being saved, or the run is ending); or at a
 * random moment (drawn again for each run).
 */
type KillMoment =
  | { at: "locked" }
  | { at: "active"; n: number }
  | { at: "writing"; n: number }
  | { at: "recorded"; n: number; jitterMs: number }
  | { at: "last-recorded"; jitterMs: number }
  | { at: "random" };

/**
 * Eight kills spread over runs of the 6-step plan, each counted from the start of its run: before
 * the first step, with a step in flight, in the middle of saves of the plan, between a step's
 * history entry and the plan's save, later in the run, and at its end (the last kill).
 */
const EVENT_KILLS: KillMoment[] = [
  { at: "locked" },
  { at: "active", n: 1 },
  { at: "writing", n: 2 },
  { at: "active", n: 2 },
  { at: "recorded", n: 2, jitterMs: jitter(10) },
  { at: "writing", n: 3 },
  { at: "recorded", n: 1, jitterMs: jitter(10) },
  // The run ends a few ms after its last step is recorded: kill within them.
  { at: "last-recorded", jitterMs: jitter(5) },
];

/**
 * The full campaign adds 20 kills at random moments, 100–800 ms after the start (a run that ended
 * before its moment is not counted: the moment is drawn again).
 */
const RANDOM_KILLS: KillMoment[] = Array.from({ length: 20 }, () => ({ at: "random" }) as const);

/** A file's text, or "" when it does not exist (yet). */
const textOf = (path: string) => Deno.readTextFile(path).catch(() => "");
const count = (text: string, what: string) => text.split(what).length - 1;

Deno.test("plan run CLI: SIGKILL at points spread over the run — the file always parses, done steps never run again", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "p.md");
  const history = join(dir, "p.history.jsonl");
  const STEPS = 6;
  await Deno.writeTextFile(join(dir, "s.yaml"), scriptYaml(STEPS, 60));
  /** Per campaign (one plan from scratch to done): runs of steps seen done at a kill. */
  let frozen = new Map<string, number>();
  let campaignKills = 0;
  const check = async () => {
    const runs = await stepRuns(history);
    for (const [id, count] of frozen) {
      assert.equal(runs.get(id), count, `step ${id} was done at a kill and ran again`);
    }
    assert.ok(
      sum(runs) - STEPS <= campaignKills,
      `at most one re-run per kill: ${
        sum(runs)
      } runs of ${STEPS} steps after ${campaignKills} kills`,
    );
  };
  const fresh = async () => {
    await Deno.writeTextFile(file, planText(STEPS));
    await Deno.remove(history).catch(() => {});
    frozen = new Map();
    campaignKills = 0;
  };
  const recordedSteps = async () => count(await textOf(history), `"kind":"step"`);
  /** Resolves when `moment` has come for `child` (or at once, once `ended` is aborted). */
  const momentOf = async (
    moment: KillMoment,
    child: Deno.ChildProcess,
    ended: AbortSignal,
    watcher?: Deno.FsWatcher,
  ) => {
    const poll = async (reached: () => Promise<boolean>) => {
      while (!ended.aborted && !(await reached())) await pause(3);
    };
    const holdsLock = async () => {
      try {
        return JSON.parse(await Deno.readTextFile(`${file}.lock`)).pid === child.pid;
      } catch {
        return false;
      }
    };
    const recorded = await recordedSteps();
    switch (moment.at) {
      case "locked":
        return await poll(holdsLock);
      case "active": {
        // A killed run may have left a step marked active: wait for this run's own writes (each
        // an atomic rename, so a new inode) once it holds the lock.
        await poll(holdsLock);
        const before = (await Deno.stat(file)).ino;
        const done = count(await textOf(file), "[x]");
        return await poll(async () => {
          const text = await textOf(file);
          return (await Deno.stat(file)).ino !== before && count(text, "[>]") > 0 &&
            count(text, "[x]") >= done + moment.n - 1;
        });
      }
      case "writing":
        return await tempFilesCreated(watcher!, moment.n, file);
      case "recorded":
        await poll(async () => await recordedSteps() >= recorded + moment.n);
        return await pause(moment.jitterMs);
      case "last-recorded":
        await poll(async () => (await stepRuns(history).catch(() => new Map())).size === STEPS);
        return await pause(moment.jitterMs);
      case "random":
        return await pause(100 + Math.random() * 700);
    }
  };
  await fresh();
  const moments = FULL_CAMPAIGN ? [...EVENT_KILLS, ...RANDOM_KILLS] : EVENT_KILLS;
  for (const moment of moments) {
    // A run that ends before its moment came (the plan was nearly done) completes the round; the
    // moment is tried again on the fresh plan.
    await killAtMoment({
      describe: JSON.stringify(moment),
      tries: moment.at === "random" ? 10 : 3,
      atEnd: moment.at.startsWith("last-"),
      ...(moment.at === "writing" ? { watch: dir } : {}),
      spawn: () => spawnPlanRun(dir, "s.yaml"),
      arm: (watcher) => (child, ended) => momentOf(moment, child, ended, watcher),
      afterRun: async (killed) => {
        if (killed) campaignKills++;
        // Whatever the moment, the plan file is whole and the history readable.
        const plan = await readPlanFile(file);
        const runs = await stepRuns(history);
        for (const id of doneIds(plan.steps)) if (!frozen.has(id)) frozen.set(id, runs.get(id)!);
        if (doneIds(plan.steps).length === STEPS) {
          await check();
          await fresh();
        }
      },
    });
  }
  const last = await finish(spawnPlanRun(dir, "s.yaml"));
  assert.equal(last.code, 0, last.stderr);
  assert.equal(doneIds((await readPlanFile(file)).steps).length, STEPS);
  await check();
  const leftovers = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.endsWith(".tmp"));
  assert.deepEqual(leftovers, [], "temp files of killed writes were cleaned up");
});

Deno.test("plan archive refuses a plan that a run holds (PLAN_LOCKED), and archives it afterwards", async () => {
  const base = await Deno.makeTempDir();
  const file = join(base, "planspec", "p.md");
  await Deno.mkdir(join(base, "planspec"));
  await Deno.writeTextFile(file, planText(1).replace("1. [act]", "1. [x] [act]"));
  const held = lockPlanFile(file, { runId: "running", onWarning: () => {} });
  await assert.rejects(
    archivePlan(base, "p"),
    (e: unknown) => e instanceof StepflowError && e.code === "PLAN_LOCKED",
  );
  await Deno.stat(file);
  held.release();
  assert.equal(await archivePlan(base, "p"), join(base, "planspec", "archive", "p.md"));
  assert.deepEqual([...Deno.readDirSync(join(base, "planspec"))].map((e) => e.name), ["archive"]);
});
