/**
 * The seed 001 code-improver flow with its tools (`allowedTools`, `permissionMode: acceptEdits`)
 * through the real runner, on a real agent folder, with a scripted model that calls tools.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentDefinitionError } from "../../src/definition/errors.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { toolCallLine } from "../../src/events/tool_call_line.ts";
import type { ToolCallEvent } from "../../src/events/types.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { FileRunStore } from "../../src/store/file.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { seed001Files, seed001Script, writeAgent } from "./fixtures.ts";

type Steps = Record<string, Record<string, unknown>>;

async function setup(behavior: Record<string, unknown>, mutate?: (steps: Steps) => void) {
  const root = await Deno.makeTempDir({ prefix: "stepflow_tool_flow_" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, behavior);
  mutate?.(files.registry.steps as Steps);
  await writeAgent(root, "code-improver", files);
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "src/app.ts"), "export const answer = 41;\n");
  return { root, def: await loadAgentDefinition("code-improver", { cwd: root }) };
}

Deno.test("seed 001 with tools: read, edit, run a command; a tool outside the allowed set never runs", async () => {
  const { root, def } = await setup({
    allowedTools: ["Read", "Write", "Edit", "Bash", "Glob", "Grep"],
    permissionMode: "acceptEdits",
  });
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [
      { toolCalls: [{ name: "Grep", arguments: { pattern: "answer", output_mode: "content" } }] },
      { toolCalls: [{ name: "WebFetch", arguments: { url: "https://example.com" } }] },
      "The answer is off by one.",
    ],
    s_b2c1: [
      {
        toolCalls: [{
          name: "Edit",
          arguments: { file_path: "src/app.ts", old_string: "41", new_string: "42" },
        }],
      },
      { toolCalls: [{ name: "Bash", arguments: { command: "grep -c 42 src/app.ts" } }] },
      "Fixed.",
    ],
    s_c9d4: ["Looks good."],
  }));
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "the answer" },
    cwd: root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(await Deno.readTextFile(join(root, "src/app.ts")), "export const answer = 42;\n");
  // What the model saw after each call.
  const seen = backend.toolTurns.flatMap((t) => {
    const last = t.messages.at(-1)!;
    return last.role === "tool" ? last.results.map((r) => `${r.name}: ${r.content}`) : [];
  });
  assert.deepEqual(seen, [
    "Grep: src/app.ts:1:export const answer = 41;",
    'WebFetch: The tool "WebFetch" is not available in this step. Available tools: Read, Write, Edit, Glob, Grep, Bash.',
    "Edit: Edited src/app.ts: 1 replacement.",
    "Bash: 1\n",
  ]);
  assert.equal(backend.remaining(), 0);
});

Deno.test("a step narrows the agent's tools and mode: a tool it drops is not offered", async () => {
  // The implementation step may only read, in default mode.
  const { root, def } = await setup(
    { allowedTools: ["Read", "Edit"], permissionMode: "acceptEdits" },
    (steps) => Object.assign(steps.s_b2c1, { allowedTools: ["Read"], permissionMode: "default" }),
  );
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: ["Analysed."],
    s_b2c1: [
      {
        toolCalls: [{
          name: "Edit",
          arguments: { file_path: "src/app.ts", old_string: "41", new_string: "0" },
        }],
      },
      "I may not edit here.",
    ],
    s_c9d4: ["Reviewed."],
  }));
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "x" },
    cwd: root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(await Deno.readTextFile(join(root, "src/app.ts")), "export const answer = 41;\n");
  const results = backend.toolTurns[3].messages.at(-1)!; // analyse, its check, implement ×2
  assert.equal(results.role, "tool");
  assert.match(
    (results as { results: { content: string }[] }).results[0].content,
    /The tool "Edit" is not available in this step\. Available tools: Read\./,
  );
});

Deno.test("a run error when the model keeps calling tools past maxToolTurns' default", async () => {
  const { root, def } = await setup({ allowedTools: ["Glob"], permissionMode: "default" });
  const glob = { toolCalls: [{ name: "Glob", arguments: { pattern: "**/*.ts" } }] };
  const backend = new ScriptedBackend({ s_a8f3: Array.from({ length: 60 }, () => glob) });
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "x" },
    cwd: root,
  });
  assert.equal(result.success, false);
  assert.equal(result.error?.code, "TOOL_TURNS_EXCEEDED");
  assert.match(result.error!.message, /still calling tools after 50 tool turns/);
  assert.equal(result.error?.stepId, "s_a8f3");
});

