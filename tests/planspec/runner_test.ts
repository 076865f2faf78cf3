import assert from "node:assert/strict";
import { hostName, lockPlanFile } from "../../src/store/file_lock.ts";
import { join } from "node:path";
import { ScriptedBackend, type ScriptedScript } from "../../src/llm/scripted.ts";
import {
  type ExecutorEvents,
  parsePlan,
  PlanRunner,
  readHistory,
  serializePlan,
} from "../../src/planspec/mod.ts";

const REPORT_PLAN = `# Plan: Sales report
Goal: Produce the quarterly sales report
## Steps
1. [act] Fetch the sales data of the quarter → sales
2. [reason] Summarize the sales by region → summary
  > ← sales
3. [subtask] Build the charts → charts
  3.1. [act] Draw the charts with the old plotting library → charts
4. [decide] Whether the summary shows growth
  4.1. [act] Growth → write an upbeat headline
  4.2. [act] No growth → write a cautious headline
5. [act] Assemble the report → report
  > ← summary, charts
`;

const ok = (result: string, outputs?: Record<string, unknown>, extra: object = {}) => ({
  output: { status: "OK", result, ...(outputs ? { outputs } : {}), ...extra },
});
const fail = (status: string, result: string) => ({ output: { status, result } });

function recorder(): { events: ExecutorEvents; log: string[] } {
  const log: string[] = [];
  return {
    log,
    events: {
      onPlanStart: () => void log.push("plan:start"),
      onPlanEnd: (_p, ctx) => void log.push(`plan:end:${ctx.status}`),
      onStepStart: (info) => void log.push(`start:${info.stepId}`),
      onStepEnd: (info, r) =>
        void log.push(`end:${info.stepId}:${(r as { status: string }).status}`),
      onStepRetry: (info, attempt) => void log.push(`retry:${info.stepId}:${attempt}`),
      onStateChange: (n, o) => void log.push(`state:${o}>${n}`),
    },
  };
}

