/**
 * The replay backend's tool turns: one recorded entry per model turn; the first turn of a call is
 * checked like a plain call (drift, a step never recorded, past the end), the later turns answer
 * from the entries that follow; a recording whose `toolCalls` are the old `{ name, input }` notes
 * is refused with a message that says how to fix it.
 */
import assert from "node:assert/strict";
import { StepflowError } from "../../src/errors.ts";
import { promptFingerprint } from "../../src/llm/prompt_fingerprint.ts";
import { ReplayBackend } from "../../src/llm/replay.ts";
import type { ToolTurnRequest } from "../../src/llm/tool_turn.ts";

const RECORDING = {
  _replay: { version: 1, agent: "fixer" },
  fix: [
    {
      toolCalls: [{ id: "c1", name: "Read", arguments: { file_path: "a.ts" } }],
      kind: "step",
      iteration: 1,
      fingerprint: promptFingerprint("Be brief.", "Fix a.ts"),
      system: "Be brief.",
      prompt: "Fix a.ts",
    },
    { text: "Fixed.", kind: "step", iteration: 1 },
  ],
};

function turn(prompt: string, after = 0): ToolTurnRequest {
  const messages: ToolTurnRequest["messages"] = [{ role: "user", content: prompt }];
  for (let i = 0; i < after; i++) {
    messages.push({ role: "assistant", text: "", toolCalls: [] });
    messages.push({ role: "tool", results: [] });
  }
  return {
    kind: "step",
    agent: "fixer",
    stepId: "fix",
    iteration: 1,
    systemPrompt: "Be brief.",
    messages,
    tools: [],
  };
}

function code(error: unknown): string {
  return error instanceof StepflowError ? error.code : String(error);
}

Deno.test("replay tool turns: the recorded calls with their ids, then the answer", async () => {
  const backend = new ReplayBackend(RECORDING);
  const first = await backend.toolTurn(turn("Fix a.ts"));
  assert.deepEqual(first.toolCalls, [{ id: "c1", name: "Read", arguments: { file_path: "a.ts" } }]);
  // The later turn sends tool results, not the step's prompt: it is not fingerprinted.
  const second = await backend.toolTurn(turn("Fix a.ts", 1));
  assert.deepEqual([second.text, second.toolCalls], ["Fixed.", []]);
  assert.equal(backend.remaining(), 0);
});

Deno.test("replay tool turns: a changed prompt fails the first turn with a diff; lenient answers", async () => {
  const strict = new ReplayBackend(RECORDING, { source: "fix.yaml" });
  await assert.rejects(strict.toolTurn(turn("Fix b.ts")), (e) => {
    assert.equal(code(e), "REPLAY_PROMPT_CHANGED");
    assert.match((e as Error).message, /step prompt of step "fix" changed .*fix\.yaml \(entry 1/);
    assert.match((e as Error).message, /- Fix a\.ts\n\+ Fix b\.ts/);
    return true;
  });
  const warnings: string[] = [];
  const lenient = new ReplayBackend(RECORDING, {
    mode: "lenient",
    onWarning: (m) => warnings.push(m),
  });
  const answer = await lenient.toolTurn(turn("Fix b.ts"));
  assert.equal(answer.toolCalls[0].name, "Read");
  assert.equal(warnings.length, 1);
  assert.equal(lenient.drifts[0].call, 1);
});

Deno.test("replay tool turns: a turn past the end and a step never recorded name the turn", async () => {
  const backend = new ReplayBackend(RECORDING, { source: "fix.yaml" });
  await backend.toolTurn(turn("Fix a.ts"));
  await backend.toolTurn(turn("Fix a.ts", 1));
  await assert.rejects(backend.toolTurn(turn("Fix a.ts", 2)), (e) => {
    assert.equal(code(e), "REPLAY_EXHAUSTED");
    assert.match(
      (e as Error).message,
      /step call of step "fix" \(iteration 1, model turn 3 after its tool calls\) needs entry 3 of "fix", but the recording holds 2/,
    );
    return true;
  });
  await assert.rejects(
    backend.toolTurn({ ...turn("Check"), kind: "check" }),
    (e) => code(e) === "REPLAY_STEP_UNKNOWN" && /it recorded "fix"/.test((e as Error).message),
  );
});

Deno.test("replay tool turns: a recorded tool-call turn met by a call without tools says so", async () => {
  const backend = new ReplayBackend(RECORDING);
  await assert.rejects(
    backend.complete({
      kind: "step",
      agent: "fixer",
      stepId: "fix",
      iteration: 1,
      systemPrompt: "Be brief.",
      prompt: "Fix a.ts",
      cwd: ".",
    }),
    (e) => code(e) === "SCRIPT_INVALID" && /calls tools, but the step offers none/.test(String(e)),
  );
});

Deno.test("replay tool turns: the old { name, input } notes under toolCalls are refused with the fix", () => {
  assert.throws(
    () =>
      new ReplayBackend({
        draft: [{ text: "Done", toolCalls: [{ name: "Read", input: { file: "a.md" } }] }],
      }, { source: "old.yaml" }),
    (e) => {
      assert.equal(code(e), "REPLAY_FILE_OUTDATED");
      assert.match((e as Error).message, /Replay old\.yaml: "draft" entry 1 lists "toolCalls"/);
      assert.match((e as Error).message, /Record the run again \(run it with --record FILE\)/);
      return true;
    },
  );
  // The scripted meaning, with arguments, is what a recording holds now.
  new ReplayBackend({ draft: [{ toolCalls: [{ name: "Read", arguments: {} }] }, "Done"] });
});