Deno.test("the loader checks tool rules and modes: typos are problems with a did-you-mean", async () => {
  const root = await Deno.makeTempDir({ prefix: "stepflow_tool_rules_" });
  const files = seed001Files();
  Object.assign((files.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "Bahs(npm test)", "mcp__github"],
    disallowedTools: ["Write(src/**)"],
    permissionMode: "acceptEdit",
    mcpServers: { github: { comand: "gh-mcp" }, "bad name": { command: "x" } },
  });
  Object.assign((files.registry.steps as Steps).s_b2c1, {
    allowedTools: ["Grpe"],
    permissionMode: "plna",
  });
  await writeAgent(root, "code-improver", files);
  const error = await loadAgentDefinition("code-improver", { cwd: root }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(error instanceof AgentDefinitionError, String(error));
  const text = error.problems.join("\n");
  assert.match(
    text,
    /agent\.json: behavior: allowedTools "Bahs\(npm test\)": unknown tool "Bahs" \(did you mean "Bash"\?\)/,
  );
  assert.match(
    text,
    /disallowedTools "Write\(src\/\*\*\)": path rules are written Edit\(src\/\*\*\)/,
  );
  assert.match(
    text,
    /behavior: unknown permissionMode "acceptEdit" \(did you mean "acceptEdits"\?\)/,
  );
  assert.match(
    text,
    /step "s_b2c1": allowedTools "Grpe": unknown tool "Grpe" \(did you mean "Grep"\?\)/,
  );
  assert.match(text, /step "s_b2c1": unknown permissionMode "plna" \(did you mean "plan"\?\)/);
  assert.match(text, /agent\.json: behavior\.mcpServers\.github: .*comand/);
  assert.match(text, /agent\.json: behavior\.mcpServers: the name "bad name" must be/);

  // Good rules, disallowedTools and Claude Code's own "auto" mode load.
  const good = seed001Files();
  Object.assign((good.agent as { behavior: Record<string, unknown> }).behavior, {
    allowedTools: ["Read", "Bash(git diff:*)", "WebFetch(domain:example.com)", "mcp__gh__list"],
    disallowedTools: ["Bash(rm:*)"],
    permissionMode: "auto",
    // Variables are expanded when the servers start, not at load time.
    mcpServers: { gh: { type: "http", url: "${GH_MCP_URL}", headers: { A: "${UNSET_TOKEN}" } } },
  });
  await writeAgent(root, "good", good);
  await loadAgentDefinition("good", { cwd: root });
});

Deno.test("each tool call is three onToolCall events under its step and a tool_call line in the run log", async () => {
  const { root, def } = await setup({
    allowedTools: ["Read", "Edit(docs/**)"],
    permissionMode: "default",
  });
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [
      {
        toolCalls: [
          { name: "Read", arguments: { file_path: "src/app.ts" } },
          {
            name: "Edit",
            arguments: { file_path: "src/app.ts", old_string: "41", new_string: "42" },
          },
          { name: "Nope", arguments: {} },
        ],
      },
      "Looked.",
    ],
    s_c9d4: ["Fine."],
  }));
  const store = new MemoryRunStore();
  const calls: [string, ToolCallEvent][] = [];
  const logs: string[] = [];
  const result = await new StepFlowRunner(def, {
    backend,
    store,
    events: {
      onToolCall: (info, call) => void calls.push([info.stepId, call]),
      onStepLog: (_info, message) => void logs.push(message),
    },
  }).run({ args: { topic: "x" }, cwd: root, runId: "tools-1" });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.deepEqual(
    calls.map(([stepId, c]) => [stepId, c.tool, c.phase, c.decision ?? null]),
    [
      ["s_a8f3", "Read", "requested", null],
      ["s_a8f3", "Read", "decided", "allow"],
      ["s_a8f3", "Read", "finished", "allow"],
      ["s_a8f3", "Edit", "requested", null],
      ["s_a8f3", "Edit", "decided", "deny"],
      ["s_a8f3", "Edit", "finished", "deny"],
      ["s_a8f3", "Nope", "requested", null],
      ["s_a8f3", "Nope", "decided", "invalid"],
      ["s_a8f3", "Nope", "finished", "invalid"],
    ],
  );
  const finished = calls.map(([, c]) => c).filter((c) => c.phase === "finished");
  assert.match(toolCallLine(finished[0]), /^↳ Read src\/app\.ts ✓ \d+ ms$/);
  // Nobody to ask: the line says how to allow it.
  assert.equal(
    toolCallLine(finished[1]),
    '↳ Edit src/app.ts ✗ refused (nobody to ask): allow with allowedTools "Edit(src/app.ts)" or --permission-mode acceptEdits',
  );
  assert.match(
    toolCallLine(finished[2]),
    /^↳ Nope ✗ invalid call: The tool "Nope" is not available/,
  );
  assert.deepEqual(logs, [], "a call is shown once: by its events, not by a log line too");
  const logged = (await store.readLog("tools-1")).filter((e) => e.type === "tool_call");
  assert.deepEqual(
    logged.map((e) => [e.stepId, e.tool, e.decision, e.decidedBy, e.isError]),
    [
      ["s_a8f3", "Read", "allow", "rule Read", false],
      ["s_a8f3", "Edit", "deny", "nobody to ask", true],
      ["s_a8f3", "Nope", "invalid", undefined, true],
    ],
  );
  assert.equal(logged[0].args, '{"file_path":"src/app.ts"}');
  assert.deepEqual(logged[1].allowWith, {
    allowedTools: "Edit(src/app.ts)",
    permissionMode: "acceptEdits",
  });
  assert.ok(!Number.isNaN(Date.parse(String(logged[1].decidedAt))));
  assert.equal(logged[0].result, "     1\texport const answer = 41;");
  assert.match(
    String(logged[1].result),
    /^Permission denied: Edit needs permission in default mode/,
  );
});

