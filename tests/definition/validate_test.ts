import assert from "node:assert/strict";
import { join } from "node:path";
import { isValidStepId } from "../../src/definition/step_id.ts";
import { validateFlow } from "../../src/definition/validate.ts";
import type { StepsRegistry } from "../../src/definition/schema.ts";
import { assertProblems, copyExample, type Json, load, loadFails } from "./fixtures.ts";

const R = "steps_registry.json";

Deno.test("entry: no entryStepMapping.<type> and no entryStep is the seed's message", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    delete r.entryStepMapping;
  });
  assertProblems(await loadFails(agent), [
    '[StepFlow] No entry step configured for completionType "issue".\n' +
    'Define either "entryStepMapping.issue" or "entryStep" in steps_registry.json.',
  ]);
});

Deno.test("entry: a mapping for another completionType does not count; entryStep does", async () => {
  const other = await copyExample("issue-solver", (r) => {
    r.entryStepMapping = { externalState: "initial.issue" };
  });
  const error = await loadFails(other);
  assert.match(error.problems[0], /No entry step configured for completionType "issue"/);

  const viaEntryStep = await copyExample("issue-solver", (r) => {
    r.entryStepMapping = { externalState: "initial.issue" };
    r.entryStep = "initial.issue";
  });
  assert.equal((await load(viaEntryStep)).entryStepId, "initial.issue");
});

Deno.test("gates: the seed's message lists steps missing structuredGate and transitions", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    delete r.steps["initial.issue"].structuredGate;
    delete r.steps["initial.issue"].transitions;
    delete r.steps["continuation.issue"].structuredGate;
  });
  assertProblems(await loadFails(agent), [
    [
      "[StepFlow] Flow validation failed. All Flow steps must define structuredGate and transitions.",
      "Steps missing structuredGate: initial.issue, continuation.issue",
      "Steps missing transitions: initial.issue",
      'See docs/agents.md#load-time-validation for requirements. Fix them in steps_registry.json (a check-gated step satisfies the rule with its "check").',
    ].join("\n"),
  ]);
});

Deno.test("gates: check-gated steps, sections and closing steps satisfy the gate rule", async () => {
  // code-improver: check-gated only; issue-solver has a closing step without transitions
  await load(await copyExample("code-improver"));
  const withSection = await copyExample("issue-solver", (r) => {
    r.steps["section.projectcontext"] = { name: "Project context" };
  });
  const def = await load(withSection);
  assert.equal(def.steps["section.projectcontext"].kind, "section");
  assert.deepEqual(def.warnings, []);
});

Deno.test("a step with both check and structuredGate is an error", async () => {
  const agent = await copyExample("code-improver", (r) => {
    r.steps.s_a8f3.structuredGate = { allowedIntents: ["next"], intentField: "a" };
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "s_a8f3": defines both check and structuredGate; a flow step routes one way, check-gated ("check") or gate-routed ("structuredGate"): remove one of them (docs/agents.md, "steps_registry.json").`,
  ]);
});

Deno.test("step ids: single words are ids; unsafe names are not; id/stepId must equal the key", async () => {
  const words = await copyExample("code-improver", (r) => {
    r.steps.analyze = { ...r.steps.s_a8f3 };
    delete r.steps.analyze.id;
    delete r.steps.s_a8f3;
    r.entryStep = "analyze";
    r.steps.s_b2c1.check.onFail.fallback = "analyze";
  });
  const def = await load(words);
  assert.equal(def.entryStepId, "analyze");
  assert.equal(def.steps.analyze.kind, "check");

  const agent = await copyExample("code-improver", (r) => {
    r.steps["bad id"] = { ...r.steps.s_a8f3 };
    delete r.steps["bad id"].id;
    delete r.steps.s_a8f3;
    r.entryStep = "bad id";
    r.steps.s_b2c1.check.onFail.fallback = "bad id";
    r.steps.s_b2c1.id = "s_b2c2";
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "bad id": invalid step id: use letters, digits, "_" and "-", in segments joined by single dots, starting with a letter or digit, at most 128 characters (e.g. "triage", "initial.issue", "s_a8f3").`,
    `${R}: step "s_b2c1": id "s_b2c2" does not match the step's key "s_b2c1"; make them equal.`,
  ]);
  const dotted = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].stepId = "initial.issues";
  });
  assertProblems(await loadFails(dotted), [
    `${R}: step "initial.issue": stepId "initial.issues" does not match the step's key "initial.issue"; make them equal.`,
  ]);
});

