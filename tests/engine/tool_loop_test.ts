import assert from "node:assert/strict";
import { join } from "node:path";
import {
  completeWithTools,
  type PermissionAsk,
  runToolLoop,
  type ToolCallRecord,
  type ToolLoopOptions,
} from "../../src/engine/tool_loop.ts";
import { StepflowError } from "../../src/errors.ts";
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import type { ToolResultMessage } from "../../src/llm/tool_turn.ts";
import type { LlmRequest } from "../../src/llm/types.ts";
import { createAgentTools } from "../../src/tools/agent_tools.ts";
import { parsePermissionRules, type PermissionMode } from "../../src/definition/permission_rule.ts";
import { offeredTools } from "../../src/tools/permissions.ts";
import { ToolRegistry } from "../../src/tools/registry.ts";

async function project(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "stepflow_tool_loop_" });
  await Deno.writeTextFile(join(root, "app.ts"), "export const answer = 41;\n");
  return root;
}

function setup(
  entries: ScriptedEntry[],
  allowed: string[],
  mode: PermissionMode = "default",
  extra: Partial<ToolLoopOptions> & { deny?: string[] } = {},
) {
  const backend = new ScriptedBackend(entries);
  const tools = new ToolRegistry();
  for (const tool of createAgentTools()) tools.register(tool);
  const allow = parsePermissionRules(allowed).rules;
  const deny = parsePermissionRules(extra.deny ?? []).rules;
  const records: ToolCallRecord[] = [];
  const loop: ToolLoopOptions = {
    backend,
    tools,
    offered: offeredTools(allow, deny, tools.list().map((t) => t.name)),
    policy: { mode, allow, deny },
    onToolCall: (r) => records.push(r),
    ...extra,
  };
  return { backend, loop, records };
}

function request(cwd: string, overrides: Partial<LlmRequest> = {}): LlmRequest {
  return {
    kind: "step",
    agent: "t",
    stepId: "fix",
    iteration: 1,
    prompt: "Fix it.",
    cwd,
    ...overrides,
  };
}

/** The tool results the model received in turn `n` (1-based). */
function resultsSeen(backend: ScriptedBackend, n: number): ToolResultMessage[] {
  const last = backend.toolTurns[n - 1].messages.at(-1)!;
  assert.equal(last.role, "tool");
  return (last as { results: ToolResultMessage[] }).results;
}

Deno.test("tool loop: read, edit, run a command, then the final answer takes the structured path", async () => {
  const cwd = await project();
  const { backend, loop, records } = setup(
    [
      { text: "Let me look.", toolCalls: [{ name: "Read", arguments: { file_path: "app.ts" } }] },
      {
        toolCalls: [
          { name: "Edit", arguments: { file_path: "app.ts", old_string: "41", new_string: "42" } },
          { name: "Bash", arguments: '{"command": "cat app.ts"}' },
        ],
      },
      '{"verdict": "ok"}',
    ],
    ["Read", "Edit", "Bash(cat:*)"],
    "acceptEdits",
  );
  const schema = { type: "object", properties: { verdict: { type: "string" } } };
  const answer = await completeWithTools(request(cwd, { outputSchema: schema }), loop);
  assert.equal(answer.text, '{"verdict": "ok"}');
  assert.deepEqual(answer.structuredOutput, { verdict: "ok" });
  assert.equal(await Deno.readTextFile(join(cwd, "app.ts")), "export const answer = 42;\n");
  assert.equal(backend.toolTurns.length, 3);
  // Every turn offers the same tools and carries the schema; results go back with their call ids.
  assert.deepEqual(backend.toolTurns[0].tools.map((t) => t.name), ["Read", "Edit", "Bash"]);
  assert.deepEqual(backend.toolTurns[2].outputSchema, schema);
  assert.deepEqual(resultsSeen(backend, 2), [{
    id: "call_1_1",
    name: "Read",
    content: "     1\texport const answer = 41;",
    isError: false,
  }]);
  const third = resultsSeen(backend, 3);
  assert.deepEqual(third.map((r) => [r.id, r.content, r.isError]), [
    ["call_2_1", "Edited app.ts: 1 replacement.", false],
    ["call_2_2", "export const answer = 42;\n", false],
  ]);
  assert.deepEqual(records.map((r) => [r.tool, r.decision, r.decidedBy]), [
    ["Read", "allow", "rule Read"],
    ["Edit", "allow", "rule Edit"],
    ["Bash", "allow", "rule Bash(cat:*)"],
  ]);
  assert.equal(backend.remaining(), 0);
});