Deno.test("refused oversized tool-call data reaches the run log as an excerpt and its size, never whole", async () => {
  const { root, def } = await setup({
    allowedTools: ["Read", "Write"],
    permissionMode: "acceptEdits",
  });
  const hugeId = "c".repeat(1_000_000);
  const backend = new ScriptedBackend(seed001Script({
    s_a8f3: [
      // 10 MB as text (as OpenAI sends arguments), then 3 MB as an object: both over 1 MiB.
      { toolCalls: [{ name: "Read", arguments: `{"file_path":"${"a".repeat(10_000_000)}"}` }] },
      {
        toolCalls: [{
          name: "Write",
          arguments: { file_path: "big.txt", content: "b".repeat(3e6) },
        }],
      },
      // A 1 MB call id on a call that runs.
      { toolCalls: [{ id: hugeId, name: "Read", arguments: { file_path: "src/app.ts" } }] },
      "Done.",
    ],
  }));
  const runs = join(root, "runs");
  const store = new FileRunStore(runs);
  const result = await new StepFlowRunner(def, { backend, store }).run({
    args: { topic: "x" },
    cwd: root,
    runId: "huge-1",
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.equal(await Deno.stat(join(root, "big.txt")).catch(() => null), null, "not written");
  // What the model was told.
  const told = backend.toolTurns.slice(1, 4).map((t) => {
    const last = t.messages.at(-1) as { results: { id: string; content: string }[] };
    return last.results[0];
  });
  assert.match(
    told[0].content,
    /^Arguments of Read: more than 1048576 characters \(10000016\); send less\.$/,
  );
  assert.match(told[1].content, /^Arguments of Write: more than 1048576 characters \(3000036\);/);
  assert.match(told[2].content, /export const answer = 41/);
  // The log holds excerpts: a few kilobytes, not the 20 MB and the five copies of the id.
  const size = (await Deno.stat(join(runs, "huge-1.jsonl"))).size;
  assert.ok(size < 100_000, `the run log is ${size} bytes`);
  const log = await store.readLog("huge-1");
  const turns = log.filter((e) => e.type === "tool_turn").map((e) =>
    (e.toolCalls as { id: string; arguments: unknown }[])[0]
  );
  assert.match(String(turns[0].arguments), /^\{"file_path":"a{1986}… \(10000016 characters\)$/);
  assert.match(String(turns[1].arguments), /… \(3000036 characters\)$/);
  // A long id is shortened to one form, the same in every line (a resume matches them up).
  const short = "c".repeat(40) + "_t3c1_len1000000";
  assert.equal(turns[2].id, short);
  const lines = log.filter((e) => e.type === "tool_call_start" || e.type === "tool_call");
  assert.deepEqual(
    lines.filter((e) => e.tool === "Read" && e.decision !== "invalid").map((e) => e.callId),
    [
      short,
      short,
    ],
  );
  assert.equal(told[2].id, short);
  assert.ok(!JSON.stringify(log).includes("c".repeat(1_000)));
});
