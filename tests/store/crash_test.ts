/**
 * Crash tests of durable runs through the real CLI (default durability `"fsync"`): a run of the
 * run-agent CLI (`deno run -A src/cli/run_agent.ts`, what `deno task run-agent` runs) is killed
 * with SIGKILL at several points — while a backend call is in flight (before its checkpoint),
 * before an iteration's checkpoint reached the log, halfway through that line, right after it was
 * flushed (the checkpoint file, a cache, then lags the log), between the cache's temp file and its
 * rename, in the middle of a log append — then `--resume` completes it. The final history must
 * equal an uninterrupted run's, and no iteration whose checkpoint was written may run again.
 *
 * The killed runs and the two racing resumes are real processes; the reference run, `--runs` and
 * the single resumes run the same CLI in this process (`main(argv, io)`): another process than the
 * killed one, which is all a resume needs, without a `deno` start-up each.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FileRunStore } from "../../src/store/file.ts";
import { historyFromLog, type LoggedHistoryEntry } from "../../src/store/format.ts";
import type { RunLogEntry } from "../../src/store/types.ts";
import {
  onlyRunId,
  PIPELINE_STEPS,
  pipelineScript,
  pipelineWorkspace,
  waitFor,
} from "./helpers.ts";
import { type CommandResult, finish, runCli, spawnCli } from "../cli/helpers.ts";

/** The run-agent CLI in this process (`main(argv, io)`) with the user's folder `root`. */
const runAgentInProcess = (root: string, args: string[]) => runCli(args, { userDir: root });

const TOPIC = ["--topic", "crash test"];
/** Runs the pipeline agent in its own process, which kills itself at `crashAt` (crash_hook.ts). */
async function crashedRun(
  ws: { root: string; script: string },
  crashAt: string,
): Promise<CommandResult> {
  const args = ["--agent", "pipeline", "--script", ws.script, ...TOPIC];
  const killed = await finish(
    spawnCli("run-agent", args, { userDir: ws.root, env: { STEPFLOW_TEST_CRASH_AT: crashAt } }),
  );
  assert.equal(killed.signal, "SIGKILL", `the run did not crash at ${crashAt}: ${killed.stderr}`);
  return killed;
}

/** What must match between runs: everything but times. */
function shape(history: LoggedHistoryEntry[]): string[] {
  return history.map((h) =>
    [h.iteration, h.stepId, h.attempt, h.intent ?? "-", h.transition, h.nextStepId ?? "-"].join(" ")
  );
}

async function recorded(runDir: string, runId: string) {
  const store = new FileRunStore(runDir);
  const checkpoint = (await store.loadCheckpoint(runId))!;
  const log = await store.readLog(runId);
  const state = checkpoint.state as { historyLength: number; usage: unknown; handoff: unknown };
  return { checkpoint, log, state, history: historyFromLog(log, state.historyLength) };
}

/** The reference: the same agent and script, never interrupted (run once, when first needed). */
let referenceRun: ReturnType<typeof recorded> | undefined;
function reference(): ReturnType<typeof recorded> {
  return referenceRun ??= (async () => {
    const ws = await pipelineWorkspace();
    const res = await runAgentInProcess(ws.root, [
      "--agent",
      "pipeline",
      "--script",
      ws.script,
      ...TOPIC,
    ]);
    assert.equal(res.code, 0, res.stderr);
    const run = await recorded(ws.runDir, await onlyRunId(ws.runDir));
    assert.equal(run.history.length, PIPELINE_STEPS.length + 1);
    return run;
  })();
}

/**
 * Resumes the interrupted run in `ws` and checks it against the reference: same history, usage and
 * handoff; iterations whose checkpoint was written before the crash never started again.
 */
async function resumeAndCheck(ws: { root: string; script: string; runDir: string }) {
  const runId = await onlyRunId(ws.runDir);
  const before = await recorded(ws.runDir, runId);
  assert.equal(before.checkpoint.status, "running", "the crash left a resumable run");
  const committed = before.state.historyLength;

  const listed = await runAgentInProcess(ws.root, ["--agent", "pipeline", "--runs"]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`${runId} .* interrupted `));

  const resumed = await runAgentInProcess(ws.root, [
    "--agent",
    "pipeline",
    "--script",
    ws.script,
    "--resume",
    runId,
  ]);
  assert.equal(resumed.code, 0, resumed.stderr);

  const after = await recorded(ws.runDir, runId);
  const ref = await reference();
  assert.equal(after.checkpoint.status, "completed");
  assert.deepEqual(shape(after.history), shape(ref.history));
  // The spend is in the log: every call made — the killed drive's included, even one whose
  // iteration ran again — is a model_call line, and the run's usage counts each exactly once.
  const calls = after.log.filter((l) => l.type === "model_call");
  const usage = after.state.usage as Record<string, number>;
  assert.equal(usage.calls, calls.length);
  assert.ok(usage.calls >= (ref.state.usage as Record<string, number>).calls);
  const tokens = (key: "inputTokens" | "outputTokens") =>
    calls.reduce((sum, l) => sum + ((l.usage as Record<string, number>)[key] ?? 0), 0);
  assert.equal(usage.inputTokens, tokens("inputTokens"));
  assert.equal(usage.outputTokens, tokens("outputTokens"));
  assert.deepEqual(after.state.handoff, ref.state.handoff);

  // Nothing that finished ran twice: iterations covered by the crash-time checkpoint have exactly
  // one step_start in the whole log, and the resumed process started at the next one.
  const starts = (log: RunLogEntry[]) => log.filter((l) => l.type === "step_start");
  const marker = after.log.findIndex((l) => l.type === "run_resume");
  assert.ok(marker > 0);
  const resumedStarts = starts(after.log.slice(marker)).map((l) => l.iteration as number);
  assert.equal(resumedStarts[0], committed + 1, "resume starts at the first unfinished iteration");
  for (let it = 1; it <= committed; it++) {
    assert.equal(
      starts(after.log).filter((l) => l.iteration === it).length,
      1,
      `iteration ${it} finished before the crash and must not run again`,
    );
  }
  return { runId, committed, resumed };
}

