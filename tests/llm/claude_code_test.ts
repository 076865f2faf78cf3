/**
 * The `claude-code` backend through the real Claude Agent SDK, which spawns
 * tests/llm/fixtures/fake_claude (a fake Claude Code speaking the SDK's stream-JSON protocol).
 * The fake logs its argv and every message it read, so the tests assert what the SDK was asked.
 */
import assert from "node:assert/strict";
import { answerJson } from "./answer_json.ts";
import { UsageError } from "../../src/errors.ts";
import { BackendError } from "../../src/llm/backend_error.ts";
import { ClaudeCodeBackend } from "../../src/llm/claude_code.ts";
import { createBackend } from "../../src/llm/factory.ts";
import type { RetryInfo } from "../../src/llm/retry.ts";
import { fakeClaude, flag } from "./fake_claude.ts";
import { stepRequest, VERDICT_SCHEMA } from "./fake_server.ts";

Deno.test("claude-code: options reach Claude Code and structured output round-trips", async () => {
  const fake = await fakeClaude([{
    structured_output: { verdict: "ok", reason: "fixed the race" },
    session_id: "4b6c2d0e-0000-4000-8000-000000000001",
    total_cost_usd: 0.0123,
    model_usage: {
      "claude-sonnet-5-5": {
        inputTokens: 100,
        outputTokens: 40,
        cacheReadInputTokens: 1000,
        cacheCreationInputTokens: 200,
        costUSD: 0.0123,
      },
    },
  }]);
  try {
    const backend = new ClaudeCodeBackend(fake.options);
    const res = await backend.complete(stepRequest({
      cwd: fake.dir,
      systemPrompt: "You are the issue solver.",
      allowedTools: ["Read", "Grep", "Bash(git diff:*)"],
      permissionMode: "acceptEdits",
      model: "sonnet",
      outputSchema: VERDICT_SCHEMA,
    }));
    assert.deepEqual(res.structuredOutput, { verdict: "ok", reason: "fixed the race" });
    assert.equal(res.sessionId, "4b6c2d0e-0000-4000-8000-000000000001");
    assert.equal(res.costUsd, 0.0123);
    assert.deepEqual(res.usage, {
      inputTokens: 1300,
      outputTokens: 40,
      cacheReadTokens: 1000,
      cacheWriteTokens: 200,
    });

    const [run] = await fake.runs();
    assert.equal(run.cwd, await Deno.realPath(fake.dir));
    assert.ok(run.argv.includes("--output-format") && run.argv.includes("stream-json"));
    assert.equal(flag(run, "allowedTools"), "Read,Grep,Bash(git diff:*)");
    assert.equal(flag(run, "permission-mode"), "acceptEdits");
    assert.equal(flag(run, "model"), "sonnet");
    assert.deepEqual(JSON.parse(flag(run, "json-schema") ?? "null"), VERDICT_SCHEMA);
    assert.equal(flag(run, "resume"), undefined, "a first call starts a new session");
    assert.ok(!run.argv.includes("--allow-dangerously-skip-permissions"));

    const init = run.received.find((m) => m.type === "control_request")?.request;
    assert.equal(init?.subtype, "initialize");
    assert.equal(init?.appendSystemPrompt, "You are the issue solver.");
    assert.equal(init?.systemPrompt, undefined, "appended to the preset, not replacing it");
    assert.deepEqual(init?.jsonSchema, VERDICT_SCHEMA);
    const user = run.received.find((m) => m.type === "user")?.message as {
      content: { text: string }[];
    };
    assert.equal(user.content[0].text, "Fix the flaky login test.");
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: the session is resumed across iterations; usage is per call", async () => {
  const sid = "4b6c2d0e-0000-4000-8000-000000000002";
  const usage = (input: number, output: number, cost: number) => ({
    total_cost_usd: cost,
    model_usage: {
      "claude-sonnet-5-5": { inputTokens: input, outputTokens: output, costUSD: cost },
    },
  });
  const fake = await fakeClaude([
    { result: "step one done", session_id: sid, ...usage(100, 10, 0.01) },
    // A resumed session reports totals that include the earlier turns.
    { result: "step two done", ...usage(250, 30, 0.025) },
  ]);
  try {
    const backend = new ClaudeCodeBackend(fake.options);
    const first = await backend.complete(stepRequest({ cwd: fake.dir }));
    const second = await backend.complete(
      stepRequest({ cwd: fake.dir, iteration: 2, sessionId: first.sessionId }),
    );
    assert.equal(first.sessionId, sid);
    assert.equal(second.sessionId, sid, "resuming keeps the session id");
    assert.equal(second.text, "step two done");
    assert.deepEqual(first.usage, { inputTokens: 100, outputTokens: 10 });
    assert.deepEqual(second.usage, { inputTokens: 150, outputTokens: 20 });
    assert.ok(Math.abs((second.costUsd ?? 0) - 0.015) < 1e-12);

    const runs = await fake.runs();
    assert.equal(runs.length, 2);
    assert.equal(flag(runs[0], "resume"), undefined);
    assert.equal(flag(runs[1], "resume"), sid);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: a result without token counts has usage undefined, not zeros", async () => {
  const fake = await fakeClaude([
    { result: "no counts", result_usage: {} },
    { result: "counts without numbers", result_usage: {}, model_usage: { "m": { costUSD: 0.01 } } },
  ]);
  try {
    const backend = new ClaudeCodeBackend(fake.options);
    const first = await backend.complete(stepRequest({ cwd: fake.dir }));
    assert.equal(first.text, "no counts");
    assert.equal(first.usage, undefined);
    const second = await backend.complete(stepRequest({ cwd: fake.dir }));
    assert.equal(second.usage, undefined);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: bypassPermissions sets the explicit opt-in; bad modes are usage errors", async () => {
  const fake = await fakeClaude([{ result: "ok" }]);
  try {
    const backend = new ClaudeCodeBackend({ ...fake.options, permissionMode: "bypassPermissions" });
    await backend.complete(stepRequest({ cwd: fake.dir }));
    const [run] = await fake.runs();
    assert.equal(flag(run, "permission-mode"), "bypassPermissions");
    assert.ok(run.argv.includes("--allow-dangerously-skip-permissions"));

    await assert.rejects(
      backend.complete(stepRequest({ cwd: fake.dir, permissionMode: "yolo" })),
      (e) =>
        e instanceof UsageError && /Unknown permissionMode "yolo" for step "initial\.issue"/.test(
          e.message,
        ) && /acceptEdits/.test(e.message),
    );
    assert.throws(() => new ClaudeCodeBackend({ permissionMode: "nope" }), UsageError);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: an overloaded API is retried; Claude Code's own retries are reported", async () => {
  const fake = await fakeClaude([
    {
      api_retry: { attempt: 1, max_retries: 10, retry_delay_ms: 600, error_status: 529 },
      is_error: true,
      result: "API Error: 529 Overloaded",
      api_error_status: 529,
      assistant_error: "overloaded",
    },
    { structured_output: { verdict: "ok" } },
  ]);
  try {
    const retries: RetryInfo[] = [];
    const backend = new ClaudeCodeBackend({ ...fake.options, onRetry: (r) => retries.push(r) });
    const res = await backend.complete(
      stepRequest({ cwd: fake.dir, outputSchema: VERDICT_SCHEMA }),
    );
    assert.deepEqual(res.structuredOutput, { verdict: "ok" });
    assert.equal((await fake.runs()).length, 2);
    assert.equal(retries.length, 2);
    assert.match(retries[0].reason, /^Claude Code API retry: rate_limit \(HTTP 529\)/);
    assert.equal(retries[0].delayMs, 600);
    assert.equal(retries[0].maxAttempts, 11);
    assert.equal(retries[1].status, 529);
    assert.equal(retries[1].attempt, 1);
    assert.match(retries[1].reason, /API Error: 529 Overloaded/);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: a login problem is BACKEND_AUTH with how to log in, not retried", async () => {
  const fake = await fakeClaude([{
    is_error: true,
    result: "Invalid API key · Please run /login",
    assistant_error: "authentication_failed",
  }]);
  try {
    const error = await new ClaudeCodeBackend(fake.options).complete(stepRequest({ cwd: fake.dir }))
      .then(() => undefined, (e) => e);
    assert.ok(error instanceof BackendError, String(error));
    assert.equal(error.code, "BACKEND_AUTH");
    assert.match(error.message, /Invalid API key/);
    assert.match(error.message, /\/login, or set ANTHROPIC_API_KEY/);
    assert.equal((await fake.runs()).length, 1);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: error results and crashes say what Claude Code said", async () => {
  const fake = await fakeClaude([
    { subtype: "error_max_turns", is_error: true, errors: ["Reached maximum number of turns (3)"] },
    { exit_code: 2, stderr: "fatal: settings file is corrupt" },
  ]);
  try {
    const backend = new ClaudeCodeBackend(fake.options);
    const maxTurns = await backend.complete(stepRequest({ cwd: fake.dir }))
      .then(() => undefined, (e) => e);
    assert.ok(maxTurns instanceof BackendError, String(maxTurns));
    assert.equal(maxTurns.code, "BACKEND_ERROR");
    assert.match(maxTurns.message, /maximum number of turns \(raise maxTurns\)/);

    const crash = await backend.complete(stepRequest({ cwd: fake.dir }))
      .then(() => undefined, (e) => e);
    assert.ok(crash instanceof BackendError, String(crash));
    assert.equal(crash.code, "BACKEND_ERROR");
    assert.match(crash.message, /settings file is corrupt/);
    assert.equal((await fake.runs()).length, 2, "neither was retried");
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: without structured_output, the JSON in the result text is left to the engine's reader", async () => {
  const fake = await fakeClaude([{ result: 'Done.\n```json\n{"verdict":"ng"}\n```' }]);
  try {
    const res = await new ClaudeCodeBackend(fake.options)
      .complete(stepRequest({ cwd: fake.dir, outputSchema: VERDICT_SCHEMA }));
    assert.equal(res.structuredOutput, undefined);
    assert.deepEqual(answerJson(res), { verdict: "ng" });
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: cancellation ends the turn at once; a timeout is not retried", async () => {
  const fake = await fakeClaude([{ result: "slow", delay_ms: 5000 }, {
    result: "slow",
    delay_ms: 5000,
  }]);
  try {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    let started = performance.now();
    const cancelled = await new ClaudeCodeBackend(fake.options)
      .complete(stepRequest({ cwd: fake.dir }), { signal: controller.signal })
      .then(() => undefined, (e) => e);
    assert.equal((cancelled as Error).name, "AbortError", String(cancelled));
    assert.ok(performance.now() - started < 3000, `${performance.now() - started} ms`);

    started = performance.now();
    const timedOut = await new ClaudeCodeBackend({ ...fake.options, timeoutMs: 300 })
      .complete(stepRequest({ cwd: fake.dir })).then(() => undefined, (e) => e);
    assert.ok(timedOut instanceof BackendError, String(timedOut));
    assert.equal(timedOut.code, "BACKEND_TIMEOUT");
    assert.ok(performance.now() - started < 3000);
    assert.equal((await fake.runs()).length, 2, "one process each: the timeout was not retried");
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: a missing executable is BACKEND_NOT_INSTALLED with what to install", async () => {
  const backend = new ClaudeCodeBackend({ pathToClaudeCodeExecutable: "/nonexistent/claude" });
  const error = await backend.complete(stepRequest()).then(() => undefined, (e) => e);
  assert.ok(error instanceof BackendError, String(error));
  assert.equal(error.code, "BACKEND_NOT_INSTALLED");
  assert.match(error.message, /Install Claude Code/);
});

Deno.test("claude-code: createBackend passes --base-url and the key to Claude Code's environment", async () => {
  const fake = await fakeClaude([{ result: "ok" }]);
  try {
    const backend = await createBackend({
      name: "claude-code",
      model: "opus",
      baseUrl: "http://127.0.0.1:9/gateway",
      apiKey: "sk-ant-gw",
      claudeCode: fake.options,
      retry: { maxAttempts: 1 },
    });
    assert.equal(backend.name, "claude-code");
    await backend.complete(stepRequest({ cwd: fake.dir }));
    const [run] = await fake.runs();
    assert.equal(flag(run, "model"), "opus");
    assert.equal(run.env.ANTHROPIC_BASE_URL, "http://127.0.0.1:9/gateway");
    assert.equal(run.env.ANTHROPIC_API_KEY, "sk-ant-gw");
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: behavior.mcpServers reach the SDK's mcpServers, ${VAR} expanded; a bad one fails before Claude Code starts", async () => {
  const fake = await fakeClaude([{ result: "used the server" }]);
  try {
    const backend = new ClaudeCodeBackend({
      ...fake.options,
      env: { ...fake.options.env, DOCS_ROOT: "/srv/docs", MCP_TOKEN: "t0k" },
    });
    const res = await backend.complete(stepRequest({
      cwd: fake.dir,
      allowedTools: ["mcp__files"],
      mcpServers: {
        files: { command: "mcp-server-filesystem", args: ["${DOCS_ROOT}"] },
        remote: {
          type: "http",
          url: "http://127.0.0.1:9/mcp",
          headers: { Authorization: "Bearer ${MCP_TOKEN}" },
        },
      },
    }));
    assert.equal(res.text, "used the server");
    const [run] = await fake.runs();
    const at = run.argv.indexOf("--mcp-config");
    assert.ok(at >= 0, run.argv.join(" "));
    assert.deepEqual(JSON.parse(run.argv[at + 1]), {
      mcpServers: {
        files: { command: "mcp-server-filesystem", args: ["/srv/docs"] },
        remote: {
          type: "http",
          url: "http://127.0.0.1:9/mcp",
          headers: { Authorization: "Bearer t0k" },
        },
      },
    });

    await assert.rejects(
      backend.complete(stepRequest({
        cwd: fake.dir,
        mcpServers: { files: { command: "x", args: ["${NOT_SET_ANYWHERE_42}"] } },
      })),
      /MCP_CONFIG_INVALID|Invalid MCP server configuration \(behavior\.mcpServers\):\n- mcpServers\.files\.args\[0\]: .*NOT_SET_ANYWHERE_42/,
    );
    assert.equal((await fake.runs()).length, 1, "Claude Code was not started for a bad server");
  } finally {
    await fake.cleanup();
  }
});