Deno.test("tool loop: bad calls go back to the model as errors it can fix, and nothing runs", async () => {
  const cwd = await project();
  const { backend, loop, records } = setup(
    [
      {
        toolCalls: [
          { name: "Frobnicate", arguments: {} },
          { name: "Write", arguments: { file_path: "x.txt", content: "no" } },
          { name: "Read", arguments: "{not json" },
          { name: "Read", arguments: { path: "app.ts" } },
          { name: "Read", arguments: ["app.ts"] },
          { name: "Read", arguments: { file_path: "missing.ts" } },
          { name: "constructor", arguments: {} },
          { name: "__proto__", arguments: {} },
        ],
      },
      "Done.",
    ],
    ["Read", "Glob"],
    "default",
    { maxBadCalls: 100 },
  );
  const answer = await completeWithTools(request(cwd), loop, {});
  assert.equal(answer.text, "Done.");
  const results = resultsSeen(backend, 2);
  assert.ok(results.every((r) => r.isError));
  const texts = results.map((r) => r.content);
  assert.match(
    texts[0],
    /The tool "Frobnicate" is not available in this step\. Available tools: Read, Glob\./,
  );
  assert.match(texts[1], /The tool "Write" is not available/);
  assert.match(texts[2], /Arguments of Read: not valid JSON/);
  assert.match(texts[3], /Invalid arguments for Read: file_path: .*Unrecognized key/s);
  assert.match(texts[4], /expected a JSON object of named arguments/);
  assert.match(texts[5], /^Error \(FILE_NOT_FOUND\): Read: "missing.ts" does not exist/);
  assert.match(texts[6], /The tool "constructor" is not available/);
  assert.match(texts[7], /The tool "__proto__" is not available/);
  assert.equal(await Deno.lstat(join(cwd, "x.txt")).then(() => true, () => false), false);
  assert.deepEqual(records.map((r) => r.decision), [
    "invalid",
    "invalid",
    "invalid",
    "invalid",
    "invalid",
    "allow",
    "invalid",
    "invalid",
  ]);
});

Deno.test("tool loop: an ask with nobody to ask is refused and the model is told which rule allows it", async () => {
  const cwd = await project();
  const { backend, loop, records } = setup([
    { toolCalls: [{ name: "Bash", arguments: { command: "touch made.txt" } }] },
    {
      toolCalls: [{
        name: "Edit",
        arguments: { file_path: "app.ts", old_string: "41", new_string: "0" },
      }],
    },
    "I could not.",
  ], ["Read", "Bash(npm test)", "Edit(docs/**)"]);
  await completeWithTools(request(cwd), loop);
  const bash = resultsSeen(backend, 2)[0];
  assert.equal(bash.isError, true);
  assert.match(
    bash.content,
    /^Permission denied: Bash needs permission in default mode: no allowedTools rule covers this command\. Nobody can be asked in this run, so the call was refused\. The user can allow it by adding "Bash\(touch:\*\)" to allowedTools\./,
  );
  const edit = resultsSeen(backend, 3)[0];
  assert.match(
    edit.content,
    /adding "Edit\(app.ts\)" to allowedTools or with permissionMode "acceptEdits"/,
  );
  assert.equal(await Deno.lstat(join(cwd, "made.txt")).then(() => true, () => false), false);
  assert.equal(await Deno.readTextFile(join(cwd, "app.ts")), "export const answer = 41;\n");
  assert.deepEqual(records.map((r) => [r.decision, r.decidedBy]), [
    ["deny", "nobody to ask"],
    ["deny", "nobody to ask"],
  ]);
});

