import assert from "node:assert/strict";
import { join } from "node:path";
import { StepflowError } from "../../src/errors.ts";
import { FileRunStore } from "../../src/store/file.ts";
import {
  assertLockHeld,
  hostName,
  lockPlanFile,
  planLockSubject,
} from "../../src/store/file_lock.ts";
import type { RunCheckpoint } from "../../src/store/types.ts";

async function setup(staleLockMs?: number) {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-lock-" });
  const warnings: string[] = [];
  const make = () =>
    new FileRunStore(dir, {
      onWarning: (m) => void warnings.push(m),
      ...(staleLockMs ? { staleLockMs } : {}),
    });
  return { dir, warnings, make };
}

/** Polls `reached` every 10 ms; fails after 10 s with what was awaited. */
async function waitUntil(what: string, reached: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!reached()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function lockError(promise: Promise<unknown>): Promise<StepflowError> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, `expected RUN_LOCKED, got ${error}`);
  assert.equal(error.code, "RUN_LOCKED", error.message);
  return error;
}

function writeLockFile(dir: string, runId: string, info: Record<string, unknown>, ageMs = 0) {
  const path = join(dir, `${runId}.lock`);
  Deno.writeTextFileSync(
    path,
    JSON.stringify({ runId, started: "2026-01-01T00:00:00.000Z", ...info }),
  );
  const when = new Date(Date.now() - ageMs);
  Deno.utimeSync(path, when, when);
  return path;
}

/** A process id that certainly belongs to no running process: one that just exited. */
async function deadPid(): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), { args: ["eval", "0"] }).spawn();
  await child.status;
  return child.pid;
}

Deno.test("a second lock of a run, from another store or the same, is refused naming the holder", async () => {
  const { make, dir } = await setup();
  const a = make();
  const held = await a.lock("r1");
  const info = JSON.parse(await Deno.readTextFile(join(dir, "r1.lock")));
  assert.equal(info.pid, Deno.pid);
  assert.equal(info.hostname, hostName());
  const error = await lockError(make().lock("r1"));
  assert.match(
    error.message,
    new RegExp(
      `^Run r1 is already being driven by pid ${Deno.pid} on host ${hostName()} since ${info.started} \\(lock file .*r1\\.lock\\)`,
    ),
  );
  await lockError(a.lock("r1"));
  await held.release();
  await held.release(); // idempotent
  const again = await make().lock("r1");
  await again.release();
});

Deno.test("a lock held by another process is refused; once that process is killed it is taken over", async () => {
  const { make, dir, warnings } = await setup();
  const script = `
    import { FileRunStore } from ${
    JSON.stringify(new URL("../../src/store/file.ts", import.meta.url).href)
  };
    await new FileRunStore(${JSON.stringify(dir)}).lock("r1");
    console.log("locked");
    await new Promise(() => setInterval(() => {}, 1000));
  `;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.getReader();
  const { value } = await reader.read();
  assert.match(new TextDecoder().decode(value), /locked/);
  const error = await lockError(make().lock("r1"));
  assert.match(error.message, new RegExp(`by pid ${child.pid} on host`));

  child.kill("SIGKILL");
  await child.status;
  reader.releaseLock();
  await child.stdout.cancel();
  const held = await make().lock("r1");
  await held.release();
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0],
    new RegExp(
      `took over the stale lock of run r1 \\(pid ${child.pid} on host .*\\): process ${child.pid} is no longer running`,
    ),
  );
});

Deno.test("stale lock files: a dead pid on this host, an unreadable file, an old heartbeat", async () => {
  const { make, dir, warnings } = await setup();
  const dead = await deadPid();
  writeLockFile(dir, "r1", { pid: dead, hostname: hostName() });
  await (await make().lock("r1")).release();
  assert.match(warnings.pop()!, new RegExp(`process ${dead} is no longer running`));

  Deno.writeTextFileSync(join(dir, "r2.lock"), '{"pid": 12');
  await (await make().lock("r2")).release();
  assert.match(warnings.pop()!, /the lock file is unreadable/);

  // Another host: honoured while its heartbeat is fresh, stale after the bound.
  writeLockFile(dir, "r3", { pid: 4242, hostname: "elsewhere.example" });
  const error = await lockError(make().lock("r3"));
  assert.match(error.message, /by pid 4242 on host elsewhere\.example since 2026-01-01/);
  writeLockFile(dir, "r3", { pid: 4242, hostname: "elsewhere.example" }, 61_000);
  await (await make().lock("r3")).release();
  assert.match(warnings.pop()!, /no heartbeat from host elsewhere\.example for 61 s/);

  // A live pid on this host whose OS lock is free (a file system without locks) is honoured while
  // its heartbeat is fresh; with an old heartbeat the pid must have been reused.
  writeLockFile(dir, "r4", { pid: Deno.pid, hostname: hostName() });
  await lockError(make().lock("r4"));
  writeLockFile(dir, "r4", { pid: Deno.pid, hostname: hostName() }, 61_000);
  await (await make().lock("r4")).release();
  assert.match(warnings.pop()!, /heartbeat is 61 s old/);
  assert.equal(warnings.length, 0);
});