Deno.test("SIGKILL while a backend call is in flight: resume re-runs only that step", async () => {
  const ws = await pipelineWorkspace();
  // The killed run's third step (work.test) answers only after a minute: it is surely in flight
  // when the kill comes, however slow the machine. The resume answers it from the plain script.
  const hanging = pipelineScript();
  (hanging[PIPELINE_STEPS[2]][0] as Record<string, unknown>).delayMs = 60_000;
  const hangingScript = join(ws.root, "hanging.json");
  await Deno.writeTextFile(hangingScript, JSON.stringify(hanging));
  const child = spawnCli(
    "run-agent",
    ["--agent", "pipeline", "--script", hangingScript, ...TOPIC],
    {
      userDir: ws.root,
    },
  );
  const runId = await waitFor("the run to start", async () => {
    try {
      return await onlyRunId(ws.runDir);
    } catch {
      return undefined;
    }
  });
  const store = new FileRunStore(ws.runDir);
  // Wait until iteration 3 is in flight, then kill the process that holds the run's lock.
  await waitFor("iteration 3 to start", async () => {
    const log = await store.readLog(runId);
    return log.some((l) => l.type === "step_start" && l.iteration === 3) ? true : undefined;
  });
  const lock = JSON.parse(await Deno.readTextFile(join(ws.runDir, `${runId}.lock`)));
  assert.equal(lock.pid, child.pid, "the lock names the process that drives the run");
  Deno.kill(lock.pid, "SIGKILL");
  const killed = await finish(child);
  assert.equal(killed.signal, "SIGKILL");
  await Deno.stat(join(ws.runDir, `${runId}.lock`)); // a dead process leaves its lock file behind

  const { committed } = await resumeAndCheck(ws);
  assert.equal(committed, 2);
});

/** The checkpoint file's `logEntries` (the cache), or undefined when there is none. */
async function cachedEntries(runDir: string, runId: string): Promise<number | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(join(runDir, `${runId}.checkpoint.json`))).logEntries;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * The crash points of the test below, one killed run each. The runs are independent processes, so
 * they run three at a time before the checks (which resume in this process, one after the other).
 */
const CRASH_POINTS = [
  "checkpoint-unlogged:3",
  "checkpoint-torn:3",
  "checkpoint-logged:4",
  "checkpoint-logged:3",
  "append-torn:8",
  "append-torn:1",
  "checkpoint-temp:1",
  "checkpoint-logged:2",
];

