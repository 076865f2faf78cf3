/**
 * Durability "process": the old checkpoint is removed just before the temp file is renamed into its
 * place. A process killed in that instant leaves the complete temp file as the only checkpoint;
 * readers use it and the next write promotes it first, so nothing is lost.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FileRunStore } from "../../src/store/file.ts";
import type { RunCheckpoint } from "../../src/store/types.ts";

const FILE_STORE = new URL("../../src/store/file.ts", import.meta.url).href;

function checkpoint(n: number): RunCheckpoint {
  return {
    version: 1,
    runId: "r1",
    agent: "a",
    status: "running",
    startedAt: "2026-01-01T00:00:00.000Z",
    updatedAt: `2026-01-01T00:00:0${n}.000Z`,
    logEntries: n,
    state: { historyLength: n },
  };
}

Deno.test("process durability: a kill between removing the checkpoint and the rename loses nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-durability-" });
  // A real process writes three checkpoints and is SIGKILLed inside the third write.
  const script = `
    import { FileRunStore } from ${JSON.stringify(FILE_STORE)};
    const store = new FileRunStore(${JSON.stringify(dir)}, { durability: "process" });
    await store.lock("r1");
    for (let n = 1; n <= 3; n++) {
      await store.append("r1", { ts: "2026-01-01T00:00:00.000Z", runId: "r1", type: "step_end" });
      await store.saveCheckpoint(${checkpoint.toString()}(n));
    }
    console.log("not killed");
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", script],
    env: { STEPFLOW_TEST_CRASH_AT: "checkpoint-removed:3" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.signal, "SIGKILL", new TextDecoder().decode(out.stderr));
  await assert.rejects(Deno.stat(join(dir, "r1.checkpoint.json")), Deno.errors.NotFound);

  const warnings: string[] = [];
  const store = new FileRunStore(dir, {
    durability: "process",
    onWarning: (m) => void warnings.push(m),
  });
  // Readers see the complete third checkpoint.
  assert.deepEqual(await store.loadCheckpoint("r1"), checkpoint(3));
  assert.equal((await store.list())[0].steps, 3);
  // The next writer promotes it before writing its own temp file.
  const lock = await store.lock("r1"); // the dead process's lock is taken over
  assert.match(warnings.join("\n"), /took over the stale lock of run r1/);
  const fresh = new FileRunStore(dir);
  await store.append("r1", { ts: "2026-01-01T00:00:00.000Z", runId: "r1", type: "step_end" });
  await store.saveCheckpoint(checkpoint(4));
  await lock.release();
  assert.deepEqual(await fresh.loadCheckpoint("r1"), checkpoint(4));
  await assert.rejects(Deno.stat(join(dir, "r1.checkpoint.json.tmp")), Deno.errors.NotFound);
});

Deno.test("a torn temp file with no checkpoint is not a checkpoint", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow-durability-" });
  await Deno.writeTextFile(join(dir, "r1.jsonl"), '{"ts":"t","runId":"r1","type":"run_start"}\n');
  await Deno.writeTextFile(
    join(dir, "r1.checkpoint.json.tmp"),
    JSON.stringify(checkpoint(1)).slice(0, 40),
  );
  const store = new FileRunStore(dir);
  await assert.rejects(store.loadCheckpoint("r1"), /has a run log .* but no checkpoint/);
});