Deno.test("tool loop: onPermissionRequest answers asks; plan mode and disallowedTools refuse outright", async () => {
  const cwd = await project();
  const asks: PermissionAsk[] = [];
  const { backend, loop, records } = setup(
    [
      {
        toolCalls: [
          { name: "Bash", arguments: { command: "touch yes.txt" } },
          { name: "Bash", arguments: { command: "touch no.txt" } },
          { name: "Bash", arguments: { command: "rm -f app.ts" } },
        ],
      },
      "ok",
    ],
    ["Bash"],
    "default",
    {
      deny: ["Bash(rm:*)"],
      onPermissionRequest: () => false,
    },
  );
  // "Bash" in allowedTools allows every command: no ask; the deny rule still refuses rm.
  await completeWithTools(request(cwd), {
    ...loop,
    onPermissionRequest: (ask) => {
      asks.push(ask);
      return true;
    },
  });
  assert.equal(asks.length, 0);
  assert.equal(await Deno.lstat(join(cwd, "yes.txt")).then(() => true, () => false), true);
  assert.equal(await Deno.readTextFile(join(cwd, "app.ts")), "export const answer = 41;\n");
  assert.match(
    resultsSeen(backend, 2)[2].content,
    /refused by the rule "Bash\(rm:\*\)" in disallowedTools/,
  );
  assert.deepEqual(records.map((r) => r.decision), ["allow", "allow", "deny"]);

  const asked = setup(
    [
      {
        toolCalls: [{
          name: "Edit",
          arguments: { file_path: "app.ts", old_string: "41", new_string: "7" },
        }],
      },
      {
        toolCalls: [{
          name: "Edit",
          arguments: { file_path: "app.ts", old_string: "7", new_string: "8" },
        }],
      },
      "ok",
    ],
    ["Edit"],
    "default",
  );
  let n = 0;
  await completeWithTools(request(cwd), {
    ...asked.loop,
    policy: { ...asked.loop.policy, allow: parsePermissionRules(["Read"]).rules },
    offered: ["Edit"],
    onPermissionRequest: (ask) => {
      asks.push(ask);
      return ++n === 1;
    },
  });
  assert.deepEqual(asks.map((a) => [a.tool, a.suggestion]), [["Edit", "Edit(app.ts)"], [
    "Edit",
    "Edit(app.ts)",
  ]]);
  assert.equal(await Deno.readTextFile(join(cwd, "app.ts")), "export const answer = 7;\n");
  assert.deepEqual(asked.records.map((r) => r.decidedBy), [
    "approved when asked",
    "denied when asked",
  ]);

  const plan = setup(
    [
      { toolCalls: [{ name: "Write", arguments: { file_path: "p.txt", content: "x" } }] },
      "planned",
    ],
    ["Read", "Write"],
    "plan",
  );
  await completeWithTools(request(cwd), plan.loop);
  assert.match(resultsSeen(plan.backend, 2)[0].content, /refused in plan mode/);
  assert.equal(await Deno.lstat(join(cwd, "p.txt")).then(() => true, () => false), false);
});

