/**
 * The seed 001 code-improver agent (`allowedTools` Read/Write/Edit/Bash/Glob/Grep, `permissionMode:
 * acceptEdits`) runs a tool-using flow — read, edit, run a command — on `anthropic` and `openai`,
 * streaming and not: the real runner over a real agent folder, the official SDK clients against
 * local servers speaking each API's wire protocol. A tool outside the allowed set never runs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { ToolCallEvent } from "../../src/events/types.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { AnthropicBackend } from "../../src/llm/anthropic.ts";
import { OpenAiBackend } from "../../src/llm/openai.ts";
import type { LlmBackend } from "../../src/llm/types.ts";
import {
  anthropicEvents,
  anthropicMessage,
  anthropicToolUse,
  type FakeReply,
  type FakeServer,
  openAiCompletion,
  openAiToolCalls,
  type RecordedRequest,
  startFakeServer,
} from "../llm/fake_server.ts";
import { seed001Files, writeAgent } from "./fixtures.ts";

type Call = { name: string; input: Record<string, unknown> };

/** How each protocol answers and how a test reads the tool results it was sent. */
const PROTOCOLS = {
  anthropic: {
    backend: (server: FakeServer, stream: boolean): LlmBackend =>
      new AnthropicBackend({ baseUrl: server.url, model: "claude-sonnet-5-5", stream }),
    calls: (calls: Call[], text?: string): FakeReply =>
      anthropicToolUse(calls, text ? { text } : {}),
    text: (text: string): FakeReply => anthropicMessage(text),
    /** The tool results a turn's request carried (the last user turn's `tool_result` blocks). */
    results: (request: RecordedRequest): string[] => {
      const last = (request.body.messages as { content: unknown }[]).at(-1)!.content;
      return Array.isArray(last)
        ? last.filter((b) => b.type === "tool_result").map((b) => String(b.content))
        : [];
    },
  },
  openai: {
    backend: (server: FakeServer, stream: boolean): LlmBackend =>
      new OpenAiBackend({ baseUrl: `${server.url}/v1`, model: "qwen3", stream }),
    // As a local server sends them: no call ids, arguments as JSON text.
    calls: (calls: Call[], text?: string): FakeReply =>
      openAiToolCalls(
        calls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.input) })),
        text ? { content: text } : {},
      ),
    text: (text: string): FakeReply => openAiCompletion(text),
    /** The tool results a turn's request carried (its trailing role `tool` messages). */
    results: (request: RecordedRequest): string[] => {
      const messages = request.body.messages as { role: string; content: string }[];
      const trailing: string[] = [];
      for (let i = messages.length - 1; i >= 0 && messages[i].role === "tool"; i--) {
        trailing.unshift(messages[i].content);
      }
      return trailing;
    },
  },
} as const;

const CHECK_OK = '{"result": "ok", "message": "fine"}';

async function seedAgent() {
  const root = await Deno.makeTempDir({ prefix: "stepflow_tool_wire_flow_" });
  const files = seed001Files();
  // The seed's agent.json behavior, as written there.
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "Write", "Edit", "Bash", "Glob", "Grep"],
    permissionMode: "acceptEdits",
  });
  await writeAgent(root, "code-improver", files);
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "src/app.ts"), "export const answer = 41;\n");
  return { root, def: await loadAgentDefinition("code-improver", { cwd: root }) };
}

