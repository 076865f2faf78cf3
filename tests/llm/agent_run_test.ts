/**
 * A full run of the `issue-solver` example agent (.agent/issue-solver) through each real backend
 * against its fake: the Anthropic and OpenAI fakes on 127.0.0.1, and the fake Claude Code behind
 * the Claude Agent SDK. The model's answers are the ones of the scripted demo
 * (.agent/issue-solver/demo.script.yaml), so the three runs must end exactly like `deno task demo`.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { StepInfo } from "../../src/events/types.ts";
import { StepFlowRunner } from "../../src/flow/mod.ts";
import type { StepFlowResult } from "../../src/flow/types.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { ClaudeCodeBackend } from "../../src/llm/claude_code.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import type { LlmBackend } from "../../src/llm/types.ts";
import { fakeClaude, flag } from "./fake_claude.ts";
import {
  anthropicError,
  anthropicMessage,
  type FakeServer,
  openAiCompletion,
  openAiError,
  type RecordedRequest,
  startFakeServer,
} from "./fake_server.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TOPIC = "Fix the flaky login test";
const STEPS = ["initial.issue", "continuation.issue", "continuation.issue", "complete.issue"];

/** The demo's answers in call order: the structured output of each of the four iterations. */
async function demoOutputs(): Promise<Record<string, unknown>[]> {
  const script = parseYaml(
    await Deno.readTextFile(`${ROOT}.agent/issue-solver/demo.script.yaml`),
  ) as Record<string, { output: Record<string, unknown> }[]>;
  const used: Record<string, number> = {};
  return STEPS.map((id) => script[id][used[id] = (used[id] ?? -1) + 1].output);
}

async function run(backend: LlmBackend, cwd = ROOT) {
  const definition = await loadAgentDefinition("issue-solver", { cwd: ROOT });
  const retries: { stepId: string; attempt: number; message: string }[] = [];
  const runner = new StepFlowRunner(definition, {
    backend,
    events: {
      onStepRetry: (info: StepInfo, attempt: number, error: unknown) =>
        void retries.push({ stepId: info.stepId, attempt, message: (error as Error).message }),
    },
  });
  const result = await runner.run({ args: { topic: TOPIC }, cwd });
  return { result, retries };
}

async function assertCompletedLikeTheDemo(result: StepFlowResult) {
  const outputs = await demoOutputs();
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(result.completionReason, "completed");
  assert.equal(result.finalStepId, "complete.issue");
  assert.equal(result.iterations, 4);
  assert.deepEqual(result.state.history.map((h) => h.stepId), STEPS);
  assert.deepEqual(result.output, outputs[3]);
  assert.equal(result.usage.calls, 4);
}

/** Chat backends: what the fake server received over the run. */
function assertChatRequests(
  requests: RecordedRequest[],
  schemaOf: (r: RecordedRequest) => unknown,
) {
  for (const request of requests) {
    const schema = schemaOf(request) as { type?: string; properties?: Record<string, unknown> };
    assert.equal(schema?.type, "object", "every call asks for the step's schema natively");
  }
  // A string (openai), or text blocks (anthropic: the last turn carries a cache breakpoint).
  const content = (requests[0].body.messages as {
    role: string;
    content: string | { text?: string }[];
  }[]).find((m) => m.role === "user")!.content;
  const firstPrompt = typeof content === "string"
    ? content
    : content.map((b) => b.text ?? "").join("");
  assert.ok(firstPrompt.includes(TOPIC), "the {uv-topic} parameter reached the prompt");
}

