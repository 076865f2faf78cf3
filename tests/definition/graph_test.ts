import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { flowToMermaid } from "../../src/definition/graph.ts";
import { copyExample, load, REPO_ROOT } from "./fixtures.ts";

Deno.test("flowToMermaid: the seed 001 flow with onPass, retry and fallback edges", async () => {
  const def = await loadAgentDefinition("code-improver", { cwd: REPO_ROOT });
  assert.equal(
    flowToMermaid(def),
    [
      "flowchart TD",
      "  %% agent code-improver",
      '  start(("start"))',
      '  s_a8f3["Code Analysis<br/><small>s_a8f3</small>"]',
      '  s_b2c1["Implementation<br/><small>s_b2c1</small>"]',
      '  s_c9d4["Review<br/><small>s_c9d4</small>"]',
      '  done((("complete")))',
      "  start --> s_a8f3",
      '  s_a8f3 -->|"onPass"| s_b2c1',
      '  s_a8f3 -.->|"onFail retry (max 2)"| s_a8f3',
      '  s_b2c1 -->|"onPass"| s_c9d4',
      '  s_b2c1 -.->|"onFail fallback"| s_a8f3',
      '  s_c9d4 -->|"onPass"| done',
      '  s_c9d4 -.->|"onFail fallback"| s_b2c1',
      "",
    ].join("\n"),
  );
});

Deno.test("flowToMermaid: the seed 004 flow marks the closing step and its end", async () => {
  const def = await loadAgentDefinition("issue-solver", { cwd: REPO_ROOT });
  assert.equal(
    flowToMermaid(def),
    [
      "flowchart TD",
      "  %% agent issue-solver",
      '  start(("start"))',
      '  initial_issue["Issue Initial Prompt<br/><small>initial.issue</small>"]',
      '  continuation_issue["Issue Continuation Prompt<br/><small>continuation.issue</small>"]',
      '  complete_issue[["Issue Completion Report<br/><small>complete.issue</small>"]]',
      '  done((("complete")))',
      "  start --> initial_issue",
      '  initial_issue -->|"next"| continuation_issue',
      '  initial_issue -.->|"repeat"| initial_issue',
      '  initial_issue -->|"complete"| complete_issue',
      '  continuation_issue -->|"next"| continuation_issue',
      '  continuation_issue -.->|"repeat"| continuation_issue',
      '  continuation_issue -->|"complete"| complete_issue',
      '  complete_issue -->|"end"| done',
      "  classDef closing stroke-width:3px",
      "  class complete_issue closing",
      "",
    ].join("\n"),
  );
});

Deno.test("flowToMermaid: jump, abort, complete without a transition, onError; sections hidden", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    const initial = r.steps["initial.issue"];
    initial.structuredGate.allowedIntents = ["next", "jump", "abort", "complete"];
    delete initial.transitions.repeat;
    delete initial.transitions.complete;
    initial.onError = "retry=2";
    r.steps["continuation.issue"].onError = { jump: "complete.issue" };
    r.steps["continuation.issue"].name = 'Work "hard" | <fast>';
    r.steps["section.context"] = { name: "Context" };
  });
  const text = flowToMermaid(await load(agent));
  const lines = text.split("\n");
  for (
    const expected of [
      '  initial_issue -->|"jump (next_action.details.target)"| anyStep',
      '  initial_issue -->|"abort"| aborted',
      '  initial_issue -->|"complete"| done',
      '  initial_issue -.->|"onError retry=2"| initial_issue',
      '  continuation_issue -.->|"onError jump"| complete_issue',
      '  continuation_issue["Work #34;hard#34; #124; #60;fast#62;<br/><small>continuation.issue</small>"]',
      '  anyStep{{"any flow step"}}',
      '  aborted((("aborted")))',
    ]
  ) assert.ok(lines.includes(expected), `missing line ${expected}\n${text}`);
  assert.doesNotMatch(text, /section/);
});

Deno.test("flowToMermaid: node ids are unique and never Mermaid keywords", () => {
  const step = (id: string) => ({
    id,
    name: id,
    kind: "closing" as const,
    iterations: { min: 1, max: 1 },
    transitions: {},
    onError: { kind: "fail" as const },
    raw: {},
  });
  const text = flowToMermaid({
    name: "x",
    entryStepId: "a.b",
    steps: { "a.b": step("a.b"), "a_b": step("a_b"), "end.x": step("end.x") },
  });
  assert.match(text, /\n {2}a_b\[\["a\.b"\]\]\n {2}a_b_2\[\["a_b"\]\]\n {2}end_x\[\["end\.x"\]\]/);
  assert.match(text, /start --> a_b\n/);
});