Deno.test("plan run: FAIL → reflection → REVISE, retry limit, decide branch, REPLAN of a subtask", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "report.md");
  await Deno.writeTextFile(file, REPORT_PLAN);
  const script: ScriptedScript = {
    "planspec.step.1": [ok("fetched 1200 rows", { sales: { north: 10, south: 0 } })],
    "planspec.step.2": [
      fail("FAIL", "division by zero in the south region"),
      ok("north up 10%, south empty", { summary: "north +10%" }),
    ],
    "planspec.reflect.2": [{
      output: {
        decision: "PLAN_CMD",
        reason: "empty regions break the ratio",
        commands:
          "PLAN_CMD: REVISE 2 [reason] Summarize the sales by region, skipping empty regions → summary\n> ← sales\n> report skipped regions",
      },
    }],
    "planspec.step.3.1": [
      fail("FAIL", "module 'oldplot' not found"),
      fail("FAIL", "module 'oldplot' not found"),
      ok("3 charts", { charts: ["a.png", "b.png", "c.png"] }),
    ],
    "planspec.reflect.3.1": [
      { output: { decision: "RETRY", reason: "maybe a transient install problem" } },
      { output: { decision: "RETRY", reason: "try once more" } },
    ],
    "planspec.step.4": [ok("north grew", {}, { branch: "4.1" })],
    "planspec.step.4.1": [ok("headline: Growth in the north")],
    "planspec.replan": [
      "The charts library is gone, so the charts subtask must be re-planned.\n" +
      "PLAN_CMD: REPLAN 3 | the old plotting library is not installed",
    ],
    "planspec.children.3": [
      "Here are the new steps:\n3.1. [act] Draw the charts with the standard plotting library → charts\n  > ← summary\n",
    ],
    "planspec.step.5": [ok("report assembled", { report: "report.md" })],
  };
  const backend = new ScriptedBackend(script);
  const { events, log } = recorder();
  const runner = await PlanRunner.fromFile(file, { backend, events, maxAttempts: 2 });
  const result = await runner.run();

  assert.equal(result.status, "completed", result.error);
  assert.equal(result.rounds, 2);
  assert.equal(backend.remaining(), 0, "every scripted answer was used");
  assert.deepEqual(result.blocked, []);
  assert.deepEqual(result.variables.report, "report.md");
  assert.equal(
    await Deno.readTextFile(file),
    `# Plan: Sales report
Goal: Produce the quarterly sales report
## Steps
1. [x] [act] Fetch the sales data of the quarter → sales | fetched 1200 rows
2. [x] [reason] Summarize the sales by region, skipping empty regions → summary | north up 10%, south empty
  > ← sales
  > report skipped regions
3. [x] [subtask] Build the charts → charts | Progress: 1/1
  3.1. [x] [act] Draw the charts with the standard plotting library → charts | 3 charts
    > ← summary
4. [x] [decide] Whether the summary shows growth | chose 4.1: north grew
  4.1. [x] [act] Growth → write an upbeat headline | headline: Growth in the north
  4.2. [~] [act] No growth → write a cautious headline | not chosen (step 4 chose 4.1)
5. [x] [act] Assemble the report → report | report assembled
  > ← summary, charts
`,
  );
  assert.deepEqual(
    backend.calls.map((c) => `${c.kind}:${c.stepId}`),
    [
      "step:planspec.step.1",
      "step:planspec.step.2",
      "step:planspec.reflect.2",
      "step:planspec.step.2",
      "step:planspec.step.3.1",
      "step:planspec.reflect.3.1",
      "step:planspec.step.3.1",
      "step:planspec.reflect.3.1",
      "step:planspec.step.4",
      "step:planspec.step.4.1",
      // step 5 is blocked by the engine (its input charts cannot arrive): no call
      "step:planspec.replan",
      "step:planspec.children.3",
      "step:planspec.step.3.1",
      "step:planspec.step.5",
    ],
  );
  assert.deepEqual(log, [
    "plan:start",
    "state:idle>running",
    "start:1",
    "end:1:OK",
    "start:2",
    "end:2:FAIL",
    "start:2",
    "end:2:OK",
    "start:3.1",
    "end:3.1:FAIL",
    "retry:3.1:1",
    "start:3.1",
    "end:3.1:FAIL",
    "start:4",
    "end:4:OK",
    "start:4.1",
    "end:4.1:OK",
    "start:5",
    "end:5:BLOCKED",
    "start:3.1",
    "end:3.1:OK",
    "start:5",
    "end:5:OK",
    "state:running>completed",
    "plan:end:completed",
  ]);

  // What each stage saw.
  const byId = (id: string) => backend.calls.filter((c) => c.stepId === id);
  const step2 = byId("planspec.step.2")[0];
  assert.match(step2.prompt, /Produce the quarterly sales report/);
  assert.match(step2.prompt, /- sales: \{"north":10,"south":0\}/, "inputs carry the values");
  assert.match(step2.prompt, /step 1 \(act\) "Fetch the sales data of the quarter": OK/);
  assert.deepEqual(
    (step2.outputSchema as { required: string[] }).required,
    ["status", "result"],
  );
  const reflect = byId("planspec.reflect.2")[0];
  assert.match(reflect.prompt, /Status: FAIL\nResult: division by zero/);
  assert.match(reflect.prompt, /Can ask the user a question: no/);
  assert.match(
    reflect.prompt,
    /1\. \[x\] \[act\] Fetch the sales data of the quarter → sales \| fetched 1200 rows/,
  );
  assert.match(
    reflect.prompt,
    /2\. \[>\] \[reason\] Summarize the sales by region → summary\n {2}> ← sales/,
  );
  const decide = byId("planspec.step.4")[0];
  assert.match(decide.prompt, /- 4\.1: Growth\n- 4\.2: No growth/);
  assert.deepEqual(
    (decide.outputSchema as { properties: { branch: { enum: string[] } } }).properties.branch.enum,
    ["4.1", "4.2"],
  );
  const replan = byId("planspec.replan")[0];
  assert.match(
    replan.prompt,
    /step 3\.1 \[act\] is blocked: FAIL: module 'oldplot' not found \(gave up after 2 attempts\)/,
  );
  assert.match(
    replan.prompt,
    /step 5 \[act\] is blocked: missing input charts \(step 3 is blocked, step 3\.1 is blocked\)/,
  );
  assert.equal(replan.iteration, 1);
  assert.equal(byId("planspec.step.5")[0].iteration, 2);
  assert.match(byId("planspec.step.5")[0].prompt, /- charts: \["a\.png","b\.png","c\.png"\]/);

  const history = await readHistory(join(dir, "report.history.jsonl"));
  assert.deepEqual(
    history.filter((e) => e.kind === "reflection").map((e) => e.decision),
    ["PLAN_CMD", "RETRY", "RETRY"],
  );
  assert.deepEqual(history.find((e) => e.kind === "replan")?.commands, [
    "PLAN_CMD: REPLAN 3 | the old plotting library is not installed",
  ]);
  assert.equal(history.at(-1)?.kind, "end");
  assert.equal(history.at(-1)?.status, "completed");
  // No temp or lock file is left behind.
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) names.push(e.name);
  assert.deepEqual(names.sort(), ["report.history.jsonl", "report.md"]);
});