Deno.test("SIGKILL at each crash point of the store, then --resume", async (t) => {
  const crashed = new Map<string, { root: string; script: string; runDir: string }>();
  const queue = [...CRASH_POINTS];
  await Promise.all([1, 2, 3].map(async () => {
    for (let point = queue.shift(); point !== undefined; point = queue.shift()) {
      const ws = await pipelineWorkspace();
      await crashedRun(ws, point);
      crashed.set(point, ws);
    }
  }));

  await t.step(
    "SIGKILL before an iteration's checkpoint reached the log: the old checkpoint wins",
    async () => {
      // Checkpoint 1 follows run_start, checkpoint N+1 iteration N: crash while recording iteration 2.
      const ws = crashed.get("checkpoint-unlogged:3")!;
      const runId = await onlyRunId(ws.runDir);
      const before = await recorded(ws.runDir, runId);
      // Iteration 2's step_end reached the log, but not its checkpoint: it is not finished.
      assert.equal(before.log.filter((l) => l.type === "step_end").length, 2);
      const { committed } = await resumeAndCheck(ws);
      assert.equal(committed, 1);
    },
  );

  await t.step(
    "SIGKILL halfway through a checkpoint's log line: the torn line is cut off, the old checkpoint wins",
    async () => {
      const ws = crashed.get("checkpoint-torn:3")!;
      const runId = await onlyRunId(ws.runDir);
      const text = await Deno.readTextFile(join(ws.runDir, `${runId}.jsonl`));
      assert.match(text.slice(text.lastIndexOf("\n") + 1), /^\{"ts":.*"type":"store_checkpoint"/);
      const { committed, resumed } = await resumeAndCheck(ws);
      assert.equal(committed, 1);
      assert.match(resumed.stderr, /ended with a torn line .* it was cut off before appending/);
    },
  );

  await t.step(
    "SIGKILL right after a checkpoint's flush, with a stale cache: resume repeats no finished iteration",
    async () => {
      const ws = crashed.get("checkpoint-logged:4")!;
      const runId = await onlyRunId(ws.runDir);
      // The checkpoint file is the cache written at the run's first checkpoint (run_start only); the
      // log holds three iterations more (step_start, model_call, step_end each).
      assert.equal(await cachedEntries(ws.runDir, runId), 1);
      const before = await recorded(ws.runDir, runId);
      assert.equal(before.checkpoint.logEntries, 10);
      const { committed } = await resumeAndCheck(ws);
      assert.equal(committed, 3);
    },
  );

  await t.step(
    "SIGKILL with no checkpoint file at all: the run is rebuilt from the log",
    async () => {
      const ws = crashed.get("checkpoint-logged:3")!;
      const runId = await onlyRunId(ws.runDir);
      await Deno.remove(join(ws.runDir, `${runId}.checkpoint.json`));
      const { committed } = await resumeAndCheck(ws);
      assert.equal(committed, 2);
    },
  );

  await t.step(
    "SIGKILL in the middle of a log append: the torn line is cut off on resume",
    async () => {
      // Appends: run_start, then step_start, model_call and step_end per iteration: the 8th is
      // iteration 3's start.
      const ws = crashed.get("append-torn:8")!;
      const runId = await onlyRunId(ws.runDir);
      const text = await Deno.readTextFile(join(ws.runDir, `${runId}.jsonl`));
      assert.ok(!text.endsWith("\n"), "the log ends in a torn line");
      const { committed, resumed } = await resumeAndCheck(ws);
      assert.equal(committed, 2);
      assert.match(resumed.stderr, /ended with a torn line .* it was cut off before appending/);
    },
  );

  await t.step(
    "a crash before the first checkpoint is a clear error, never a silent restart",
    async () => {
      // The very first append (run_start) is torn: there is no entry and no checkpoint.
      const ws = crashed.get("append-torn:1")!;
      const runId = await onlyRunId(ws.runDir);
      const res = await runAgentInProcess(ws.root, [
        "--agent",
        "pipeline",
        "--script",
        ws.script,
        "--resume",
        runId,
      ]);
      assert.equal(res.code, 2);
      assert.match(res.stderr, new RegExp(`Run ${runId} has a run log \\(.*${runId}\\.jsonl\\)`));
      assert.match(res.stderr, /no checkpoint .* Start the run again/);
      const show = await runAgentInProcess(ws.root, ["--agent", "pipeline", "--show", runId]);
      assert.equal(show.code, 0, show.stderr);
      assert.match(
        show.stdout,
        /No checkpoint: the process stopped before the run's first checkpoint/,
      );
    },
  );

  await t.step(
    "SIGKILL before the first cache write's rename: its complete temp file is read",
    async () => {
      const ws = crashed.get("checkpoint-temp:1")!;
      const runId = await onlyRunId(ws.runDir);
      await assert.rejects(
        Deno.stat(join(ws.runDir, `${runId}.checkpoint.json`)),
        Deno.errors.NotFound,
      );
      const { committed } = await resumeAndCheck(ws);
      assert.equal(committed, 0);
    },
  );

  await t.step("two concurrent resumes of one run: exactly one proceeds", async () => {
    const ws = crashed.get("checkpoint-logged:2")!;
    const runId = await onlyRunId(ws.runDir);
    // The resumed steps take 250 ms each, so the winner still holds the run when its rival tries.
    const slowScript = join(ws.root, "slow.json");
    await Deno.writeTextFile(slowScript, JSON.stringify(pipelineScript(250)));
    const args = ["--agent", "pipeline", "--script", slowScript, "--resume", runId];
    const [a, b] = await Promise.all([
      finish(spawnCli("run-agent", args, { userDir: ws.root })),
      finish(spawnCli("run-agent", args, { userDir: ws.root })),
    ]);
    const winners = [a, b].filter((r) => r.code === 0);
    const losers = [a, b].filter((r) => r.code !== 0);
    assert.equal(winners.length, 1, `one resume must win:\n${a.stderr}\n---\n${b.stderr}`);
    assert.equal(losers[0].code, 2);
    assert.match(
      losers[0].stderr,
      new RegExp(
        // The winner writes its pid just after taking the lock: a loser that looks in between can
        // only say "another process".
        `Run ${runId} (is already being driven by (pid \\d+ on host .* since|another process)|changed while this process was preparing)`,
      ),
    );
    const after = await recorded(ws.runDir, runId);
    assert.deepEqual(shape(after.history), shape((await reference()).history));
    assert.equal(after.log.filter((l) => l.type === "run_resume").length, 1);
    for (const it of after.history.map((h) => h.iteration)) {
      const runsOf = after.log.filter((l) => l.type === "step_start" && l.iteration === it);
      assert.equal(runsOf.length, 1, `iteration ${it} ran once`);
    }
  });
});
