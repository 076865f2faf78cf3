/**
 * buildScriptPrompt teaches the grammar and lists the registry's modules with their inputs; a
 * (scripted) LLM answer goes through extractScript, validates and runs.
 */
import assert from "node:assert/strict";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import {
  buildScriptPrompt,
  createProgressPrinter,
  createQPlanRegistry,
  extractScript,
  runScript,
  validateScript,
} from "../../src/qplan/mod.ts";

Deno.test("the prompt has the task, the grammar, every module with its inputs, and the answer format", () => {
  const registry = createQPlanRegistry({ http: true });
  const prompt = buildScriptPrompt("  Average the numbers in data.txt  ", registry, {
    params: ["limit"],
  });
  assert.match(prompt, /## Task\nAverage the numbers in data.txt\n/);
  assert.match(prompt, /Declare them with @params "limit"/);
  for (
    const construct of [
      "step id=",
      "onError",
      "jump to=",
      "parallel",
      "each item in",
      "return",
      "EXISTS",
    ]
  ) {
    assert.ok(prompt.includes(construct), construct);
  }
  for (const tool of registry.list()) assert.match(prompt, new RegExp(`^- ${tool.name}: `, "m"));
  assert.match(
    prompt,
    /^ {4}op \("add" \| "sub" \| "mul" \| "div" \| "sum" \| "avg", required\) — The operation\.$/m,
  );
  assert.match(prompt, /^ {4}path \(string, required\) — Path relative to the workspace root\.$/m);
  assert.match(prompt, /- echo: .*\n {4}\(any key=value arguments\)/);
  assert.ok(!prompt.includes("- ai:"), "ai is only listed when registered");
  assert.match(prompt, /```qplan fenced block/);
});

Deno.test("the example in the prompt is itself a valid script", () => {
  const prompt = buildScriptPrompt("x", createQPlanRegistry());
  const example = prompt.split("## Example\n")[1].split("\n## Answer")[0]
    .split("\n").map((l) => l.replace(/^ {4}/, "")).join("\n");
  const v = validateScript(example, { registry: createQPlanRegistry() });
  assert.deepEqual(v.issues, []);
});

Deno.test("extractScript takes the fenced block, else the whole answer", () => {
  assert.equal(extractScript("Sure!\n```qplan\nvar 1 -> x\n```\nDone."), "var 1 -> x");
  assert.equal(extractScript("```\nvar 2 -> y\n```"), "var 2 -> y");
  assert.equal(extractScript("  var 3 -> z \n"), "var 3 -> z");
});

Deno.test("an LLM-written script (scripted backend) validates and runs", async () => {
  const backend = new ScriptedBackend([
    'Here is the plan:\n```qplan\n@title "Sum"\nstep id="sum" desc="Add up" {\n  math sum arr=[1, 2, 3] -> total\n  return total\n}\n```',
  ]);
  const registry = createQPlanRegistry();
  const answer = await backend.complete({
    kind: "step",
    agent: "qplan",
    stepId: "write",
    iteration: 1,
    prompt: buildScriptPrompt("Add 1, 2 and 3", registry),
    cwd: ".",
  });
  const script = extractScript(answer.text);
  assert.ok(validateScript(script, { registry }).ok);
  const lines: string[] = [];
  let clock = 0;
  const result = await runScript(script, {
    registry,
    runId: "r1",
    events: createProgressPrinter((l) => lines.push(l), { now: () => (clock += 5) }),
  });
  assert.deepEqual(result.results, { sum: { total: 6 } });
  assert.deepEqual(lines, [
    '[00:00.005] run r1 started: "Sum", 1 step',
    '[00:00.015] step sum #1 started ("Add up")',
    '[00:00.025] step sum #1 completed in 10 ms → {"total":6}',
    "[00:00.030] run completed",
  ]);
});

Deno.test("the progress printer draws nesting, errors, retries and jumps", async () => {
  const lines: string[] = [];
  await runScript(
    `step id="outer" desc="Outer" {
  step id="flaky" onError="retry=1" { math div a=1 b=0 -> x }
}
step id="j" onError="jump=end" { math div a=1 b=0 -> y }
step id="end" { var 1 -> z }`,
    { events: createProgressPrinter((l) => lines.push(l), { now: () => 0 }), runId: "r" },
  );
  assert.deepEqual(lines, [
    "[00:00.000] run r started: 4 steps",
    '[00:00.000] step outer #1 started ("Outer")',
    "[00:00.000]   step flaky #2 started",
    "[00:00.000]   step flaky #2 error [QPLAN_RUNTIME] Module 'math' failed: math div: division by zero (b is 0) (line 2, step 'flaky')",
    "[00:00.000]   step flaky #2 retry 1: onError retry after [QPLAN_RUNTIME] Module 'math' failed: math div: division by zero (b is 0) (line 2, step 'flaky')",
    "[00:00.000]   step flaky #2 started (attempt 2)",
    "[00:00.000]   step flaky #2 error [QPLAN_RUNTIME] Module 'math' failed: math div: division by zero (b is 0) (line 2, step 'flaky')",
    "[00:00.000] step outer #1 error [QPLAN_RUNTIME] Module 'math' failed: math div: division by zero (b is 0) (line 2, step 'flaky')",
    "[00:00.000] run error: Module 'math' failed: math div: division by zero (b is 0) (line 2, step 'flaky')",
  ]);
});