Deno.test("plan run: INTERACT without a terminal blocks the step with the question recorded", async () => {
  const plan = parsePlan("Goal: Book a trip\n## Steps\n1. [act] Book the flight → booking\n");
  const backend = new ScriptedBackend({
    "planspec.step.1": [fail("LACK_OF_INFO", "the travel dates are unknown")],
    "planspec.reflect.1": [{
      output: { decision: "INTERACT", reason: "only the user knows", question: "Which dates?" },
    }],
    "planspec.replan": ["Nothing can be done without the dates."],
  });
  const result = await new PlanRunner(plan, { backend, maxRounds: 2 }).run();
  assert.equal(result.status, "blocked");
  assert.deepEqual(result.blocked, [{ stepId: "1", result: "needs input: Which dates?" }]);
  assert.equal(plan.steps[0].status, "blocked");
  assert.equal(
    serializePlan(plan).split("\n")[2],
    "1. [!] [act] Book the flight → booking | needs input: Which dates?",
  );
});

Deno.test("plan run: INTERACT on a terminal asks, and the answer reaches the re-run", async () => {
  const plan = parsePlan("Goal: Book a trip\n## Steps\n1. [act] Book the flight → booking\n");
  const asked: string[] = [];
  const backend = new ScriptedBackend({
    "planspec.step.1": [
      fail("LACK_OF_INFO", "the travel dates are unknown"),
      ok("booked for May 3-7", { booking: "XK12" }),
    ],
    "planspec.reflect.1": [{
      output: { decision: "INTERACT", reason: "only the user knows", question: "Which dates?" },
    }],
  });
  const result = await new PlanRunner(plan, {
    backend,
    interactive: true,
    ask: (q) => {
      asked.push(q);
      return Promise.resolve("May 3 to May 7");
    },
  }).run();
  assert.equal(result.status, "completed");
  assert.deepEqual(asked, ["Which dates?"]);
  assert.match(
    backend.calls[2].prompt,
    /the user was asked "Which dates\?" about step 1 and answered: May 3 to May 7/,
  );
  assert.match(backend.calls[1].prompt, /Can ask the user a question: yes/);
});