Deno.test("tool loop: bounded by tool turns and by bad calls in a row, with clear run errors", async () => {
  const cwd = await project();
  const glob = { toolCalls: [{ name: "Glob", arguments: { pattern: "*.ts" } }] };
  const turns = setup([glob, glob, glob, "never"], ["Glob"], "default", { maxToolTurns: 2 });
  const tooLong = await completeWithTools(request(cwd), turns.loop).then(() => undefined, (e) => e);
  assert.ok(tooLong instanceof StepflowError);
  assert.equal(tooLong.code, "TOOL_TURNS_EXCEEDED");
  assert.match(
    tooLong.message,
    /Step "fix": the model was still calling tools after 2 tool turns \(last: Glob\)/,
  );

  const bad = { toolCalls: [{ name: "Nope", arguments: {} }] };
  const failing = setup([bad, bad, bad, "never"], ["Glob"], "default", { maxBadCalls: 3 });
  const stuck = await completeWithTools(request(cwd), failing.loop).then(() => undefined, (e) => e);
  assert.ok(stuck instanceof StepflowError);
  assert.equal(stuck.code, "TOOL_CALLS_FAILING");
  assert.match(
    stuck.message,
    /3 tool calls in a row were refused or failed \(last: Nope: The tool "Nope" is not available/,
  );

  // A good call resets the count.
  const mixed = setup([bad, bad, glob, bad, bad, "done"], ["Glob"], "default", { maxBadCalls: 3 });
  assert.equal((await completeWithTools(request(cwd), mixed.loop)).text, "done");
});

Deno.test("tool loop: hostile calls — a hundred at once, huge and deep arguments", async () => {
  const cwd = await project();
  let deep = '"x"';
  for (let i = 0; i < 100; i++) deep = `{"a":${deep}}`;
  const many = Array.from(
    { length: 100 },
    () => ({ name: "Glob", arguments: { pattern: "*.ts" } }),
  );
  const { backend, loop } = setup(
    [
      { toolCalls: many },
      { toolCalls: [{ name: "Read", arguments: `{"file_path": "${"a".repeat(2_000_000)}"}` }] },
      { toolCalls: [{ name: "Read", arguments: deep }] },
      "survived",
    ],
    ["Glob", "Read"],
    "default",
    { maxBadCalls: 1_000 },
  );
  assert.equal((await completeWithTools(request(cwd), loop)).text, "survived");
  const first = resultsSeen(backend, 2);
  assert.equal(first.length, 100);
  assert.equal(first.filter((r) => !r.isError).length, 32);
  assert.match(first[32].content, /Too many tool calls in one turn \(at most 32\)/);
  assert.match(resultsSeen(backend, 3)[0].content, /more than 1048576 characters/);
  assert.match(resultsSeen(backend, 4)[0].content, /nested deeper than 64 levels/);
});

Deno.test("tool loop: cancelling stops the loop and the running command", async () => {
  const cwd = await project();
  const { loop } = setup([
    { toolCalls: [{ name: "Bash", arguments: { command: "echo $$ > bash.pid; exec sleep 300" } }] },
    "never",
  ], ["Bash"]);
  const controller = new AbortController();
  const call = completeWithTools(request(cwd), loop, { signal: controller.signal });
  for (;;) {
    const text = await Deno.readTextFile(join(cwd, "bash.pid")).catch(() => "");
    if (text.trim()) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  controller.abort(new Error("cancelled by the user"));
  await assert.rejects(call, /cancelled by the user/);
});

Deno.test("tool loop: every call reports requested, decided, finished in order, and runs only after decided returned", async () => {
  const cwd = await project();
  const events: string[] = [];
  const { loop } = setup(
    [
      {
        toolCalls: [
          { name: "Read", arguments: { file_path: "app.ts" } },
          { name: "Bash", arguments: { command: "cat app.ts" } },
          { name: "Nope", arguments: "{" },
        ],
      },
      "done",
    ],
    ["Read", "Bash(ls:*)"],
    "default",
    {
      onToolCallEvent: async (e) => {
        // Slow on purpose: the call must not run before this report returned.
        await new Promise((r) => setTimeout(r, 1));
        events.push(`${e.tool}:${e.phase}:${e.decision ?? "-"}:${e.durationMs ?? "-"}`);
      },
      onToolCall: (r) => events.push(`${r.tool}:record`),
    },
  );
  await completeWithTools(request(cwd), loop);
  assert.deepEqual(events.map((e) => e.replace(/:\d+$/, ":N")), [
    "Read:requested:-:-",
    "Read:decided:allow:-",
    "Read:finished:allow:N",
    "Read:record",
    "Bash:requested:-:-",
    "Bash:decided:deny:-",
    "Bash:finished:deny:N",
    "Bash:record",
    "Nope:requested:-:-",
    "Nope:decided:invalid:-",
    "Nope:finished:invalid:N",
    "Nope:record",
  ]);
});

Deno.test("resume: recorded turns are not asked again, finished calls not run again, a started call re-runs under its recorded decision", async () => {
  const root = await project();
  try {
    // The scripted model answers by turn count: its first two answers are the recorded turns'.
    const asked: PermissionAsk[] = [];
    const script = ["(recorded turn 1)", "(recorded turn 2)", "Done."];
    const { backend, loop, records } = setup(script, ["Read", "Bash"], "default", {
      onPermissionRequest: (ask) => {
        asked.push(ask);
        return false;
      },
      resume: {
        turns: [
          { text: "", toolCalls: [{ id: "a", name: "Read", arguments: { file_path: "app.ts" } }] },
          {
            text: "Appending.",
            toolCalls: [
              { id: "a", name: "Bash", arguments: { command: "echo one >> out.txt" } },
              { id: "b", name: "Bash", arguments: { command: "echo two >> out.txt" } },
            ],
          },
        ],
        // Turn 1's Read and turn 2's first Bash finished; turn 2's second Bash had started.
        finished: new Map([
          ["1:a", { result: "recorded read", isError: false }],
          ["2:a", { result: "recorded bash", isError: false }],
        ]),
        started: new Map([["2:a", "approved when asked"], ["2:b", "approved when asked"]]),
      },
    });
    const answer = await completeWithTools(request(root), loop);
    assert.equal(answer.text, "Done.");
    // Only the one call without a result ran: nobody was asked again (it was approved before).
    assert.equal(await Deno.readTextFile(join(root, "out.txt")), "two\n");
    assert.deepEqual(asked, []);
    assert.deepEqual(records.map((r) => [r.id, r.tool, r.decidedBy]), [
      ["b", "Bash", "approved when asked"],
    ]);
    // The model was asked once, with the whole conversation: the recorded results as they were.
    assert.equal(backend.toolTurns.length, 1);
    const messages = backend.toolTurns[0].messages;
    assert.equal(messages.filter((m) => m.role === "assistant").length, 2);
    const results = messages.flatMap((m) => m.role === "tool" ? m.results : []);
    assert.deepEqual(results.map((r) => r.content), ["recorded read", "recorded bash", ""]);
    assert.equal(backend.remaining(), 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("resume: a recorded final turn ends the call without asking the model", async () => {
  const root = await project();
  try {
    const { backend, loop } = setup([], ["Read"], "default", {
      resume: {
        turns: [{
          text: '{"done":true}',
          toolCalls: [],
          usage: { inputTokens: 5, outputTokens: 2 },
        }],
        finished: new Map(),
        started: new Map(),
      },
    });
    const answer = await completeWithTools(
      request(root, { outputSchema: { type: "object" } }),
      loop,
    );
    assert.deepEqual(answer.structuredOutput, { done: true });
    assert.deepEqual(answer.usage, { inputTokens: 5, outputTokens: 2 });
    assert.equal(backend.toolTurns.length, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("runToolLoop: an answerer that says wait ends the loop at that call, returned and not run", async () => {
  const cwd = await project();
  const { backend, loop, records } = setup(
    [{
      toolCalls: [
        { id: "c1", name: "Read", arguments: { file_path: "app.ts" } },
        { id: "c2", name: "Bash", arguments: { command: "touch made-by-c2" } },
        { id: "c3", name: "Bash", arguments: { command: "touch made-by-c3" } },
      ],
    }, "never asked"],
    ["Read", "Bash(echo:*)"],
  );
  const events: string[] = [];
  const ended = await runToolLoop(request(cwd), {
    ...loop,
    onToolCallEvent: (e) => void events.push(`${e.phase} ${e.callId}`),
    onPermissionRequest: () => "wait",
  });
  assert.ok("waiting" in ended, "the loop returns the wait");
  assert.equal(ended.waiting.tool, "Bash");
  assert.equal(ended.waiting.callId, "c2");
  // The read ran; the call that waits was requested but never decided or run, nor any after it.
  assert.deepEqual(events, ["requested c1", "decided c1", "finished c1", "requested c2"]);
  assert.deepEqual(records.map((r) => r.id), ["c1"]);
  assert.equal(await Deno.stat(join(cwd, "made-by-c2")).then(() => true, () => false), false);
  assert.equal(backend.toolTurns.length, 1, "the model was not asked again");
});