for (const protocol of ["anthropic", "openai"] as const) {
  for (const stream of [true, false]) {
    const mode = stream ? "streaming" : "not streaming";
    Deno.test(`seed 001 on ${protocol}, ${mode}: read, edit, run a command; a tool outside the allowed set never runs`, async () => {
      const p = PROTOCOLS[protocol];
      const { root, def } = await seedAgent();
      const server = startFakeServer([
        // s_a8f3 (analyse): read with Grep, try a tool that is not allowed, answer.
        p.calls(
          [{ name: "Grep", input: { pattern: "answer", output_mode: "content" } }],
          "Looking.",
        ),
        p.calls([{ name: "WebFetch", input: { url: "https://example.com" } }]),
        p.text("The answer is off by one."),
        p.text(CHECK_OK),
        // s_b2c1 (implement): edit, run a command, answer.
        p.calls([{
          name: "Edit",
          input: { file_path: "src/app.ts", old_string: "41", new_string: "42" },
        }]),
        p.calls([{ name: "Bash", input: { command: "grep -c 42 src/app.ts" } }]),
        p.text("Fixed."),
        p.text(CHECK_OK),
        // s_c9d4 (review).
        p.text("Looks good."),
        p.text(CHECK_OK),
      ]);
      try {
        const texts = new Map<string, string>();
        const calls: ToolCallEvent[] = [];
        const runner = new StepFlowRunner(def, {
          backend: p.backend(server, stream),
          events: {
            onStepText: (info, text) =>
              void texts.set(info.stepId, (texts.get(info.stepId) ?? "") + text),
            onToolCall: (_info, call) => void calls.push(call),
          },
        });
        const result = await runner.run({ args: { topic: "the answer" }, cwd: root });
        assert.equal(result.success, true, JSON.stringify(result.error));
        assert.equal(server.remaining(), 0);
        assert.equal(
          await Deno.readTextFile(join(root, "src/app.ts")),
          "export const answer = 42;\n",
        );

        // What the model was sent back after each call.
        const results = server.requests.flatMap((r) => p.results(r));
        assert.equal(results.length, 4, JSON.stringify(results));
        assert.equal(results[0], "src/app.ts:1:export const answer = 41;");
        assert.match(
          results[1],
          /The tool "WebFetch" is not available in this step\. Available tools: Read, Write, Edit, Glob, Grep, Bash\./,
        );
        assert.equal(results[2], "Edited src/app.ts: 1 replacement.");
        assert.equal(results[3], "1\n");

        // The tool outside the allowed set was judged invalid and never ran.
        const webFetch = calls.filter((c) => c.tool === "WebFetch");
        assert.deepEqual(webFetch.map((c) => [c.phase, c.decision]), [
          ["requested", undefined],
          ["decided", "invalid"],
          ["finished", "invalid"],
        ]);
        assert.deepEqual(
          calls.filter((c) => c.phase === "finished" && c.decision === "allow").map((c) => c.tool),
          ["Grep", "Edit", "Bash"],
        );

        // Streaming or not, as asked, in every request; the text streamed only when asked.
        for (const request of server.requests) {
          assert.equal(request.body.stream, stream ? true : undefined);
        }
        if (stream) {
          assert.equal(texts.get("s_a8f3"), `Looking.The answer is off by one.${CHECK_OK}`);
          assert.equal(texts.get("s_b2c1"), `Fixed.${CHECK_OK}`);
        } else {
          assert.equal(texts.size, 0);
        }
      } finally {
        await server.close();
      }
    });
  }
}

Deno.test("a stream cut after its text arrived: the step's retry event comes first, then the text again", async () => {
  const { root, def } = await seedAgent();
  const answer = "The answer is off by one.";
  const events = anthropicEvents(anthropicMessage(answer));
  const server = startFakeServer([
    { sse: events.slice(0, 6), sseEnd: "cut" },
    anthropicMessage(answer),
    anthropicMessage(CHECK_OK),
    anthropicMessage("Fixed."),
    anthropicMessage(CHECK_OK),
    anthropicMessage("Looks good."),
    anthropicMessage(CHECK_OK),
  ]);
  try {
    const seen: string[] = [];
    const runner = new StepFlowRunner(def, {
      backend: new AnthropicBackend({
        baseUrl: server.url,
        model: "claude-sonnet-5-5",
        retry: { initialDelayMs: 1, maxDelayMs: 5 },
      }),
      events: {
        onStepText: (info, text) => void (info.stepId === "s_a8f3" && seen.push(text)),
        onStepRetry: (info) => void (info.stepId === "s_a8f3" && seen.push("<retry>")),
      },
    });
    const result = await runner.run({ args: { topic: "the answer" }, cwd: root });
    assert.equal(result.success, true, JSON.stringify(result.error));
    const retry = seen.indexOf("<retry>");
    assert.ok(retry > 0, JSON.stringify(seen));
    assert.ok(
      answer.startsWith(seen.slice(0, retry).join("")),
      "the cut attempt's text came first",
    );
    assert.equal(seen.slice(retry + 1).join(""), answer + CHECK_OK, "then the whole answer again");
  } finally {
    await server.close();
  }
});

Deno.test("a streamed answer that hangs after its first chunk ends with the step timeout", async () => {
  const { root, def } = await seedAgent();
  const events = anthropicEvents(anthropicMessage("An analysis that never ends."));
  const server = startFakeServer([{ sse: events.slice(0, 4), sseEnd: "hang" }]);
  try {
    const pieces: string[] = [];
    const runner = new StepFlowRunner(def, {
      backend: PROTOCOLS.anthropic.backend(server, true),
      stepTimeoutMs: 500,
      events: { onStepText: (_info, text) => void pieces.push(text) },
    });
    const result = await runner.run({ args: { topic: "the answer" }, cwd: root });
    assert.equal(result.success, false);
    assert.equal(result.error?.code, "STEP_TIMEOUT", JSON.stringify(result.error));
    assert.equal(pieces.join(""), "An analy", "the first piece arrived before the hang");
    assert.equal(server.requests.length, 1, "a step timeout is not retried");
  } finally {
    await server.close();
  }
});