Deno.test("plan run: ACCEPT, SKIP, ADD before the failed step, and missing outputs", async () => {
  const plan = parsePlan(`Goal: g
## Steps
1. [reason] Estimate the effort → estimate
2. [act] Run the optional lint → lint_report
3. [act] Deploy → deployment
`);
  const backend = new ScriptedBackend({
    "planspec.step.1": [ok("about 3 days")], // OK without the declared output → UNCERTAIN
    "planspec.reflect.1": [{ output: { decision: "ACCEPT", reason: "an estimate is enough" } }],
    "planspec.step.2": [fail("FAIL", "linter crashed")],
    "planspec.reflect.2": [{
      output: {
        decision: "PLAN_CMD",
        reason: "optional",
        commands: ["PLAN_CMD: SKIP 2 | optional"],
      },
    }],
    "planspec.step.3": [
      fail("LACK_OF_INFO", "no credentials"),
      ok("fetched", { credentials: "k" }), // the inserted step, now numbered 3
    ],
    "planspec.reflect.3": [{
      output: {
        decision: "PLAN_CMD",
        reason: "fetch credentials first",
        commands: "PLAN_CMD: ADD 3 [act] Fetch the deploy credentials from the vault → credentials",
      },
    }],
    "planspec.step.4": [ok("deployed", { deployment: "v1" })], // the deploy step, moved to 4
  });
  const result = await new PlanRunner(plan, { backend }).run();
  assert.equal(result.status, "completed", result.error);
  assert.equal(
    serializePlan(plan),
    `Goal: g
## Steps
1. [x] [reason] Estimate the effort → estimate | about 3 days (declared outputs not returned: estimate)
2. [~] [act] Run the optional lint → lint_report | optional
3. [x] [act] Fetch the deploy credentials from the vault → credentials | fetched
4. [x] [act] Deploy → deployment | deployed
`,
  );
  assert.deepEqual(
    backend.calls.map((c) => c.stepId),
    [
      "planspec.step.1",
      "planspec.reflect.1",
      "planspec.step.2",
      "planspec.reflect.2",
      "planspec.step.3",
      "planspec.reflect.3",
      "planspec.step.3",
      "planspec.step.4",
    ],
  );
});

Deno.test("plan run: REPLAN ALL regenerates the whole plan and the run goes on", async () => {
  const plan = parsePlan(
    "Goal: Translate the manual\n## Steps\n1. [act] Machine-translate everything → draft\n",
  );
  const backend = new ScriptedBackend({
    "planspec.step.1": [
      fail("FAIL", "the manual is a scanned PDF"),
      ok("12 pages", { text: "..." }), // step 1 of the regenerated plan
    ],
    "planspec.reflect.1": [{
      output: {
        decision: "PLAN_CMD",
        reason: "wrong approach",
        commands:
          "PLAN_CMD: ADD 2 [act] ignored because of REPLAN ALL\nPLAN_CMD: REPLAN ALL | needs OCR first",
      },
    }],
    "planspec.regenerate": [
      "not a plan at all",
      "```\n# Plan: Translate the scanned manual\nGoal: Translate the manual\n## Steps\n1. [act] OCR the scanned PDF → text\n2. [act] Translate the text → draft\n  > ← text\n```",
    ],
    "planspec.step.2": [ok("translated", { draft: "..." })],
  });
  const result = await new PlanRunner(plan, { backend }).run();
  assert.equal(result.status, "completed", result.error);
  assert.equal(plan.title, "Translate the scanned manual");
  assert.deepEqual(plan.steps.map((s) => [s.stepId, s.status, s.description]), [
    ["1", "done", "OCR the scanned PDF"],
    ["2", "done", "Translate the text"],
  ]);
  // The first regeneration answer was invalid: one re-ask with the parse error.
  const regen = backend.calls.filter((c) => c.stepId === "planspec.regenerate");
  assert.deepEqual(regen.map((c) => c.kind), ["step", "reask"]);
  assert.match(regen[1].prompt, /line 1: unexpected text/);
  assert.match(
    regen[1].prompt,
    /\nYour previous answer was rejected: your plan is not a valid PlanSpec plan\.\n- line 1: .*\nAnswer again with only the whole corrected plan in the PlanSpec format/,
  );
  assert.match(regen[0].prompt, /needs OCR first/);
});