Deno.test("step id rule: any safe name — hashes, dotted names and single words", () => {
  for (
    const ok of [
      "s_a8f3",
      "s_b2c1de",
      "initial.issue",
      "initial.externalState",
      "consider",
      "triage",
      "review-2",
      "step_1",
      "9lives",
      "s_a8f",
      "complete.issue",
      "a".repeat(128),
    ]
  ) {
    assert.equal(isValidStepId(ok), true, ok);
  }
  for (
    const bad of [
      "",
      "a..b",
      ".a",
      "a.",
      "..",
      "a/b",
      "a#b",
      "a b",
      "a~1",
      "-a",
      "_a",
      "é",
      "a".repeat(129),
    ]
  ) {
    assert.equal(isValidStepId(bad), false, bad);
  }
});

Deno.test("step ids: a single-word entry step (consider) loads and keeps the complete.* rule", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    const rename = (from: string, to: string) => {
      r.steps[to] = { ...r.steps[from] };
      delete r.steps[to].stepId;
      delete r.steps[to].id;
      delete r.steps[from];
    };
    rename("initial.issue", "consider");
    r.entryStepMapping = { issue: "consider" };
    for (const step of Object.values(r.steps) as Json[]) {
      for (const t of Object.values(step.transitions ?? {}) as Json[]) {
        if (t.target === "initial.issue") t.target = "consider";
      }
    }
  });
  const def = await load(agent);
  assert.equal(def.entryStepId, "consider");
  assert.equal(def.steps.consider.kind, "gate");
  assert.equal(def.steps["complete.issue"].kind, "closing");
});

Deno.test("targets: next, fallback, entryStep and onError jumps must name existing steps", async () => {
  const agent = await copyExample("code-improver", (r) => {
    r.steps.s_a8f3.check.onPass.next = "s_b2c2";
    r.steps.s_b2c1.check.onFail.fallback = "s_0000";
    r.steps.s_c9d4.onError = "jump=s_dead";
    r.entryStep = "s_ffff";
  });
  assertProblems(await loadFails(agent), [
    `${R}: entryStep "s_ffff" is not a step in ${R}. Fix the id, or add the step.`,
    `${R}: step "s_a8f3": check.onPass.next "s_b2c2" is not a step in ${R}. Did you mean "s_b2c1"?`,
    `${R}: step "s_b2c1": check.onFail.fallback "s_0000" is not a step in ${R}. Fix the id, or add the step.`,
    `${R}: step "s_c9d4": onError jump target "s_dead" is not a step in ${R}. Fix the id, or add the step.`,
  ]);
});

Deno.test("targets: transitions and entryStepMapping values; sections are never targets", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["section.context"] = {};
    r.steps["initial.issue"].transitions.next.target = "section.context";
    r.steps["continuation.issue"].transitions.next.target = "continuation.isue";
    r.entryStepMapping.other = "initial.nothing";
  });
  assertProblems(await loadFails(agent), [
    `${R}: entryStepMapping.other "initial.nothing" is not a step in ${R}. Fix the id, or add the step.`,
    `${R}: step "initial.issue": transitions.next.target "section.context" is a template section (section.*), not a flow step; route to a flow step instead.`,
    `${R}: step "continuation.issue": transitions.next.target "continuation.isue" is not a step in ${R}. Did you mean "continuation.issue"?`,
  ]);
});

Deno.test("intents: transition keys and fallbackIntent within allowedIntents; jump needs targetField; next needs a transition", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    const gate = r.steps["initial.issue"].structuredGate;
    gate.allowedIntents = ["next", "repeat", "jump"];
    gate.fallbackIntent = "abort";
    delete gate.targetField;
    r.steps["initial.issue"].transitions.finish = { target: "complete.issue" };
    delete r.steps["continuation.issue"].transitions.next;
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "initial.issue": structuredGate.fallbackIntent "abort" is not one of allowedIntents (next, repeat, jump); add it there or change fallbackIntent.`,
    `${R}: step "initial.issue": structuredGate.allowedIntents includes "jump" but nothing can supply a target: set structuredGate.targetField to the output field that holds the target step id (e.g. "next_action.details.target"), or give transitions.jump a default "target".`,
    `${R}: step "initial.issue": transitions.complete: "complete" is not in structuredGate.allowedIntents (next, repeat, jump); add it there or remove the transition.`,
    `${R}: step "initial.issue": transitions.finish: "finish" is not a gate intent (next, repeat, jump, complete, abort); rename or remove it.`,
    `${R}: step "continuation.issue": structuredGate.allowedIntents includes "next" but transitions.next is missing: add "transitions": { "next": { "target": "<stepId>" } }, or remove "next" from allowedIntents.`,
  ]);
});

Deno.test("complete transitions lead to a closing step, never back to their own step", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].transitions.complete.target = "continuation.issue";
    r.steps["continuation.issue"].transitions.complete.target = "continuation.issue";
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "initial.issue": transitions.complete.target "continuation.issue" is not a closing step: the complete intent must lead to a "complete.*" step, or omit transitions.complete to end the run at this step.`,
    `${R}: step "continuation.issue": transitions.complete.target is the step itself; a complete transition must lead to a closing step (complete.*), never back to its own step.`,
  ]);
});

