/**
 * `run-agent --fallback-model` as a user runs it (a spawned `deno task run-agent`), against an
 * OpenAI-compatible server on 127.0.0.1 that rate-limits: the fallback and the wait are progress
 * lines on stderr, the run succeeds, `--show` lists the fallback under its step, and the run
 * records its fallback models so that `--resume` and workers keep them.
 */
import assert from "node:assert/strict";
import { clockTime } from "../../src/events/model_notice_text.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { openAiCompletion, openAiError, startFakeServer } from "../llm/fake_server.ts";
import { PIPELINE_STEPS, pipelineWorkspace } from "../store/helpers.ts";
import { runCli, runTask } from "./helpers.ts";

function output(stepId: string): string {
  if (stepId === "complete.report") return JSON.stringify({ stepId, summary: "all done" });
  const last = stepId === PIPELINE_STEPS.at(-1);
  return JSON.stringify({
    stepId,
    note: `${stepId} done`,
    next_action: { action: last ? "complete" : "next" },
  });
}

Deno.test("run-agent --fallback-model: the fallback and the wait show on stderr and in --show", async () => {
  const server = startFakeServer();
  const ws = await pipelineWorkspace();
  try {
    for (const stepId of [...PIPELINE_STEPS, "complete.report"]) {
      if (stepId === "work.build") {
        server.push(
          openAiError(429, "rate_limit_exceeded", "Rate limit reached for tokens per day", {
            "x-ratelimit-remaining-tokens": "0",
            "x-ratelimit-reset-tokens": "20h0m0s",
          }),
        );
      }
      if (stepId === "work.test") {
        server.push(openAiError(429, "rate_limit_exceeded", "Rate limit reached for requests", {
          "x-ratelimit-remaining-requests": "0",
          "x-ratelimit-reset-requests": "300ms",
        }));
      }
      server.push(openAiCompletion(output(stepId)));
    }
    const run = await runTask([
      "--agent",
      "pipeline",
      "--topic",
      "limits",
      "--backend",
      "openai",
      "--base-url",
      `${server.url}/v1`,
      "--model",
      "gpt-5.4-mini",
      "--fallback-model",
      "gpt-5.4-nano",
    ], { userDir: ws.root });
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stderr,
      /step work\.build #2 fell back from openai gpt-5\.4-mini to openai gpt-5\.4-nano \(rate limit: openai backend in step "work\.build": HTTP 429 rate_limit_exceeded: Rate limit reached for tokens per day\. The server asked to wait 72000 s/,
    );
    const wait =
      /step work\.test #3 waiting for the rate limit until (\d\d:\d\d:\d\d) \(HTTP 429 rate_limit_exceeded: Rate limit reached for requests; attempt 1\/3\)/
        .exec(run.stderr);
    assert.ok(wait, run.stderr);
    assert.deepEqual(server.requests.map((r) => r.body.model), [
      "gpt-5.4-mini",
      "gpt-5.4-mini",
      "gpt-5.4-nano",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
    ]);

    const store = new FileRunStore(ws.runDir);
    const [summary] = await store.list();
    const log = await store.readLog(summary.runId);
    const waited = log.find((e) => e.type === "backend_retry" && e.stepId === "work.test")!;
    assert.equal(wait![1], clockTime(String(waited.waitUntil)));
    // Recorded with the run: a resume or a worker walks the same chain.
    const checkpoint = await store.loadCheckpoint(summary.runId);
    assert.deepEqual((checkpoint!.state as { backendChoice?: unknown }).backendChoice, {
      backend: "openai",
      model: "gpt-5.4-mini",
      baseUrl: `${server.url}/v1`,
      fallbackModels: ["gpt-5.4-nano"],
    });

    const shown = await runCli(["--agent", "pipeline", "--show", summary.runId], {
      userDir: ws.root,
    });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      /work\.build .*\n\s+⤷ fell back from openai gpt-5\.4-mini to openai gpt-5\.4-nano \(rate limit: /,
    );
  } finally {
    await server.close();
    await Deno.remove(ws.root, { recursive: true });
  }
});

Deno.test("run-agent: --max-rate-limit-wait-ms and --idle-timeout-ms take milliseconds", async () => {
  const ws = await pipelineWorkspace();
  try {
    const bad = await runCli(
      ["--agent", "pipeline", "--topic", "x", "--max-rate-limit-wait-ms", "soon"],
      { userDir: ws.root },
    );
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /--max-rate-limit-wait-ms expects a number of milliseconds \(0 or more\), got "soon"\./,
    );
    const help = await runCli(["run", "--help"], { userDir: ws.root });
    assert.match(help.stdout, /--fallback-model NAME/);
    assert.match(help.stdout, /--idle-timeout-ms MS/);
  } finally {
    await Deno.remove(ws.root, { recursive: true });
  }
});
