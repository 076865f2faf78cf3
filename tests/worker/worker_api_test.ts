/**
 * Workers through the API against a real PostgreSQL: a run whose job fails every attempt (here:
 * every worker's copy of the agent differs from the submitted one) is given up by pg-boss after its
 * retry limit, and the worker says so, once, with the run id, the attempts, the last error and what
 * to do; the run is then failed (`--runs`), never re-queued, and `--submit --wait` ends with the reason; a worker reuses a loaded agent only while its folder's content is unchanged.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { pgConnectionOf, PostgresRunStore } from "../../src/store/postgres.ts";
import { submitRun } from "../../src/worker/submit.ts";
import { claimOrphans } from "../../src/worker/submissions.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { runCli } from "../cli/helpers.ts";
import { pipelineFiles, pipelineScript, pipelineWorkspace, waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

/** `run-agent …` in-process (its `main(argv, io)`), from the user folder `root`. */
const runAgent = (root: string, args: string[]) => runCli(args, { userDir: root });

Deno.test({
  name: "worker: a job that fails its last attempt is reported as given up",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const { root } = await pipelineWorkspace(0);
    const other = await Deno.makeTempDir({ prefix: "stepflow-other-" });
    const files = pipelineFiles();
    files.prompts["steps/complete/report/f_default.md"] = "Report briefly on {uv-topic}.";
    await writeAgent(other, "pipeline", files);
    const lines: string[] = [];
    // This worker creates the queue: two attempts (1–2 s apart) before pg-boss gives a job up. A
    // short lease, so that the run would be an orphan (re-queued) soon after if it stayed queued.
    const worker = await startWorker({
      store: db,
      agentRoot: join(other, ".agent"),
      pollMs: 100,
      leaseMs: 300,
      jobRetryLimit: 1,
      log: (line) => void lines.push(line),
    });
    const store = new PostgresRunStore(db, { agent: "pipeline", leaseMs: 300 });
    try {
      // --submit --wait follows the run until the queue gives it up, then ends with the reason.
      const waited = await runAgent(root, [
        "--agent",
        "pipeline",
        "--topic",
        "x",
        "--store",
        db,
        "--submit",
        "--wait",
      ]);
      assert.equal(waited.code, 1, waited.stderr);
      const runId = /queued run (\S+)/.exec(waited.stderr)?.[1] ?? "";
      assert.match(
        waited.stderr,
        new RegExp(
          `error: Run ${runId} failed: the queue gave it up after 2 failed attempts \\(last: Run ${runId} was submitted with agent "pipeline" at sha256:.*\\)\\. No worker will take it again; fix the cause, then submit the run again \\(stepflow submit\\)\\.`,
        ),
      );
      const gaveUp = await waitFor(
        "the worker to log the give-up",
        () => Promise.resolve(lines.find((l) => l.includes("the queue gave it up"))),
        20_000,
      );
      assert.match(
        gaveUp,
        new RegExp(
          `^error: run ${runId}: the queue gave it up after 2 failed attempts \\(last: Run ${runId} was submitted with agent "pipeline" at sha256:.*\\)\\. No worker will take it again; fix the cause, then submit the run again \\(stepflow submit\\)\\. The runs list shows it failed\\.$`,
        ),
      );
      // With this short lease the run was also re-queued as an orphan while its jobs failed (each
      // job has its own retries); once given up, it is failed and no longer an orphan.
      const after = lines.indexOf(gaveUp);
      const [run] = await store.list();
      assert.equal(run.status, "failed");
      assert.match(run.error ?? "", /^the queue gave it up after 2 failed attempts/);
      // Lease periods later neither the worker's reaper nor anyone else re-queues it.
      await new Promise((r) => setTimeout(r, 700));
      assert.deepEqual(await claimOrphans(store), []);
      assert.deepEqual(lines.slice(after).filter((l) => l.includes("re-queued")), []);
      // --runs shows it failed, with the reason.
      const listed = await runAgent(root, ["--agent", "pipeline", "--store", db, "--runs"]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(`${runId} .* failed`));
      assert.match(listed.stdout, new RegExp(`! ${runId}: the queue gave it up after 2 failed`));
    } finally {
      await worker.stop();
      await store.close();
      await Deno.remove(root, { recursive: true });
      await Deno.remove(other, { recursive: true });
    }
  },
});

