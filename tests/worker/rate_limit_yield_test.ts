/**
 * A worker does not sleep in its slot through a rate limit: on the real PostgreSQL store and queue,
 * a run whose model server answers 429 with a reset gives its slot back (the lease released, the
 * run queued again for the reset time with pg-boss's `startAfter`), the one slot drives another
 * run meanwhile, and the first run continues after the reset exactly as a taken-over run does: its
 * in-flight iteration made again from its last checkpoint. The orphan reaper, with a lease short
 * enough to run many times during the wait, does not bring it back early.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { PostgresRunStore } from "../../src/store/postgres.ts";
import { submitRun } from "../../src/worker/submit.ts";
import { startWorker } from "../../src/worker/worker.ts";
import { openAiChunks, openAiCompletion } from "../llm/fake_server.ts";
import { PIPELINE_STEPS, pipelineWorkspace, waitFor } from "../store/helpers.ts";
import { freshDatabase, pg } from "../store/pg_server.ts";

/** The server's wait on the rate-limited run's first call. */
const RESET_MS = 2000;

interface Seen {
  topic: string;
  stepId: string;
  at: number;
  status: number;
}

/**
 * An OpenAI-compatible server on 127.0.0.1 answering the pipeline agent's steps (streamed, as the
 * backend asks), read from each request's prompt; the first call of topic `limited` gets a 429
 * whose `retry-after-ms` is {@linkcode RESET_MS}.
 */
function modelServer() {
  const seen: Seen[] = [];
  let limitedOnce = false;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json() as { messages: { role: string; content: string }[] };
    const prompt = body.messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
    const step = /^Do (\S+) for (\w+) /.exec(prompt);
    const stepId = step?.[1] ?? "complete.report";
    const topic = step?.[2] ?? /^Report on (\w+)\./.exec(prompt)?.[1] ?? "?";
    if (topic === "limited" && !limitedOnce) {
      limitedOnce = true;
      seen.push({ topic, stepId, at: Date.now(), status: 429 });
      return Response.json(
        { error: { message: "Rate limit reached for requests", type: "rate_limit_exceeded" } },
        { status: 429, headers: { "retry-after-ms": String(RESET_MS) } },
      );
    }
    seen.push({ topic, stepId, at: Date.now(), status: 200 });
    const last = stepId === PIPELINE_STEPS.at(-1);
    const output = stepId === "complete.report"
      ? { stepId, summary: `${topic} done` }
      : { stepId, note: "ok", next_action: { action: last ? "complete" : "next" } };
    const events = openAiChunks(openAiCompletion(JSON.stringify(output)), { includeUsage: true });
    return new Response(events.map((e) => `data: ${e.data}\n\n`).join(""), {
      headers: { "content-type": "text/event-stream" },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/v1`, seen, close: () => server.shutdown() };
}

Deno.test({
  name: "worker: a rate-limited run gives its slot back and continues after the reset",
  ignore: pg === undefined,
  async fn() {
    const db = await freshDatabase(pg!);
    const ws = await pipelineWorkspace();
    // The agent's own backend is the workers' (a submission's models belong to it).
    const agentJson = join(ws.root, ".agent/pipeline/agent.json");
    const agent = JSON.parse(await Deno.readTextFile(agentJson));
    agent.behavior.backend = "openai";
    await Deno.writeTextFile(agentJson, JSON.stringify(agent));
    const model = modelServer();
    const lines: string[] = [];
    const store = new PostgresRunStore(db, { agent: "pipeline", leaseMs: 400 });
    let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
    try {
      worker = await startWorker({
        store: db,
        agentRoot: join(ws.root, ".agent"),
        cwd: ws.root,
        concurrency: 1,
        pollMs: 100,
        leaseMs: 400,
        rateLimitYieldMs: 500,
        backend: { backend: "openai", baseUrl: model.url, model: "gpt-5.4-mini" },
        env: {},
        log: (line) => void lines.push(line),
      });
      const definition = await loadAgentDefinition("pipeline", { cwd: ws.root });
      const limited = await submitRun(store, definition, { args: { topic: "limited" } }, {
        url: db,
      });
      await waitFor("the 429", () => Promise.resolve(model.seen.find((s) => s.status === 429)));
      // Submitted with a fallback model (`--submit --fallback-model`): the worker's run records it.
      const other = await submitRun(
        store,
        definition,
        { args: { topic: "other" }, fallbackModels: ["gpt-5.4-nano"] },
        { url: db },
      );
      const completed = (runId: string) => async () =>
        (await store.loadCheckpoint(runId))?.status === "completed" || undefined;
      await waitFor("the other run to complete", completed(other), 30_000);
      await waitFor("the rate-limited run to complete", completed(limited), 30_000);

      const refused = model.seen.find((s) => s.status === 429)!;
      const limitedCalls = model.seen.filter((s) => s.topic === "limited" && s.status === 200);
      const otherCalls = model.seen.filter((s) => s.topic === "other");
      // The one slot drove the other run while the first waited: with one slot, the other run could
      // only start because the first gave it back (ordering, not a time bound a busy machine breaks).
      assert.equal(otherCalls.length, PIPELINE_STEPS.length + 1);
      assert.ok(
        otherCalls[0].at < limitedCalls[0].at,
        "the other run started while the rate-limited one waited",
      );
      // The first run went on only after the reset, from the iteration that was in flight.
      assert.ok(
        limitedCalls[0].at >= refused.at + RESET_MS - 50,
        `resumed ${limitedCalls[0].at - refused.at} ms after the 429`,
      );
      assert.deepEqual(limitedCalls.map((s) => s.stepId), [...PIPELINE_STEPS, "complete.report"]);
      assert.equal(refused.stepId, PIPELINE_STEPS[0]);

      // The worker said so; the run was resumed as a taken-over run is.
      assert.ok(
        lines.some((l) =>
          new RegExp(
            `^run ${limited}: waiting for the rate limit until \\d\\d:\\d\\d:\\d\\d \\(HTTP 429 rate_limit_exceeded: Rate limit reached for requests\\); slot given back, queued again for then$`,
          ).test(l)
        ),
        lines.join("\n"),
      );
      assert.ok(lines.some((l) => l === `run ${limited} (pipeline): resuming`), lines.join("\n"));
      const log = await store.readLog(limited);
      const yielded = log.find((e) => e.type === "backend_retry");
      assert.equal(yielded?.yielded, true);
      assert.equal(typeof yielded?.waitUntil, "string");
      assert.deepEqual(
        log.filter((e) => e.type.startsWith("run_")).map((e) => e.type),
        ["run_start", "run_resume", "run_end"],
      );
      const otherChoice = (await store.loadCheckpoint(other))!.state as { backendChoice?: unknown };
      assert.deepEqual(otherChoice.backendChoice, {
        backend: "openai",
        model: "gpt-5.4-mini",
        baseUrl: model.url,
        fallbackModels: ["gpt-5.4-nano"],
      });
      const checkpoint = (await store.loadCheckpoint(limited))!;
      const history = (checkpoint.state as { historyLength: number }).historyLength;
      assert.equal(history, PIPELINE_STEPS.length + 1, "no iteration was recorded twice");
    } finally {
      await worker?.stop();
      await store.close();
      await model.close();
      await Deno.remove(ws.root, { recursive: true });
    }
  },
});