Deno.test("plan run: a `reask` prompt override is refused, saying re-asks share one prompt", async () => {
  const plan = parsePlan("Goal: g\n## Steps\n1. [act] Do it → out\n");
  const backend = new ScriptedBackend({});
  const result = await new PlanRunner(plan, {
    backend,
    prompts: { reask: "Try again: {errors}" } as Record<string, string>,
  }).run();
  assert.equal(result.status, "failed");
  assert.match(
    result.error ?? "",
    /^prompts: no PlanSpec prompt is named "reask" \(known: generate, .*\); re-asks use the one re-ask prompt/,
  );
  assert.equal(backend.calls.length, 0);
});

Deno.test("plan run: an invalid structured answer is re-asked once, then counts as FAIL", async () => {
  const plan = parsePlan("Goal: g\n## Steps\n1. [act] Do it → out\n");
  const backend = new ScriptedBackend({
    "planspec.step.1": [
      "I did it!",
      { output: { status: "DONE", result: "x" } },
      ok("done properly", { out: 1 }),
    ],
    "planspec.reflect.1": [{ output: { decision: "RETRY", reason: "format slip" } }],
  });
  const result = await new PlanRunner(plan, { backend }).run();
  assert.equal(result.status, "completed");
  assert.deepEqual(backend.calls.map((c) => `${c.kind}:${c.stepId}`), [
    "step:planspec.step.1",
    "reask:planspec.step.1",
    "step:planspec.reflect.1",
    "step:planspec.step.1",
  ]);
  // The one re-ask prompt every engine uses (src/engine/ask_structured.ts).
  assert.ok(backend.calls[1].prompt.startsWith(backend.calls[0].prompt));
  assert.equal(
    backend.calls[1].prompt.slice(backend.calls[0].prompt.length),
    "\n\n---\nYour previous answer was rejected: your answer contained no JSON object.\n" +
      "Answer again with only a JSON object that matches the required JSON schema exactly.",
  );
  assert.match(
    backend.calls[2].prompt,
    /Status: FAIL\nResult: the answer did not match the step's output schema: status: Invalid option/,
  );
});

Deno.test("plan run: an iterative subtask repeats until its progress reaches the total", async () => {
  const plan = parsePlan("Goal: g\n## Steps\n1. [subtask] Process every batch → results\n");
  const backend = new ScriptedBackend({
    "planspec.step.1": [
      ok("batch 1", { results: [1] }, { progress: { done: 1, total: 3 } }),
      ok("batch 2", { results: [1, 2] }, { progress: { done: 2, total: 3 } }),
      ok("batch 3", { results: [1, 2, 3] }, { progress: { done: 3, total: 3 } }),
    ],
  });
  const result = await new PlanRunner(plan, { backend }).run();
  assert.equal(result.status, "completed");
  assert.equal(
    serializePlan(plan),
    "Goal: g\n## Steps\n1. [x] [subtask] Process every batch → results | batch 3 | Progress: 3/3\n",
  );
  assert.match(backend.calls[1].prompt, /iterative subtask \(1\/3 iterations done\)/);
  assert.ok("progress" in ((backend.calls[0].outputSchema as { properties: object }).properties));
});

Deno.test("plan run: refuses an invalid plan, finishes a complete one without calls", async () => {
  const backend = new ScriptedBackend({});
  await assert.rejects(
    () => new PlanRunner(parsePlan("## Steps\n1. [LLM] x\n"), { backend }).run(),
    /has errors; fix them before running:\n {2}- step 1: invalid type 'LLM'\n {2}- plan has no goal/,
  );
  const done = await new PlanRunner(parsePlan("Goal: g\n1. [x] [act] a\n2. [~] [act] b\n"), {
    backend,
  })
    .run();
  assert.equal(done.status, "completed");
  assert.equal(backend.calls.length, 0);
});

