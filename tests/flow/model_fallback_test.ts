/**
 * Model fallback chains and rate-limit waits in a real run: the runner over a real `.agent` folder
 * whose agent.json `model` is a chain, a file store on disk, the `openai` backend against a local
 * server that rate-limits one step, the chain's `anthropic` entry against another. The fallback is
 * an event, a progress line, a `model_fallback` log line, part of the step's history entry and of
 * its recorded call (which model answered); a redrive keeps the history, and a replay file names
 * the model that answered. A wait the server names is an `onRateLimitWait` event and a line
 * `waiting for the rate limit until HH:MM:SS`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { createProgressLines } from "../../src/events/progress_lines.ts";
import type { ModelFallbackEvent, RateLimitWaitEvent } from "../../src/events/types.ts";
import { clockTime } from "../../src/events/model_notice_text.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { createBackend } from "../../src/llm/factory.ts";
import { replayFromLog } from "../../src/llm/replay_file.ts";
import { ReplayBackend } from "../../src/llm/replay.ts";
import { FileRunStore } from "../../src/store/file.ts";
import {
  anthropicMessage,
  openAiCompletion,
  openAiError,
  startFakeServer,
} from "../llm/fake_server.ts";
import { PIPELINE_STEPS, pipelineFiles } from "../store/helpers.ts";
import { writeAgent } from "./fixtures.ts";

/** The answer of a pipeline step (the one before the closing step completes). */
function output(stepId: string): Record<string, unknown> {
  if (stepId === "complete.report") return { stepId, summary: "all done" };
  const last = stepId === PIPELINE_STEPS.at(-1);
  return { stepId, note: `${stepId} done`, next_action: { action: last ? "complete" : "next" } };
}

