/**
 * Prompt caching through the official SDK clients against local wire-protocol servers: the
 * `cache_control` breakpoints the anthropic backend sends, the byte-identical prefix the openai
 * backend sends, the cache reads and writes read from each API's usage, their cost, and the
 * figures the CLI shows (the result line, `--runs`, `--show`).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { completeStepCall } from "../../src/flow/step_tools.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import { report, runCli, work, writeTinyAgent } from "../cli/helpers.ts";
import {
  anthropicMessage,
  anthropicToolUse,
  openAiCompletion,
  openAiToolCalls,
  startFakeServer,
  stepRequest,
} from "./fake_server.ts";

type Body = Record<string, unknown>;
type Block = { type: string; cache_control?: unknown };
type Message = { role: string; content: string | Block[] };

const EPHEMERAL = { type: "ephemeral" };

async function project(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "stepflow_prompt_cache_" });
  await Deno.writeTextFile(join(root, "app.ts"), "export const answer = 41;\n");
  return root;
}

/** Every `cache_control` in a body, by where it is (the API takes at most 4). */
function breakpoints(body: Body): string[] {
  const found: string[] = [];
  for (const [i, t] of ((body.tools ?? []) as Block[]).entries()) {
    if (t.cache_control) found.push(`tools[${i}]`);
  }
  if (Array.isArray(body.system)) {
    for (const [i, b] of (body.system as Block[]).entries()) {
      if (b.cache_control) found.push(`system[${i}]`);
    }
  }
  for (const [i, m] of (body.messages as Message[]).entries()) {
    if (typeof m.content === "string") continue;
    for (const [j, b] of m.content.entries()) {
      if (b.cache_control) found.push(`messages[${i}][${j}]`);
    }
  }
  return found;
}

Deno.test("anthropic: a tool loop marks tools, system and the last turn; usage keeps cache reads and writes apart and prices them", async () => {
  const cwd = await project();
  const server = startFakeServer([
    anthropicToolUse([{ id: "toolu_1", name: "Read", input: { file_path: "app.ts" } }], {
      inputTokens: 50,
      outputTokens: 10,
      cacheWriteTokens: 2000,
    }),
    anthropicToolUse([{ id: "toolu_2", name: "Glob", input: { pattern: "*.ts" } }], {
      inputTokens: 40,
      outputTokens: 10,
      cacheReadTokens: 2000,
      cacheWriteTokens: 60,
    }),
    anthropicMessage("Done.", {
      inputTokens: 30,
      outputTokens: 5,
      cacheReadTokens: 2060,
      cacheWriteTokens: 45,
    }),
  ]);
  try {
    const backend = new AnthropicBackend({
      baseUrl: server.url,
      model: "claude-sonnet-5-5",
      pricing: {
        "claude-sonnet-5-5": {
          inputUsdPerMTok: 3,
          outputUsdPerMTok: 15,
          cacheReadUsdPerMTok: 0.3,
          cacheWriteUsdPerMTok: 3.75,
        },
      },
    });
    const answer = await completeStepCall(
      backend,
      stepRequest({
        cwd,
        systemPrompt: "You are a careful engineer.",
        allowedTools: ["Read", "Glob"],
        permissionMode: "default",
      }),
      {},
    );
    assert.equal(answer.text, "Done.");
    const bodies = server.requests.map((r) => r.body as Body);
    assert.equal(bodies.length, 3);
    // The breakpoints: the last tool, the system prompt, the last block of the last turn.
    assert.deepEqual(breakpoints(bodies[0]), ["tools[1]", "system[0]", "messages[0][0]"]);
    assert.deepEqual(breakpoints(bodies[1]), ["tools[1]", "system[0]", "messages[2][0]"]);
    assert.deepEqual(breakpoints(bodies[2]), ["tools[1]", "system[0]", "messages[4][0]"]);
    assert.deepEqual((bodies[2].messages as Message[])[4].content, [{
      type: "tool_result",
      tool_use_id: "toolu_2",
      content: "app.ts",
      cache_control: EPHEMERAL,
    }]);
    // The prefix is the same bytes on every turn, in the prompt's order: tools, system, messages.
    for (const body of bodies) {
      assert.deepEqual(Object.keys(body).filter((k) => k !== "max_tokens"), [
        "model",
        "tools",
        "system",
        "messages",
        "stream",
      ]);
      assert.equal(JSON.stringify(body.tools), JSON.stringify(bodies[0].tools));
      assert.equal(JSON.stringify(body.system), JSON.stringify(bodies[0].system));
    }
    // The earlier turns are sent unmarked: what the previous call cached is the prefix.
    assert.deepEqual(
      ((bodies[2].messages as Message[])[2].content as Block[]).map((b) => b.cache_control),
      [undefined],
    );
    assert.deepEqual(answer.usage, {
      inputTokens: 50 + 2000 + 40 + 2060 + 30 + 2105,
      outputTokens: 25,
      cacheReadTokens: 4060,
      cacheWriteTokens: 2105,
    });
    const expected = (120 * 3 + 4060 * 0.3 + 2105 * 3.75 + 25 * 15) / 1e6;
    assert.ok(Math.abs((answer.costUsd ?? 0) - expected) < 1e-12, `${answer.costUsd}`);
  } finally {
    await server.close();
  }
});