Deno.test({
  name: "worker: an agent edited between two runs is loaded again for the second",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const { root } = await pipelineWorkspace(0);
    const script = pipelineScript() as Record<string, { output: unknown }[]>;
    const lines: string[] = [];
    const worker = await startWorker({
      store: db,
      agentRoot: join(root, ".agent"),
      pollMs: 100,
      log: (line) => void lines.push(line),
      backendFor: () =>
        Promise.resolve(new ScriptedBackend((req) => script[req.stepId][0] as { output: unknown })),
    });
    const store = new PostgresRunStore(db, { agent: "pipeline" });
    const prompt = join(root, ".agent/pipeline/prompts/steps/complete/report/f_default.md");
    const finished = (runId: string) => async () =>
      (await store.loadCheckpoint(runId))?.status === "completed" || undefined;
    const closingPrompt = async (runId: string) =>
      ((await store.readLog(runId)).findLast((e) => e.type === "step_start")?.prompt as {
        text: string;
      }).text;
    try {
      const submit = async () =>
        await submitRun(
          store,
          await loadAgentDefinition("pipeline", { cwd: root }),
          { args: { topic: "x" } },
          { url: db },
        );
      const first = await submit();
      await waitFor("the first run", finished(first), 20_000);
      await Deno.writeTextFile(prompt, "Edited: report on {uv-topic} in one line.");
      const second = await submit();
      await waitFor("the second run", finished(second), 20_000);
      assert.doesNotMatch(await closingPrompt(first), /Edited/);
      assert.match(await closingPrompt(second), /Edited: report on x in one line\./);
      assert.deepEqual(lines.filter((l) => l.startsWith("error")), []);
    } finally {
      await worker.stop();
      await store.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "worker: a run that waited in the queue longer than a lease keeps its one job (the orphan check queues no second)",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const { root } = await pipelineWorkspace(0);
    const script = pipelineScript() as Record<string, { output: unknown }[]>;
    const store = new PostgresRunStore(db, { agent: "pipeline", leaseMs: 300 });
    const lines: string[] = [];
    let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
    try {
      // Submitted while no worker runs (all busy, or starting): the job waits in the queue.
      const runId = await submitRun(
        store,
        await loadAgentDefinition("pipeline", { cwd: root }),
        { args: { topic: "x" } },
        { url: db },
      );
      const c = await pgConnectionOf(store);
      await waitFor(
        "a lease period since the submission",
        async () =>
          (await c.query<{ old: boolean }>(
            `SELECT created_at < clock_timestamp() - interval '400 milliseconds' AS old
             FROM ${c.schema}.runs WHERE run_id = $1`,
            [runId],
          )).rows[0].old || undefined,
      );
      // The worker's first orphan check (before it takes any job) finds the run queued and never
      // taken a lease period after its submission; its job still waits, so no second one is sent.
      worker = await startWorker({
        store: db,
        agentRoot: join(root, ".agent"),
        pollMs: 100,
        leaseMs: 300,
        log: (line) => void lines.push(line),
        backendFor: () =>
          Promise.resolve(
            new ScriptedBackend((req) => script[req.stepId][0] as { output: unknown }),
          ),
      });
      await waitFor(
        "the run",
        async () => (await store.loadCheckpoint(runId))?.status === "completed" || undefined,
        20_000,
      );
      const jobs = await waitFor("its job completed", async () => {
        const rows = (await c.query<{ state: string }>(
          `SELECT state FROM stepflow_queue.job WHERE data->>'runId' = $1`,
          [runId],
        )).rows;
        return rows.some((j) => j.state === "completed") ? rows : undefined;
      });
      assert.deepEqual(jobs, [{ state: "completed" }], "one job, the submitted one");
      assert.deepEqual(lines.filter((l) => l.includes("re-queued")), []);
    } finally {
      await worker?.stop();
      await store.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});