Deno.test("plan run: a backend failure stops the run as failed, keeping the file consistent", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "p.md");
  await Deno.writeTextFile(file, "Goal: g\n## Steps\n1. [act] A → a\n2. [act] B → b\n");
  const backend = new ScriptedBackend({
    "planspec.step.1": [ok("a done", { a: 1 })],
    "planspec.step.2": [{ error: "connection reset" }],
  });
  const errors: string[] = [];
  const result = await (await PlanRunner.fromFile(file, {
    backend,
    events: {
      onStepError: (info, e) => void errors.push(`${info.stepId}: ${(e as Error).message}`),
    },
  })).run();
  assert.equal(result.status, "failed");
  assert.match(result.error!, /connection reset/);
  assert.deepEqual(errors, ["2: scripted backend error: connection reset"]);
  assert.equal(
    await Deno.readTextFile(file),
    "Goal: g\n## Steps\n1. [x] [act] A → a | a done\n2. [>] [act] B → b\n",
  );
  // Running again continues at step 2 with step 1's output still known.
  const again = new ScriptedBackend({ "planspec.step.2": [ok("b done", { b: 2 })] });
  const second = await (await PlanRunner.fromFile(file, { backend: again })).run();
  assert.equal(second.status, "completed");
  assert.match(again.calls[0].prompt, /- a: 1/);
});

Deno.test("plan run: a live lock refuses a second run of the same file", async () => {
  const dir = await Deno.makeTempDir();
  const file = join(dir, "p.md");
  await Deno.writeTextFile(file, "Goal: g\n## Steps\n1. [act] A\n");
  // The run store's lock: held (OS lock) by another holder in this process.
  const held = lockPlanFile(file, { runId: "other", onWarning: () => {} });
  await assert.rejects(
    async () => await (await PlanRunner.fromFile(file, { backend: new ScriptedBackend({}) })).run(),
    new RegExp(
      `^StepflowError: Plan file .*p\\.md is already being run by pid ${Deno.pid} on host .* since .* \\(lock file .*p\\.md\\.lock\\)`,
    ),
  );
  held.release();
  // A lock of a dead process is taken over.
  await Deno.writeTextFile(
    `${file}.lock`,
    JSON.stringify({
      runId: "dead",
      pid: 2 ** 22 + 12345,
      hostname: hostName(),
      started: "2026-01-01T00:00:00.000Z",
    }),
  );
  const backend = new ScriptedBackend({ "planspec.step.1": [ok("a")] });
  assert.equal((await (await PlanRunner.fromFile(file, { backend })).run()).status, "completed");
});

Deno.test("plan run: an abort signal ends the run as aborted", async () => {
  const controller = new AbortController();
  const plan = parsePlan("Goal: g\n## Steps\n1. [act] A\n2. [act] B\n");
  const backend = new ScriptedBackend({
    "planspec.step.1": [{ output: { status: "OK", result: "a" }, delayMs: 2000 }],
  });
  setTimeout(() => controller.abort(), 20);
  const result = await new PlanRunner(plan, { backend, signal: controller.signal }).run();
  assert.equal(result.status, "aborted");
  assert.equal(plan.steps[0].status, "active");
});

Deno.test("plan run: an output named like an Object method is missing until the answer has it", async () => {
  const plan = parsePlan("Goal: g\n## Steps\n1. [act] Build it → constructor\n");
  const backend = new ScriptedBackend({
    "planspec.step.1": [ok("built", {}), ok("built", { constructor: "x" })],
    "planspec.reflect.1": [{ output: { decision: "RETRY", reason: "the output is missing" } }],
  });
  const result = await new PlanRunner(plan, { backend }).run();
  assert.equal(result.status, "completed");
  assert.match(
    backend.calls[1].prompt,
    /Status: UNCERTAIN\nResult: built \(declared outputs not returned: constructor\)/,
  );
  assert.deepEqual(result.variables, { constructor: "x" });
});
