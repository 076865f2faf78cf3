/**
 * The tool loop through the official SDK clients against local servers speaking each API's wire
 * format: what is offered, how calls and results travel, and the final structured answer.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { completeStepCall } from "../../src/flow/step_tools.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import {
  anthropicMessage,
  anthropicToolUse,
  openAiCompletion,
  openAiToolCalls,
  startFakeServer,
  stepRequest,
  VERDICT_SCHEMA,
} from "./fake_server.ts";

async function project(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "stepflow_tool_wire_" });
  await Deno.writeTextFile(join(root, "app.ts"), "export const answer = 41;\n");
  return root;
}

type Body = Record<string, unknown>;

Deno.test("anthropic: tool_use blocks run, tool_result blocks go back (errors marked), the answer is structured", async () => {
  const cwd = await project();
  const server = startFakeServer([
    anthropicToolUse([{ id: "toolu_read", name: "Read", input: { file_path: "app.ts" } }], {
      text: "Let me read it.",
    }),
    anthropicToolUse([
      { id: "toolu_bash", name: "Bash", input: { command: "rm -rf ." } },
      { id: "toolu_glob", name: "Glob", input: { pattern: "*.ts" } },
    ]),
    anthropicMessage('{"verdict": "ok", "reason": "read it"}'),
  ]);
  try {
    const backend = new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-5-5" });
    const answer = await completeStepCall(
      backend,
      stepRequest({
        cwd,
        outputSchema: VERDICT_SCHEMA,
        allowedTools: ["Read", "Glob"],
        permissionMode: "default",
      }),
      {},
    );
    assert.deepEqual(answer.structuredOutput, { verdict: "ok", reason: "read it" });
    assert.deepEqual(answer.usage, { inputTokens: 36, outputTokens: 21 });
    assert.equal(server.requests.length, 3);
    const [first, second, third] = server.requests.map((r) => r.body as Body);
    // Only the allowed tools are offered, with their JSON Schemas; the schema is asked natively.
    const tools = first.tools as { name: string; input_schema: { type: string } }[];
    assert.deepEqual(tools.map((t) => t.name), ["Read", "Glob"]);
    assert.equal(tools[0].input_schema.type, "object");
    assert.ok(first.output_config, "native structured output, as without tools");
    const messages = second.messages as { role: string; content: unknown }[];
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user"]);
    assert.deepEqual(messages[1].content, [
      { type: "text", text: "Let me read it." },
      { type: "tool_use", id: "toolu_read", name: "Read", input: { file_path: "app.ts" } },
    ]);
    assert.deepEqual(messages[2].content, [{
      type: "tool_result",
      tool_use_id: "toolu_read",
      content: "     1\texport const answer = 41;",
      cache_control: { type: "ephemeral" },
    }]);
    const results = (third.messages as { content: unknown }[]).at(-1)!.content as {
      tool_use_id: string;
      content: string;
      is_error?: boolean;
    }[];
    assert.deepEqual(results.map((r) => [r.tool_use_id, r.is_error === true]), [
      ["toolu_bash", true],
      ["toolu_glob", false],
    ]);
    assert.match(results[0].content, /The tool "Bash" is not available in this step/);
    assert.equal(results[1].content, "app.ts");
    assert.equal(await Deno.readTextFile(join(cwd, "app.ts")), "export const answer = 41;\n");
  } finally {
    await server.close();
  }
});

Deno.test("openai: parallel tool_calls, arguments as text or object, a missing id; role tool results", async () => {
  const cwd = await project();
  const server = startFakeServer([
    openAiToolCalls([
      { id: "call_read", name: "Read", arguments: '{"file_path": "app.ts"}' },
      { name: "Edit", arguments: { file_path: "app.ts", old_string: "41", new_string: "42" } },
      { id: "call_bad", name: "Read", arguments: "{oops" },
    ]),
    openAiCompletion('{"verdict": "ok"}'),
    openAiCompletion("A plain second step."),
  ]);
  try {
    const backend = new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "qwen3" });
    const request = stepRequest({
      cwd,
      outputSchema: VERDICT_SCHEMA,
      allowedTools: ["Read", "Edit"],
      permissionMode: "acceptEdits",
    });
    const answer = await completeStepCall(backend, request, {});
    assert.deepEqual(answer.structuredOutput, { verdict: "ok" });
    assert.equal(await Deno.readTextFile(join(cwd, "app.ts")), "export const answer = 42;\n");
    const first = server.requests[0].body as Body;
    assert.deepEqual(
      (first.tools as { type: string; function: { name: string } }[]).map((t) => [
        t.type,
        t.function.name,
      ]),
      [["function", "Read"], ["function", "Edit"]],
    );
    const messages = (server.requests[1].body as Body).messages as {
      role: string;
      content?: string | null;
      tool_call_id?: string;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    }[];
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "tool", "tool", "tool"]);
    const calls = messages[1].tool_calls!;
    assert.equal(calls[0].id, "call_read");
    assert.match(calls[1].id, /^call_[0-9a-f]{24}$/, "an id is made up for a call without one");
    assert.equal(
      calls[1].function.arguments,
      '{"file_path":"app.ts","old_string":"41","new_string":"42"}',
    );
    assert.equal(calls[2].function.arguments, "{oops", "sent back as the model wrote it");
    assert.deepEqual(messages.slice(2).map((m) => m.tool_call_id), [
      "call_read",
      calls[1].id,
      "call_bad",
    ]);
    assert.equal(messages[2].content, "     1\texport const answer = 41;");
    assert.equal(messages[3].content, "Edited app.ts: 1 replacement.");
    assert.match(messages[4].content!, /Arguments of Read: not valid JSON/);

    // The run's conversation keeps the step's prompt and final answer, not the tool traffic.
    await completeStepCall(
      backend,
      { ...request, sessionId: answer.sessionId, prompt: "Next." },
      {},
    );
    const next = (server.requests[2].body as Body).messages as { role: string; content: string }[];
    assert.deepEqual(next.map((m) => m.role), ["user", "assistant", "user"]);
    assert.equal(next[1].content, '{"verdict": "ok"}');
  } finally {
    await server.close();
  }
});

Deno.test("a step without allowedTools, or on a backend without tool turns, is a plain call", async () => {
  const server = startFakeServer([openAiCompletion("plain")]);
  try {
    const backend = new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "qwen3" });
    const answer = await completeStepCall(backend, stepRequest(), {});
    assert.equal(answer.text, "plain");
    assert.equal((server.requests[0].body as Body).tools, undefined);
  } finally {
    await server.close();
  }
});

Deno.test("an unknown permissionMode or a rule typo is a clear error before anything is sent", async () => {
  const server = startFakeServer([]);
  try {
    const backend = new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "qwen3" });
    await assert.rejects(
      completeStepCall(
        backend,
        stepRequest({ allowedTools: ["Read"], permissionMode: "acceptEdit" }),
        {},
      ),
      /PERMISSION_MODE_INVALID|unknown permissionMode "acceptEdit" \(did you mean "acceptEdits"\?\)/,
    );
    await assert.rejects(
      completeStepCall(backend, stepRequest({ allowedTools: ["Raed"] }), {}),
      /Invalid allowedTools: "Raed": unknown tool "Raed" \(did you mean "Read"\?\)/,
    );
    assert.equal(server.requests.length, 0);
  } finally {
    await server.close();
  }
});

Deno.test("openai: malformed tool_calls from a server are read defensively, never a crash", async () => {
  const cwd = await project();
  const server = startFakeServer([
    {
      json: {
        id: "x",
        object: "chat.completion",
        created: 0,
        model: "m",
        choices: [{
          index: 0,
          finish_reason: "tool_calls",
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              null,
              { type: "function" },
              { id: "c3", type: "function", function: { name: 42, arguments: "{}" } },
              { id: "c4", type: "function", function: { name: "Read", arguments: null } },
            ],
          },
        }],
      },
    },
    openAiCompletion("recovered"),
  ]);
  try {
    const backend = new OpenAiBackend({
      baseUrl: `${server.url}/v1`,
      model: "qwen3",
      stream: false,
    });
    const answer = await completeStepCall(
      backend,
      stepRequest({ cwd, allowedTools: ["Read"] }),
      {},
    );
    assert.equal(answer.text, "recovered");
    const messages = (server.requests[1].body as Body).messages as {
      role: string;
      content?: string;
    }[];
    const results = messages.filter((m) => m.role === "tool").map((m) => m.content ?? "");
    assert.equal(results.length, 4);
    assert.match(results[0], /The tool "" is not available/);
    assert.match(results[2], /The tool "" is not available/);
    assert.match(results[3], /Invalid arguments for Read: file_path/);
  } finally {
    await server.close();
  }
});