Deno.test("issue-solver runs end to end on the anthropic backend (with a 429 on the way)", async () => {
  const outputs = await demoOutputs();
  const server: FakeServer = startFakeServer([
    anthropicError(429, "rate_limit_error", "slow down", { "retry-after": "0" }),
    ...outputs.map((o) =>
      anthropicMessage(JSON.stringify(o), { inputTokens: 100, outputTokens: 50 })
    ),
  ]);
  try {
    const backend = new AnthropicBackend({
      apiKey: "sk-ant-test",
      baseUrl: server.url,
      model: "claude-sonnet-5-5",
      pricing: { "claude-sonnet-5-5": { inputUsdPerMTok: 3, outputUsdPerMTok: 15 } },
    });
    const { result, retries } = await run(backend);
    await assertCompletedLikeTheDemo(result);
    assert.deepEqual(result.usage.inputTokens, 400);
    assert.deepEqual(result.usage.outputTokens, 200);
    assert.ok(Math.abs(result.usage.costUsd - (400 * 3 + 200 * 15) / 1e6) < 1e-12);
    assert.equal(retries.length, 1, "the 429 surfaced as an onStepRetry event");
    assert.equal(retries[0].stepId, "initial.issue");
    assert.match(retries[0].message, /anthropic attempt 1\/3 failed \(HTTP 429 rate_limit_error/);

    assert.equal(server.requests.length, 5);
    const calls = server.requests.slice(1);
    assertChatRequests(calls, (r) =>
      (r.body.output_config as { format: { schema: unknown } })
        .format.schema);
    // The system prompt as one text block carrying a prompt-cache breakpoint.
    const system = calls[0].body.system as {
      type: string;
      text: string;
      cache_control?: unknown;
    }[];
    assert.match(system[0].text, /^You are Issue Solver/);
    assert.deepEqual(system[0].cache_control, { type: "ephemeral" });
    // One conversation over the run: the fourth call carries the three earlier exchanges.
    const last = calls[3].body.messages as { role: string; content: string }[];
    assert.deepEqual(last.map((m) => m.role), [
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
    assert.deepEqual(JSON.parse(last[5].content), outputs[2]);
  } finally {
    await server.close();
  }
});

Deno.test("issue-solver runs end to end on the openai backend (an Ollama-style local server)", async () => {
  const outputs = await demoOutputs();
  const server = startFakeServer([
    openAiError(503, "server_error", "loading model"),
    ...outputs.map((o) =>
      openAiCompletion(JSON.stringify(o), { promptTokens: 70, completionTokens: 30 })
    ),
  ]);
  try {
    const backend = new OpenAiBackend({
      baseUrl: `${server.url}/v1`,
      model: "qwen3",
      retry: { initialDelayMs: 1, maxDelayMs: 5 },
    });
    const { result, retries } = await run(backend);
    await assertCompletedLikeTheDemo(result);
    assert.equal(result.usage.inputTokens, 280);
    assert.equal(result.usage.outputTokens, 120);
    assert.equal(result.usage.costUsd, 0, "no pricing for a local model");
    assert.equal(retries.length, 1);
    assert.match(retries[0].message, /HTTP 503/);

    const calls = server.requests.slice(1);
    assertChatRequests(
      calls,
      (r) =>
        (r.body.response_format as { json_schema: { schema: unknown } })
          .json_schema.schema,
    );
    assert.ok(calls.every((c) => c.body.model === "qwen3"));
    const messages = calls[2].body.messages as { role: string }[];
    assert.deepEqual(messages.map((m) => m.role), [
      "system",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
    ]);
  } finally {
    await server.close();
  }
});

Deno.test("issue-solver runs end to end on the claude-code backend (session resumed)", async () => {
  const outputs = await demoOutputs();
  const sid = "4b6c2d0e-0000-4000-8000-0000000000aa";
  // Claude Code reports running totals for a resumed session; the backend turns them into per-call figures.
  const fake = await fakeClaude(outputs.map((o, i) => ({
    structured_output: o,
    ...(i === 0 ? { session_id: sid } : {}),
    total_cost_usd: 0.01 * (i + 1),
    model_usage: {
      "claude-sonnet-5-5": { inputTokens: 1000 * (i + 1), outputTokens: 100 * (i + 1) },
    },
  })));
  try {
    const { result } = await run(new ClaudeCodeBackend(fake.options), fake.dir);
    await assertCompletedLikeTheDemo(result);
    assert.equal(result.usage.inputTokens, 4000);
    assert.equal(result.usage.outputTokens, 400);
    assert.ok(Math.abs(result.usage.costUsd - 0.04) < 1e-12, String(result.usage.costUsd));

    const runs = await fake.runs();
    assert.equal(runs.length, 4);
    assert.deepEqual(runs.map((r) => flag(r, "resume")), [undefined, sid, sid, sid]);
    for (const r of runs) {
      assert.equal(flag(r, "allowedTools"), "Read,Write,Edit,Bash,Glob,Grep");
      assert.equal(flag(r, "permission-mode"), "acceptEdits");
      assert.equal(r.cwd, await Deno.realPath(fake.dir));
      const init = r.received.find((m) => m.type === "control_request")?.request;
      assert.match(String(init?.appendSystemPrompt), /^You are Issue Solver/);
      assert.equal((init?.jsonSchema as { type?: string })?.type, "object");
    }
  } finally {
    await fake.cleanup();
  }
});