Deno.test("gate and closing steps need outputSchemaRef; closing steps take no transitions or check", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    delete r.steps["continuation.issue"].outputSchemaRef;
    delete r.steps["complete.issue"].outputSchemaRef;
    r.steps["complete.issue"].transitions = { next: { target: "initial.issue" } };
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "continuation.issue": gate-routed step has no outputSchemaRef: add "outputSchemaRef": { "file": "<name>.schema.json", "schema": "#/definitions/continuation.issue" }.`,
    `${R}: step "complete.issue": is a closing step (complete.*): it runs once and ends the run, so it takes no transitions. Remove it.`,
    `${R}: step "complete.issue": closing step has no outputSchemaRef: add "outputSchemaRef": { "file": "<name>.schema.json", "schema": "#/definitions/complete.issue" } for its final report.`,
  ]);
});

Deno.test("sections take no routing; check steps take no transitions", async () => {
  const agent = await copyExample("code-improver", (r) => {
    r.steps["section.context"] = { transitions: { next: { target: "s_a8f3" } } };
    r.steps.s_c9d4.transitions = { next: { target: "s_a8f3" } };
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "section.context": is a template section (section.*), not a flow step: remove transitions (or rename the step).`,
    `${R}: step "s_c9d4": is check-gated but defines transitions; a check step routes with check.onPass / check.onFail. Remove transitions (or use structuredGate instead of check).`,
  ]);
});

Deno.test("iterations.min ≤ max, onError continue needs a next route, parameter defaults match their type", async () => {
  const agent = await copyExample("issue-solver", (r, a) => {
    r.steps["initial.issue"].iterations = { min: 3 };
    r.steps["continuation.issue"].iterations = { min: 4, max: 2 };
    r.steps["initial.issue"].structuredGate.allowedIntents = ["repeat", "complete"];
    r.steps["initial.issue"].structuredGate.fallbackIntent = "repeat";
    delete r.steps["initial.issue"].transitions.next;
    r.steps["initial.issue"].onError = "continue";
    a.parameters.topic.default = 3;
  });
  assertProblems(await loadFails(agent), [
    'agent.json: parameters.topic.default 3 is a number, but the parameter\'s type is "string"; make them agree.',
    `${R}: step "initial.issue": iterations.min (3) is greater than iterations.max (1, the default); raise max or lower min.`,
    `${R}: step "initial.issue": onError "continue" follows the step's next route, but it has no transitions.next: add one, or use another onError policy.`,
    `${R}: step "continuation.issue": iterations.min (4) is greater than iterations.max (2); raise max or lower min.`,
  ]);
});

Deno.test("invalid onError strings are rejected with the step's path", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].onError = "retry=many";
    r.steps["continuation.issue"].onError = { retry: "3" };
  });
  assertProblems(await loadFails(agent), [
    `${R}: steps["initial.issue"].onError: onError must be "fail", "continue", "retry=N" or "jump=<stepId>".`,
    `${R}: steps["continuation.issue"].onError.retry: expected number, got "3".`,
  ]);
});

