/**
 * The run page says which model answered each call and shows each fallback and rate-limit wait in
 * its step's row: a real run of the real runner (a model chain over two local servers speaking the
 * OpenAI and Anthropic protocols) into the agent's file store, then the dashboard's page.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { createBackend } from "../../src/llm/factory.ts";
import { runStoreFor } from "../../src/store/location.ts";
import {
  anthropicMessage,
  openAiCompletion,
  openAiError,
  startFakeServer,
} from "../llm/fake_server.ts";
import { PIPELINE_STEPS, pipelineFiles } from "../store/helpers.ts";
import { writeAgent } from "../flow/fixtures.ts";
import { startDashboard } from "./browser.ts";

function output(stepId: string): string {
  if (stepId === "complete.report") return JSON.stringify({ stepId, summary: "done" });
  const last = stepId === PIPELINE_STEPS.at(-1);
  return JSON.stringify({
    stepId,
    note: "ok",
    next_action: { action: last ? "complete" : "next" },
  });
}

Deno.test("run page: each row says which model answered; fallbacks and waits are in its row", async () => {
  const primary = startFakeServer();
  const fallback = startFakeServer([anthropicMessage(output("work.build"))]);
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-chain-" });
  try {
    for (const stepId of [...PIPELINE_STEPS, "complete.report"]) {
      if (stepId === "work.build") {
        primary.push(openAiError(529, "overloaded_error", "Overloaded"));
        primary.push(openAiError(529, "overloaded_error", "Overloaded"));
        continue;
      }
      if (stepId === "work.test") {
        primary.push(
          openAiError(429, "rate_limit_exceeded", "slow down", { "retry-after-ms": "50" }),
        );
      }
      primary.push(openAiCompletion(output(stepId)));
    }
    const files = pipelineFiles();
    (files.agent as { behavior: Record<string, unknown> }).behavior = {
      completionType: "issue",
      backend: "openai",
      model: ["gpt-5.4-mini", {
        backend: "anthropic",
        model: "claude-haiku-4-5",
        baseUrl: fallback.url,
      }],
    };
    await writeAgent(root, "pipeline", files);
    const definition = await loadAgentDefinition("pipeline", { cwd: root });
    const backend = await createBackend({
      name: "openai",
      baseUrl: `${primary.url}/v1`,
      env: {},
      model: "gpt-5.4-mini",
      retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
    });
    const result = await new StepFlowRunner(definition, {
      backend,
      store: runStoreFor(definition, { cwd: root }),
      onWarning: () => {},
    }).run({ args: { topic: "ui" }, runId: "chain-run" });
    assert.equal(result.success, true, JSON.stringify(result.error));

    await using ui = await startDashboard(root);
    const page = await (await fetch(`${ui.url}runs/chain-run`)).text();
    const row = (stepId: string) => {
      const start = page.indexOf(`data-step="${stepId}"`);
      return page.slice(start, page.indexOf('class="row ', start + 1));
    };
    assert.match(row("work.plan"), /answered by<\/span> openai gpt-5\.4-mini/);
    assert.match(row("work.build"), /answered by<\/span> anthropic claude-haiku-4-5/);
    assert.match(
      row("work.build"),
      /fell back from openai gpt-5\.4-mini to anthropic claude-haiku-4-5 at http:\/\/127\.0\.0\.1:\d+ \(overload: /,
    );
    assert.match(
      row("work.test"),
      /waiting for the rate limit until \d\d:\d\d:\d\d \(backend retry 1: HTTP 429 rate_limit_exceeded: slow down\)/,
    );
  } finally {
    await primary.close();
    await fallback.close();
    await Deno.remove(root, { recursive: true });
  }
});