Deno.test("anthropic: promptCache false sends no breakpoint; an empty prompt is left unmarked", async () => {
  const server = startFakeServer([anthropicMessage("a"), anthropicMessage("b")]);
  try {
    const off = new AnthropicBackend({
      baseUrl: server.url,
      model: "claude-sonnet-5-5",
      promptCache: false,
    });
    await off.complete(stepRequest({ systemPrompt: "Be brief." }));
    assert.deepEqual(breakpoints(server.requests[0].body), []);
    assert.equal(server.requests[0].body.system, "Be brief.");
    const on = new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-5-5" });
    await on.complete(stepRequest({ prompt: "" }));
    assert.deepEqual(server.requests[1].body.messages, [{ role: "user", content: "" }]);
  } finally {
    await server.close();
  }
});

Deno.test("openai: tools and system prompt come first, byte-identical on every call; cached_tokens are cache reads", async () => {
  const cwd = await project();
  const server = startFakeServer([
    openAiToolCalls([{ id: "call_1", name: "Read", arguments: '{"file_path":"app.ts"}' }], {
      promptTokens: 1500,
      completionTokens: 12,
    }),
    openAiCompletion("Read it.", { promptTokens: 1600, completionTokens: 8, cachedTokens: 1408 }),
    openAiCompletion("Next step.", { promptTokens: 1700, completionTokens: 6, cachedTokens: 1536 }),
  ]);
  try {
    const backend = new OpenAiBackend({
      baseUrl: `${server.url}/v1`,
      model: "gpt-5.4-mini",
      pricing: {
        "gpt-5.4-mini": { inputUsdPerMTok: 1, outputUsdPerMTok: 4, cacheReadUsdPerMTok: 0.1 },
      },
    });
    const request = stepRequest({
      cwd,
      systemPrompt: "You are a careful engineer.",
      allowedTools: ["Read", "Glob"],
    });
    const first = await completeStepCall(backend, request, {});
    const second = await completeStepCall(backend, {
      ...request,
      prompt: "Go on.",
      sessionId: first.sessionId,
    }, {});
    assert.deepEqual(first.usage, {
      inputTokens: 3100,
      outputTokens: 20,
      cacheReadTokens: 1408,
    });
    assert.deepEqual(second.usage, {
      inputTokens: 1700,
      outputTokens: 6,
      cacheReadTokens: 1536,
    });
    const firstCost = ((3100 - 1408) * 1 + 1408 * 0.1 + 20 * 4) / 1e6;
    assert.ok(Math.abs((first.costUsd ?? 0) - firstCost) < 1e-12, `${first.costUsd}`);
    // Across the turns of a step and the steps of a run: the same leading bytes.
    const texts = server.requests.map((r) => JSON.stringify(r.body));
    const prefix = (text: string) => text.slice(0, text.indexOf('{"role":"user"'));
    assert.ok(prefix(texts[0]).includes('"tools":['), prefix(texts[0]));
    assert.ok(
      prefix(texts[0]).endsWith('{"role":"system","content":"You are a careful engineer."},'),
    );
    assert.equal(prefix(texts[1]), prefix(texts[0]));
    assert.equal(prefix(texts[2]), prefix(texts[0]));
  } finally {
    await server.close();
  }
});

Deno.test("openai: a server without prompt_tokens_details reports no cache reads", async () => {
  const server = startFakeServer([openAiCompletion("plain", { promptTokens: 10 })]);
  try {
    const backend = new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "m" });
    const answer = await backend.complete(stepRequest());
    assert.deepEqual(answer.usage, { inputTokens: 10, outputTokens: 9 });
  } finally {
    await server.close();
  }
});

Deno.test("cli: the result line, --runs and --show report the cache reads and writes of a run", async () => {
  const userDir = await Deno.makeTempDir({ prefix: "stepflow_prompt_cache_cli_" });
  await writeTinyAgent(userDir, "tiny");
  const server = startFakeServer([
    anthropicMessage(JSON.stringify(work("complete").output), {
      inputTokens: 100,
      outputTokens: 20,
      cacheWriteTokens: 1500,
    }),
    anthropicMessage(JSON.stringify(report("done").output), {
      inputTokens: 80,
      outputTokens: 10,
      cacheReadTokens: 1500,
    }),
  ]);
  try {
    const env = { ANTHROPIC_API_KEY: "sk-ant-test" };
    const run = await runCli([
      "--agent",
      "tiny",
      "--backend",
      "anthropic",
      "--base-url",
      server.url,
      "--model",
      "claude-sonnet-5-5",
      "--topic",
      "caching",
    ], { userDir, env });
    assert.equal(run.code, 0, run.stderr + run.stdout);
    assert.match(
      run.stdout + run.stderr,
      /3,210 tokens \(3,180 in, 30 out; 1,500 cache read, 1,500 cache write\), 2 calls/,
    );
    const runs = await runCli(["--agent", "tiny", "--runs"], { userDir, env });
    assert.equal(runs.code, 0, runs.stderr);
    assert.match(runs.stdout, /TOKENS IN\/OUT\s+CACHE READ\/WRITE\s+COST\s+STEP/);
    assert.match(runs.stdout, /3,180\/30\s+1,500\/1,500\s+\?\s+complete\.task/);
    const runId = runs.stdout.match(/^\d{8}T\d{6}Z-[0-9a-f]+/m)?.[0];
    assert.ok(runId, runs.stdout);
    const show = await runCli(["--agent", "tiny", "--show", runId], { userDir, env });
    assert.equal(show.code, 0, show.stderr);
    assert.match(
      show.stdout,
      /tokens 3,180 in \/ 30 out · of the input: 1,500 cache read, 1,500 cache write/,
    );
  } finally {
    await server.close();
  }
});