Deno.test("prompt forms: none, both, or half of c2/c3 are errors", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    delete r.steps["initial.issue"].c3;
    r.steps["continuation.issue"].prompt = { c1: "steps", c2: "continuation", c3: "issue" };
    delete r.steps["complete.issue"].c2;
    delete r.steps["complete.issue"].c3;
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "initial.issue": names its prompt with top-level c2/c3 but has no c3; set both (the prompt is steps/<c2>/<c3>/f_<edition>.md).`,
    `${R}: step "continuation.issue": sets both "prompt" and top-level c2/c3; name the prompt one way: "prompt": { c1, c2, c3 } or top-level c2/c3 (docs/agents.md, "steps_registry.json").`,
    `${R}: step "complete.issue": has no prompt: set "prompt": { "c1", "c2", "c3" } (or { "path" }), or top-level "c2" and "c3".`,
  ]);
});

Deno.test("all problems of a definition are collected into one error, numbered in its message", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    delete r.entryStepMapping;
    r.steps["initial.issue"].transitions.next.target = "nowhere.step";
    r.steps["continuation.issue"].c3 = "missing";
  });
  const error = await loadFails(agent);
  assert.equal(error.problems.length, 3);
  assert.match(error.message, /is invalid \(3 problems\):/);
  assert.match(error.message, /\n {2}1\. \[StepFlow\] No entry step configured/);
  assert.match(error.message, /\n {5}Define either "entryStepMapping\.issue"/);
  assert.match(error.message, /\n {2}2\. steps_registry\.json: step "initial\.issue": transitions/);
  assert.match(
    error.message,
    /\n {2}3\. steps_registry\.json: step "continuation\.issue": prompt file/,
  );
  assert.deepEqual(error.details?.problems, error.problems);
});

Deno.test("warnings: unreachable steps and steps with no path to completion", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    // continuation.issue can only repeat or go on to itself; nothing routes to a new orphan step
    r.steps["continuation.issue"].structuredGate.allowedIntents = ["next", "repeat"];
    delete r.steps["continuation.issue"].transitions.complete;
    r.steps["orphan.issue"] = {
      ...r.steps["continuation.issue"],
      stepId: "orphan.issue",
      transitions: { next: { target: "complete.issue" } },
    };
  });
  const def = await load(agent);
  assert.deepEqual(def.warnings, [
    `${R}: step "orphan.issue" is unreachable from the entry step "initial.issue": no next, fallback, transition or onError jump leads to it. Route to it, or remove it.`,
    `${R}: step "continuation.issue" has no path to completion: no route from it reaches check.onPass { complete: true }, a "complete" intent or a closing step, so a run that enters it can only end by max_iterations, abort or an error.`,
  ]);
});

Deno.test("warnings: a jump intent can reach any flow step; onError jumps make steps reachable", async () => {
  const jumping = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].structuredGate.allowedIntents = ["next", "repeat", "complete", "jump"];
    r.steps["extra.issue"] = copyStep(r, "continuation.issue", "extra.issue");
  });
  assert.deepEqual((await load(jumping)).warnings, []);
  const onError = await copyExample("issue-solver", (r) => {
    r.steps["cleanup.issue"] = copyStep(r, "continuation.issue", "cleanup.issue");
    r.steps["initial.issue"].onError = 'jump="cleanup.issue"';
  });
  const warnings = (await load(onError)).warnings;
  assert.deepEqual(warnings.filter((w) => /unreachable|no path to completion/.test(w)), []);
  // The error route hands nothing off, so the handoff the copied prompt uses may be missing there.
  assert.ok(
    warnings.some((w) => /step "cleanup\.issue": its prompt uses \{handoff\.issue\}/.test(w)),
  );
});

/** A copy of step `from` under id `id`, its self-routes pointing at itself. */
function copyStep(r: Json, from: string, id: string): Json {
  const step = structuredClone(r.steps[from]);
  step.stepId = id;
  step.transitions.repeat = { target: id };
  return step;
}

Deno.test("warnings: transitions that the runner ignores (repeat elsewhere, abort)", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].structuredGate.allowedIntents = [
      "next",
      "repeat",
      "complete",
      "abort",
    ];
    r.steps["initial.issue"].transitions.repeat.target = "continuation.issue";
    r.steps["initial.issue"].transitions.abort = { target: "complete.issue" };
  });
  assert.deepEqual((await load(agent)).warnings, [
    `${R}: step "initial.issue": transitions.repeat.target "continuation.issue" is ignored: repeat always re-runs the step itself. Point it at "initial.issue" or remove it.`,
    `${R}: step "initial.issue": transitions.abort.target "complete.issue" is ignored: abort ends the run. Remove it.`,
  ]);
});

Deno.test("validateFlow works on a parsed registry without touching files (checkFiles: false)", async () => {
  const registry: StepsRegistry = {
    version: "1",
    entryStep: "s_aaaa",
    steps: {
      s_aaaa: {
        prompt: { c1: "steps", c2: "a", c3: "b" },
        check: { prompt: { path: "c.md" }, onPass: { next: "s_bbbb" }, onFail: { retry: true } },
      },
    },
  };
  const result = await validateFlow(
    { dir: join(Deno.cwd(), "does-not-exist"), registry },
    { checkFiles: false },
  );
  assert.deepEqual(result.errors, [
    `${R}: step "s_aaaa": check.onPass.next "s_bbbb" is not a step in ${R}. Fix the id, or add the step.`,
  ]);
  assert.equal(result.entryStepId, undefined, "no agent.json given, so no completionType");
  assert.equal(result.steps.s_aaaa.kind, "check");
});
