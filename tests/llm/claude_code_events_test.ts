/**
 * What a `claude-code` call shows while it runs, through the real Claude Agent SDK spawning
 * tests/llm/fixtures/fake_claude: Claude Code's tool_use / tool_result messages as tool-call
 * events, and the model's text as it streams.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { ToolCallEvent } from "../../src/events/types.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { observeBackend } from "../../src/cli/progress.ts";
import { ClaudeCodeBackend } from "../../src/llm/claude_code.ts";
import { ClaudeStreamReader } from "../../src/llm/claude_code_stream.ts";
import {
  assertCompleted,
  assertNoToolCall,
  assertToolCall,
  runAgentForTest,
} from "../../src/testing/mod.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { fakeClaude } from "./fake_claude.ts";
import { stepRequest } from "./fake_server.ts";

const CALLS = [
  {
    id: "toolu_read",
    name: "Read",
    input: { file_path: "src/app.ts" },
    text: "Let me look.",
    progress: true,
    result: [{ type: "text", text: "     1\texport const answer = 41;" }],
  },
  {
    id: "toolu_bash",
    name: "Bash",
    input: { command: "rm -rf /" },
    denied: "Permission to use Bash has been denied.",
  },
  {
    id: "toolu_edit",
    name: "Edit",
    input: { file_path: "src/app.ts", old_string: "nope", new_string: "x" },
    result: "<tool_use_error>String to replace not found in file.</tool_use_error>",
    is_error: true,
    wait_ms: 400,
  },
  {
    id: "toolu_sub",
    name: "Grep",
    input: { pattern: "answer" },
    parent_tool_use_id: "toolu_task",
    result: "x".repeat(5000),
  },
];

Deno.test("claude-code: Claude Code's tool calls are requested, decided by claude-code and finished, with results and durations", async () => {
  const fake = await fakeClaude([{ result: "Fixed.", tool_calls: CALLS }]);
  try {
    const events: ToolCallEvent[] = [];
    const res = await new ClaudeCodeBackend(fake.options).complete(
      stepRequest({ cwd: fake.dir }),
      { onToolCallEvent: (event) => void events.push(event) },
    );
    assert.equal(res.text, "Fixed.");
    assert.deepEqual(
      events.map((e) => [e.callId, e.phase, e.decision, e.decidedBy]),
      [
        ["toolu_read", "requested", undefined, undefined],
        ["toolu_read", "decided", "allow", "claude-code"], // on its tool_progress
        ["toolu_read", "finished", "allow", "claude-code"],
        ["toolu_bash", "requested", undefined, undefined],
        ["toolu_bash", "decided", "deny", "claude-code"],
        ["toolu_bash", "finished", "deny", "claude-code"],
        ["toolu_edit", "requested", undefined, undefined],
        ["toolu_edit", "decided", "allow", "claude-code"],
        ["toolu_edit", "finished", "allow", "claude-code"],
        ["toolu_sub", "requested", undefined, undefined],
        ["toolu_sub", "decided", "allow", "claude-code"],
        ["toolu_sub", "finished", "allow", "claude-code"],
      ],
    );
    const finished = events.filter((e) => e.phase === "finished");
    const [read, bash, edit, sub] = finished;
    assert.deepEqual(read.args, { file_path: "src/app.ts" });
    assert.equal(read.tool, "Read");
    assert.equal(read.result, "     1\texport const answer = 41;");
    assert.equal(read.isError, false);
    assert.equal(bash.isError, true);
    assert.equal(bash.result, "Permission to use Bash has been denied.");
    assert.equal(bash.durationMs, 0, "a refused call did not run");
    assert.equal(edit.isError, true);
    assert.match(edit.result!, /String to replace not found/);
    // Measured from the tool_use to the tool_result, as this process reads them: the fake waits
    // 400 ms in between, and a busy machine may read the tool_use late (with a 30 ms wait, CI
    // once measured 23 ms), so the bound leaves 150 ms for that.
    assert.ok(edit.durationMs! >= 250, `durationMs ${edit.durationMs}`);
    assert.equal(sub.tool, "Grep", "a subagent's calls are shown too");
    assert.equal(sub.result, `${"x".repeat(2000)}… (5000 characters)`, "results are bounded");
    const [run] = await fake.runs();
    assert.ok(
      !run.argv.includes("--include-partial-messages"),
      "partial messages only when someone reads the text",
    );
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: the model's text streams as deltas when someone listens, each message once", async () => {
  const fake = await fakeClaude([{ result: "All fixed now.", tool_calls: [CALLS[0]] }]);
  try {
    const pieces: string[] = [];
    const res = await new ClaudeCodeBackend(fake.options).complete(
      stepRequest({ cwd: fake.dir }),
      { onText: (text) => void pieces.push(text) },
    );
    assert.equal(res.text, "All fixed now.");
    const [run] = await fake.runs();
    assert.ok(run.argv.includes("--include-partial-messages"));
    // Deltas of 4 characters; the assistant messages' full text blocks are not sent again.
    assert.equal(pieces.join(""), "Let me look.\nAll fixed now.");
    assert.ok(pieces.length >= 6, `${pieces.length} pieces`);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: without partial messages the text of each assistant message is sent whole", async () => {
  const fake = await fakeClaude([{ result: "Done.", tool_calls: [CALLS[0]] }]);
  try {
    const pieces: string[] = [];
    await new ClaudeCodeBackend({
      ...fake.options,
      extraOptions: { includePartialMessages: false },
    }).complete(stepRequest({ cwd: fake.dir }), { onText: (text) => void pieces.push(text) });
    const [run] = await fake.runs();
    assert.ok(!run.argv.includes("--include-partial-messages"));
    assert.deepEqual(pieces, ["Let me look.", "\nDone."]);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code: a call left without a result finishes as an error when the turn ends; a throwing listener breaks nothing", async () => {
  const fake = await fakeClaude([{
    result: "Gave up.",
    tool_calls: [{
      id: "toolu_lost",
      name: "Bash",
      input: { command: "sleep 1" },
      no_result: true,
    }],
  }]);
  try {
    const events: ToolCallEvent[] = [];
    const res = await new ClaudeCodeBackend(fake.options).complete(
      stepRequest({ cwd: fake.dir }),
      {
        onToolCallEvent: (event) => {
          events.push(event);
          throw new Error("listener bug");
        },
        onText: () => {
          throw new Error("listener bug");
        },
      },
    );
    assert.equal(res.text, "Gave up.");
    assert.deepEqual(events.map((e) => e.phase), ["requested", "decided", "finished"]);
    assert.equal(events[2].isError, true);
    assert.match(events[2].result!, /without a result for this call/);
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code through the runner: its tool calls are onToolCall events and tool_call log lines, its text onStepText", async () => {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const script = parseYaml(
    await Deno.readTextFile(`${root}.agent/issue-solver/demo.script.yaml`),
  ) as Record<string, { output: Record<string, unknown> }[]>;
  // The demo's four answers; in the first iteration Claude Code reads and edits first.
  const used: Record<string, number> = {};
  const outputs = ["initial.issue", "continuation.issue", "continuation.issue", "complete.issue"]
    .map((id) => script[id][used[id] = (used[id] ?? -1) + 1].output);
  const fake = await fakeClaude(outputs.map((output, i) => ({
    structured_output: output,
    ...(i === 0 ? { tool_calls: CALLS.slice(0, 3) } : {}),
  })));
  try {
    const definition = await loadAgentDefinition("issue-solver", { cwd: root });
    const store = new MemoryRunStore();
    const calls: [string, ToolCallEvent][] = [];
    const texts: string[] = [];
    const result = await new StepFlowRunner(definition, {
      backend: new ClaudeCodeBackend(fake.options),
      store,
      events: {
        onToolCall: (info, call) => void calls.push([info.stepId, call]),
        onStepText: (info, piece) => void texts.push(`${info.stepId}: ${piece}`),
      },
    }).run({ args: { topic: "flaky test" }, cwd: fake.dir, runId: "cc-tools" });
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
    assert.equal(calls.length, 9);
    assert.ok(calls.every(([stepId]) => stepId === "initial.issue"));
    const text = texts.filter((t) => t.startsWith("initial.issue: ")).map((t) => t.slice(15)).join(
      "",
    );
    assert.match(text, /^Let me look\.\n\{/, "the text before the call, then the answer");
    const logged = (await store.readLog("cc-tools")).filter((e) => e.type === "tool_call");
    assert.deepEqual(
      logged.map((e) => [e.stepId, e.callId, e.tool, e.decision, e.decidedBy, e.isError]),
      [
        ["initial.issue", "toolu_read", "Read", "allow", "claude-code", false],
        ["initial.issue", "toolu_bash", "Bash", "deny", "claude-code", true],
        ["initial.issue", "toolu_edit", "Edit", "allow", "claude-code", true],
      ],
    );
    assert.equal(logged[0].args, '{"file_path":"src/app.ts"}');
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code in the testing kit: the tool calls Claude Code reports can be asserted", async () => {
  const dir = fileURLToPath(new URL("../../.agent/haiku", import.meta.url));
  const fake = await fakeClaude([
    {
      result: "Red leaves on the path\nthe old gate creaks in the wind\nautumn walks us home",
      tool_calls: [CALLS[0]],
    },
    { structured_output: { result: "ok", message: "5-7-5" } },
  ]);
  try {
    const backend = new ClaudeCodeBackend(fake.options);
    assert.equal(observeBackend(backend, {}).reportsToolCalls, true, "wrappers keep it");
    const run = await runAgentForTest({
      agent: dir,
      script: backend,
      args: { topic: "autumn" },
      cwd: fake.dir,
      env: {},
    });
    assertCompleted(run);
    assertToolCall(run, "Read", { input: { file_path: "src/app.ts" }, decision: "allow" });
    assertNoToolCall(run, "Bash");
    assert.equal(run.toolCalls?.[0].result, "     1\texport const answer = 41;");
  } finally {
    await fake.cleanup();
  }
});

Deno.test("claude-code stream reader: messages without ids, odd inputs and non-text results are read safely", async () => {
  const events: ToolCallEvent[] = [];
  const pieces: string[] = [];
  const reader = new ClaudeStreamReader({
    onToolCallEvent: (event) => void events.push(event),
    onText: (text) => void pieces.push(text),
  });
  const delta = (text: string) => ({
    type: "stream_event",
    parent_tool_use_id: null,
    event: { type: "content_block_delta", delta: { type: "text_delta", text } },
  });
  // Deltas of a message whose start carried no id are one message's text: no line breaks added.
  await reader.read({
    type: "stream_event",
    parent_tool_use_id: null,
    event: { type: "message_start" },
  });
  for (const piece of ["Wor", "king", "…"]) await reader.read(delta(piece));
  await reader.read({
    type: "assistant",
    parent_tool_use_id: null,
    message: {
      content: [
        null,
        "text",
        { type: "tool_use", name: "x".repeat(500), input: ["not", "an", "object"] },
        { type: "tool_use", id: "t2", name: "Read", input: { file_path: "a.png" } },
      ],
    },
  });
  await reader.read({ type: "user", message: { content: "a prompt echoed back" } });
  await reader.read({
    type: "user",
    message: {
      content: [
        {
          type: "tool_result",
          tool_use_id: "t2",
          content: [{ type: "image" }, { type: "text", text: "ok" }],
        },
        { type: "tool_result", tool_use_id: "never-asked", content: "?" },
      ],
    },
  });
  await reader.read({ type: "tool_progress", tool_use_id: "never-asked" });
  await reader.end();
  assert.deepEqual(pieces, ["Wor", "king", "…"]);
  const [first, second] = [events[0], events[1]];
  assert.equal(first.phase, "requested");
  assert.equal(first.tool.length, 200, "a huge tool name is cut");
  assert.equal(first.args, undefined, "arguments that are not an object are left out");
  assert.match(first.callId, /^unnamed_/);
  assert.equal(second.callId, "t2");
  const finished = events.filter((e) => e.phase === "finished");
  assert.deepEqual(
    finished.map((e) => [e.callId === "t2" ? "t2" : "unnamed", e.result, e.isError]),
    [
      ["t2", "[image]\nok", false],
      ["unnamed", "Claude Code ended its turn without a result for this call.", true],
    ],
  );
  assert.equal(events.length, 6, "nothing for a result or progress of a call never asked for");
});