Deno.test("a run whose agent model is a chain falls through on a rate limit, and says so everywhere", async () => {
  const primary = startFakeServer([
    openAiCompletion(JSON.stringify(output("work.plan"))),
    openAiCompletion(JSON.stringify(output("work.build"))),
    openAiError(429, "rate_limit_exceeded", "Rate limit reached for requests per day", {
      "x-ratelimit-remaining-requests": "0",
      "x-ratelimit-reset-requests": "6h0m0s",
    }),
    openAiCompletion(JSON.stringify(output("work.fix"))),
    // A refused key is no reason to fall through: the run fails here.
    openAiError(401, "invalid_api_key", "Incorrect API key provided"),
  ]);
  const fallback = startFakeServer([
    anthropicMessage(JSON.stringify(output("work.test")), { model: "claude-haiku-4-5" }),
  ]);
  const root = await Deno.makeTempDir({ prefix: "stepflow-fallback-" });
  try {
    const files = pipelineFiles();
    (files.agent as { behavior: Record<string, unknown> }).behavior = {
      completionType: "issue",
      backend: "openai",
      model: [
        "gpt-5.4-mini",
        { backend: "anthropic", model: "claude-haiku-4-5", baseUrl: fallback.url },
      ],
    };
    await writeAgent(root, "pipeline", files);
    const definition = await loadAgentDefinition("pipeline", { cwd: root });
    const store = new FileRunStore(join(root, "runs"));
    const backend = await createBackend({
      name: "openai",
      baseUrl: `${primary.url}/v1`,
      model: "gpt-5.4-mini",
      env: {},
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
    });
    const fallbacks: { stepId: string; fallback: ModelFallbackEvent }[] = [];
    const lines: string[] = [];
    const progress = createProgressLines({ write: (t) => void lines.push(t), now: () => 0 });
    const runner = new StepFlowRunner(definition, {
      backend,
      store,
      events: [progress.events, {
        onModelFallback: (info, fallback) => void fallbacks.push({ stepId: info.stepId, fallback }),
      }],
      onWarning: () => {},
    });
    const failed = await runner.run({ args: { topic: "chains" }, runId: "run-chain" });
    assert.equal(failed.completionReason, "step_failed");
    assert.equal(failed.finalStepId, "work.review");
    assert.equal(failed.error?.code, "BACKEND_AUTH");

    // The event and its line.
    assert.equal(fallbacks.length, 1);
    assert.equal(fallbacks[0].stepId, "work.test");
    assert.deepEqual(fallbacks[0].fallback.from, { backend: "openai", model: "gpt-5.4-mini" });
    assert.deepEqual(fallbacks[0].fallback.to, {
      backend: "anthropic",
      model: "claude-haiku-4-5",
      baseUrl: fallback.url,
    });
    assert.equal(fallbacks[0].fallback.reason, "rate_limit");
    const line = lines.find((l) => l.includes("fell back"));
    assert.match(
      line ?? "",
      new RegExp(
        `step work\\.test #3 fell back from openai gpt-5\\.4-mini to anthropic claude-haiku-4-5 at ${fallback.url} \\(rate limit: openai backend in step "work\\.test": HTTP 429 rate_limit_exceeded`,
      ),
    );
    // Nothing else fell through: the 401 stopped the chain (no request reached the fallback).
    assert.equal(fallback.requests.length, 1);
    assert.equal(primary.remaining(), 0);

    // The history entry and the run log.
    const testEntry = failed.state.history.find((h) => h.stepId === "work.test")!;
    assert.deepEqual(testEntry.fallbacks, [fallbacks[0].fallback]);
    assert.equal(failed.state.history.find((h) => h.stepId === "work.build")!.fallbacks, undefined);
    const log = await store.readLog("run-chain");
    const logged = log.filter((e) => e.type === "model_fallback");
    assert.equal(logged.length, 1);
    assert.equal(logged[0].stepId, "work.test");
    assert.equal(logged[0].reason, "rate_limit");
    const testEnd = log.find((e) => e.type === "step_end" && e.stepId === "work.test")!;
    const [call] = testEnd.calls as Record<string, unknown>[];
    assert.equal(call.model, "claude-haiku-4-5");
    assert.equal(call.backend, "anthropic");
    assert.equal((call.fallbacks as unknown[]).length, 1);
    const buildEnd = log.find((e) => e.type === "step_end" && e.stepId === "work.build")!;
    assert.equal((buildEnd.calls as Record<string, unknown>[])[0].model, "gpt-5.4-mini");

    // A redrive goes on from the failed step; the history it restores keeps the fallback.
    primary.push(
      openAiCompletion(JSON.stringify(output("work.review"))),
      openAiCompletion(JSON.stringify(output("complete.report"))),
    );
    const redriven = await new StepFlowRunner(definition, { backend, store, onWarning: () => {} })
      .run({ redrive: "run-chain" });
    assert.equal(redriven.success, true, JSON.stringify(redriven.error));
    assert.deepEqual(
      redriven.state.history.find((h) => h.stepId === "work.test")!.fallbacks,
      [fallbacks[0].fallback],
    );

    // The replay file names the model that answered each call.
    const replay = replayFromLog(await store.readLog("run-chain"), {
      agent: "pipeline",
      runId: "run-chain",
      env: {},
    });
    assert.equal(replay.calls["work.test"][0].model, "claude-haiku-4-5");
    assert.equal(replay.calls["work.test"][0].backend, "anthropic");
    assert.equal(replay.calls["work.plan"][0].model, "gpt-5.4-mini");
    // Replayed, the run tells the same fallback and records the same model.
    const replayed: ModelFallbackEvent[] = [];
    const again = await new StepFlowRunner(definition, {
      backend: new ReplayBackend({ _replay: replay.header, ...replay.calls }),
      store,
      events: { onModelFallback: (_info, f) => void replayed.push(f) },
      onWarning: () => {},
    }).run({ args: { topic: "chains" }, runId: "run-replayed" });
    assert.equal(again.finalStepId, "work.review", "the replay stops where the first drive failed");
    assert.deepEqual(replayed, [fallbacks[0].fallback]);
    assert.deepEqual(
      again.state.history.find((h) => h.stepId === "work.test")!.fallbacks,
      [fallbacks[0].fallback],
    );
    const replayedEnd = (await store.readLog("run-replayed")).find((e) =>
      e.type === "step_end" && e.stepId === "work.test"
    )!;
    assert.equal((replayedEnd.calls as Record<string, unknown>[])[0].model, "claude-haiku-4-5");
  } finally {
    await primary.close();
    await fallback.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a step's own chain wins over the agent's; a wait the server names is shown until when", async () => {
  const primary = startFakeServer();
  const root = await Deno.makeTempDir({ prefix: "stepflow-fallback-" });
  try {
    const files = pipelineFiles();
    (files.agent as { behavior: Record<string, unknown> }).behavior = {
      completionType: "issue",
      backend: "openai",
      model: "gpt-5.4-mini",
    };
    const steps = (files.registry as { steps: Record<string, Record<string, unknown>> }).steps;
    steps["work.build"].model = ["gpt-5.4", "gpt-5.4-nano"];
    await writeAgent(root, "pipeline", files);
    const definition = await loadAgentDefinition("pipeline", { cwd: root });
    for (const stepId of [...PIPELINE_STEPS, "complete.report"]) {
      if (stepId === "work.build") {
        primary.push(
          openAiError(500, "server_error", "boom"),
          openAiError(500, "server_error", "boom"),
        );
      }
      if (stepId === "work.fix") {
        primary.push(
          openAiError(429, "rate_limit_exceeded", "slow down", { "retry-after-ms": "200" }),
        );
      }
      primary.push(openAiCompletion(JSON.stringify(output(stepId))));
    }
    const backend = await createBackend({
      name: "openai",
      baseUrl: `${primary.url}/v1`,
      model: "gpt-5.4-mini",
      env: {},
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
    });
    const waits: RateLimitWaitEvent[] = [];
    const retries: number[] = [];
    const lines: string[] = [];
    const progress = createProgressLines({ write: (t) => void lines.push(t), now: () => 0 });
    const result = await new StepFlowRunner(definition, {
      backend,
      events: [progress.events, {
        onRateLimitWait: (_info, wait) => void waits.push(wait),
        onStepRetry: (_info, attempt) => void retries.push(attempt),
      }],
      onWarning: () => {},
    }).run({ args: { topic: "steps" } });
    assert.equal(result.success, true, JSON.stringify(result.error));
    // work.build asked gpt-5.4 twice (the retry policy), then gpt-5.4-nano; the others the agent's.
    assert.deepEqual(primary.requests.map((r) => r.body.model), [
      "gpt-5.4-mini",
      "gpt-5.4",
      "gpt-5.4",
      "gpt-5.4-nano",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
      "gpt-5.4-mini",
    ]);
    const build = result.state.history.find((h) => h.stepId === "work.build")!;
    assert.equal(build.fallbacks?.[0].reason, "server_error");
    assert.deepEqual(build.fallbacks?.[0].to, { backend: "openai", model: "gpt-5.4-nano" });

    // The 429 of work.fix: one wait until the time the server named, shown as such.
    assert.equal(waits.length, 1);
    assert.equal(waits[0].delayMs, 200);
    assert.equal(waits[0].status, 429);
    assert.equal(waits[0].yielded, false);
    const waitLine = lines.find((l) => l.includes("waiting for the rate limit"));
    assert.ok(
      waitLine?.includes(
        `step work.fix #4 waiting for the rate limit until ${clockTime(waits[0].until)} (HTTP 429`,
      ),
      waitLine,
    );
    // Every retry is still an onStepRetry (the 500 of work.build and the 429); the wait has one line.
    assert.deepEqual(retries, [1, 1]);
    assert.equal(lines.filter((l) => l.includes("work.fix") && l.includes("retry")).length, 0);
  } finally {
    await primary.close();
    await Deno.remove(root, { recursive: true });
  }
});