Deno.test("the holder refreshes its heartbeat, and notices when another host took its lock", async () => {
  const { make, dir, warnings } = await setup(1000);
  const store = make();
  const held = await store.lock("r1");
  const path = join(dir, "r1.lock");
  const old = new Date(Date.now() - 10_000);
  Deno.utimeSync(path, old, old);
  await waitUntil(
    "the heartbeat refreshed the lock file",
    () => Deno.statSync(path).mtime!.getTime() > Date.now() - 2000,
  );

  // Simulate a takeover from another host after our heartbeat lapsed.
  writeLockFile(dir, "r1", { pid: 1, hostname: "elsewhere.example", token: "theirs" });
  await waitUntil("the holder noticed the takeover", () => warnings.length > 0);
  assert.match(
    warnings.join("\n"),
    /lost the lock of run r1: pid 1 on host elsewhere\.example took it over/,
  );
  const cp: RunCheckpoint = {
    version: 1,
    runId: "r1",
    agent: "a",
    status: "running",
    startedAt: "t",
    updatedAt: "t",
    logEntries: 0,
    state: {},
  };
  await assert.rejects(
    store.saveCheckpoint(cp),
    /RUN_LOCK_LOST|another process took over its lock/,
  );
  await assert.rejects(
    store.append("r1", { ts: "t", runId: "r1", type: "x" }),
    /took over its lock/,
  );
  await held.release();
  // Their lock file stays: it is not ours to remove.
  assert.equal(JSON.parse(Deno.readTextFileSync(path)).token, "theirs");
});

Deno.test("a run that moved on after this store loaded it cannot be locked (RUN_CHANGED)", async () => {
  const { make } = await setup();
  const a = make();
  const b = make();
  const cp = (logEntries: number): RunCheckpoint => ({
    version: 1,
    runId: "r1",
    agent: "a",
    status: "running",
    startedAt: "2026-01-01T00:00:00.000Z",
    updatedAt: new Date(Date.now() + logEntries).toISOString(),
    logEntries,
    state: {},
  });
  let lock = await b.lock("r1");
  await b.append("r1", { ts: "t", runId: "r1", type: "run_start" });
  await b.saveCheckpoint(cp(1));
  await lock.release();

  await a.loadCheckpoint("r1"); // a prepares to resume…
  lock = await b.lock("r1"); // …while b drives the run further
  await b.append("r1", { ts: "t", runId: "r1", type: "step_end" });
  await b.saveCheckpoint(cp(2));
  await lock.release();

  await assert.rejects(
    a.lock("r1"),
    /Run r1 changed while this process was preparing to continue it/,
  );
  // Loading again gives the current state, and then the lock is granted.
  await a.loadCheckpoint("r1");
  await (await a.lock("r1")).release();
});

Deno.test("racers released at one instant on a fresh, a dead and a pid-reused lock: exactly one wins each time", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-lock-race-" });
  const dead = await deadPid();
  const racers = Array.from(
    { length: 3 },
    () =>
      new Worker(new URL("./lock_race_worker.ts", import.meta.url).href, {
        type: "module",
      }),
  );
  const next = (worker: Worker) =>
    new Promise<Record<string, unknown>>((resolve) => {
      worker.onmessage = (event) => resolve(event.data);
    });
  try {
    const kinds = ["fresh", "dead", "reused"] as const;
    for (let trial = 0; trial < 30; trial++) {
      const kind = kinds[trial % 3];
      const plan = join(dir, `plan${trial}.json`);
      if (kind === "dead") {
        writeLockFile(dir, `plan${trial}.json`, { pid: dead, hostname: hostName() });
      }
      // A two-day-old lock whose pid now belongs to another live process (this one).
      if (kind === "reused") {
        writeLockFile(
          dir,
          `plan${trial}.json`,
          { pid: Deno.pid, hostname: hostName() },
          2 * 86_400_000,
        );
      }
      const barrier = new SharedArrayBuffer(4);
      const ready = racers.map(next);
      for (const racer of racers) racer.postMessage({ race: { path: `${plan}.lock`, barrier } });
      await Promise.all(ready);
      const outcomes = racers.map(next);
      Atomics.store(new Int32Array(barrier), 0, 1);
      Atomics.notify(new Int32Array(barrier), 0);
      const results = await Promise.all(outcomes);
      const winners = results.filter((r) => r.won);
      assert.equal(winners.length, 1, `trial ${trial} (${kind}): ${JSON.stringify(results)}`);
      for (const loser of results.filter((r) => !r.won)) assert.equal(loser.code, "PLAN_LOCKED");
      const released = racers.map(next);
      for (const racer of racers) racer.postMessage({});
      await Promise.all(released);
    }
  } finally {
    for (const racer of racers) racer.terminate();
  }
});

Deno.test("a plan file lock names the plan file and uses PLAN_LOCKED / PLAN_LOCK_LOST", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "plan.md");
  const held = lockPlanFile(file, { runId: "a", onWarning: () => {} });
  const error = (() => {
    try {
      lockPlanFile(file, { runId: "b", onWarning: () => {} });
    } catch (e) {
      return e as StepflowError;
    }
  })();
  assert.equal(error?.code, "PLAN_LOCKED");
  assert.match(
    error!.message,
    new RegExp(
      `^Plan file .*plan\\.md is already being run by pid ${Deno.pid} on host .* since .* \\(lock file .*plan\\.md\\.lock\\)\\. Only one process may run a plan file at a time: wait for it to finish or stop it\\.`,
    ),
  );
  assertLockHeld(held, planLockSubject(file)); // held: no error
  held.release();
  const lost = { path: `${file}.lock`, lost: true, release() {}, [Symbol.dispose]() {} };
  assert.throws(
    () => assertLockHeld(lost, planLockSubject(file)),
    (e: unknown) => e instanceof StepflowError && e.code === "PLAN_LOCK_LOST",
  );
});
