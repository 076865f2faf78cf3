/**
 * On PostgreSQL, a killed run continues on the backend it started with: `run-agent --store URL`
 * killed mid-call is `interrupted` in `--runs` and `--show`, and the `--resume` hint printed there
 * works as printed (no `--script`); a run whose worker was killed is taken over by a worker with no
 * backend flags, which drives it on the recorded scripted backend. The killed processes are real.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { finish, printedArgs, runCli, spawnCli } from "../cli/helpers.ts";
import { pipelineScript, pipelineWorkspace, waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

/** A script whose third step answers only after a minute: surely in flight when the kill comes. */
async function hangingScript(path: string): Promise<void> {
  const script = pipelineScript();
  (script["work.test"][0] as Record<string, unknown>).delayMs = 60_000;
  await Deno.writeTextFile(path, JSON.stringify(script));
}

/**
 * Waits until the run committed its second iteration: its third call (a minute long) is then in
 * flight. The PostgreSQL store commits an iteration's log lines with its checkpoint, so the third
 * iteration's start is not visible before it ends.
 */
async function inFlight(store: PostgresRunStore, runId: () => Promise<string | undefined>) {
  return await waitFor("iteration 2 to be committed", async () => {
    const id = await runId();
    if (!id) return undefined;
    const state = (await store.loadCheckpoint(id))?.state;
    return typeof state?.historyLength === "number" && state.historyLength >= 2 ? id : undefined;
  });
}

Deno.test({
  name: "PostgreSQL: a killed run-agent run is interrupted everywhere; the printed --resume works",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const ws = await pipelineWorkspace();
    await hangingScript(ws.script);
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    try {
      const child = spawnCli(
        "run-agent",
        ["--agent", "pipeline", "--store", db, "--script", ws.script, "--topic", "pg"],
        { userDir: ws.root, stdout: "null", stderr: "null" },
      );
      const runId = await inFlight(store, async () => (await store.list())[0]?.runId);
      child.kill("SIGKILL");
      assert.equal((await finish(child)).signal, "SIGKILL");

      const listed = await runCli(["--agent", "pipeline", "--store", db, "--runs"], {
        userDir: ws.root,
      });
      assert.match(listed.stdout, new RegExp(`${runId} .* interrupted `));
      const hint = /Continue an interrupted run with: (.*)\n/.exec(listed.stdout)?.[1];
      assert.ok(hint, listed.stdout);
      const shown = await runCli(["--agent", "pipeline", "--store", db, "--show", runId], {
        userDir: ws.root,
      });
      assert.match(shown.stdout, new RegExp(`^Run ${runId} · agent pipeline · interrupted\n`));

      // The same file now answers at once; the hint, as printed, resumes on it.
      await Deno.writeTextFile(ws.script, JSON.stringify(pipelineScript()));
      const resumed = await runCli(printedArgs(hint, ws.root), {
        userDir: ws.root,
      });
      assert.equal(resumed.code, 0, resumed.stderr);
      const done = (await store.loadCheckpoint(runId))!;
      assert.equal(done.status, "completed");
      assert.deepEqual(done.state.backendChoice, { backend: "scripted", script: ws.script });
    } finally {
      await store.close();
      await Deno.remove(ws.root, { recursive: true });
    }
  },
});

Deno.test({
  name: "worker: a run whose worker was killed continues on the backend it recorded",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const ws = await pipelineWorkspace();
    await hangingScript(ws.script);
    const store = new PostgresRunStore(db, { agent: "pipeline", leaseMs: 500 });
    const lines: string[] = [];
    let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
    try {
      const first = spawnCli(
        "worker",
        ["--store", db, "--script", ws.script, "--lease-ms", "500", "--poll-ms", "100"],
        { userDir: ws.root, stdout: "null", stderr: "null" },
      );
      const submitted = await runCli(
        ["--agent", "pipeline", "--topic", "w", "--store", db, "--submit"],
        { userDir: ws.root },
      );
      assert.equal(submitted.code, 0, submitted.stderr);
      const runId = await inFlight(store, async () => (await store.list())[0]?.runId);
      assert.deepEqual(
        (await store.loadCheckpoint(runId))!.state.backendChoice,
        { backend: "scripted", script: ws.script },
      );
      first.kill("SIGKILL");
      await finish(first);

      // A worker with no backend flags (its agents' own backend would be claude-code) takes it.
      await Deno.writeTextFile(ws.script, JSON.stringify(pipelineScript()));
      worker = await startWorker({
        store: db,
        agentRoot: join(ws.root, ".agent"),
        cwd: ws.root,
        leaseMs: 500,
        pollMs: 100,
        log: (line) => void lines.push(line),
      });
      await waitFor(
        "the run to complete",
        async () => (await store.loadCheckpoint(runId))?.status === "completed" || undefined,
        30_000,
      );
      assert.ok(
        lines.some((l) => l.includes(`run ${runId} (pipeline): resuming`)),
        lines.join("\n"),
      );
      const log = await store.readLog(runId);
      assert.ok(log.some((l) => l.type === "run_resume"));
    } finally {
      await worker?.stop();
      await store.close();
      await Deno.remove(ws.root, { recursive: true });
    }
  },
});
