/**
 * The gate (what a gate-routed step's output says) and the router (where an intent leads) on plain
 * values: no backend, no events, no store.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { StructuredGate } from "../../src/definition/schema.ts";
import type { FlowStep } from "../../src/definition/types.ts";
import { handoffKey, interpretGate, mapIntent, readPath } from "../../src/flow/gate.ts";
import { flowStep, routeTransition } from "../../src/flow/router.ts";
import { seed004Files, writeAgent } from "./fixtures.ts";

const root = await Deno.makeTempDir({ prefix: "stepflow-gate-router-" });
await writeAgent(root, "issue-solver", seed004Files());
const def = await loadAgentDefinition("issue-solver", { cwd: root });
const initial: FlowStep = flowStep(def, "initial.issue")!; // next, repeat, complete; targetField
const closing: FlowStep = flowStep(def, "complete.issue")!;

const gate: StructuredGate = {
  allowedIntents: ["next", "repeat", "jump", "complete", "abort"],
  intentField: "next_action.action",
  targetField: "next_action.details.target",
  handoffFields: ["analysis.approach", "items[1].name", "meta.__proto__"],
};

Deno.test("mapIntent: the intent table, case and spaces ignored; prototype names are unknown", () => {
  const table: [string, string | undefined][] = [
    ["next", "next"],
    [" Continue ", "next"],
    ["RETRY", "repeat"],
    ["wait", "repeat"],
    ["jump", "jump"],
    ["complete", "complete"],
    ["escalate", "abort"],
    ["ship-it", undefined],
    ["constructor", undefined],
    ["__proto__", undefined],
  ];
  for (const [value, intent] of table) assert.equal(mapIntent(value), intent, value);
});

Deno.test("readPath follows dots and indexes through own keys only; handoffKey is the last segment", () => {
  const value = { a: { b: [{ c: 1 }, { c: 2 }] } };
  assert.equal(readPath(value, "a.b[1].c"), 2);
  assert.equal(readPath(value, "a.b.0.c"), 1);
  assert.equal(readPath(value, "a.missing.c"), undefined);
  assert.equal(readPath(value, "a.constructor"), undefined, "Object's constructor is not a key");
  assert.equal(readPath("text", "length"), undefined, "a string has no fields");
  assert.equal(handoffKey("analysis.approach"), "approach");
  assert.equal(handoffKey("items[1].name"), "name");
  assert.equal(handoffKey("items[2]"), "2");
});

Deno.test("interpretGate reads intent, target and handoff; an unknown intent is kept as such", () => {
  const output = JSON.parse(
    '{"next_action": {"action": "Continue", "details": {"target": "complete.issue"}},' +
      '"analysis": {"approach": "tests first"}, "items": [{"name": "a"}, {"name": "b"}],' +
      '"meta": {"__proto__": {"polluted": true}}}',
  );
  const read = interpretGate(output, gate);
  assert.equal(read.intent, "next");
  assert.equal(read.target, "complete.issue");
  assert.deepEqual(Object.keys(read.handoff), ["approach", "name", "__proto__"]);
  assert.equal(read.handoff.approach, "tests first");
  assert.equal(read.handoff.name, "b");
  assert.deepEqual(Object.getOwnPropertyDescriptor(read.handoff, "__proto__")?.value, {
    polluted: true,
  });
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "no prototype was touched");

  const unknown = interpretGate(
    { next_action: { action: "ship-it", details: { target: "" } } },
    gate,
  );
  assert.deepEqual(unknown, { unknownIntent: "ship-it", handoff: {} }, "an empty target is none");
  assert.deepEqual(interpretGate({ next_action: { action: "  " } }, gate), { handoff: {} });
  assert.deepEqual(interpretGate("not an object", gate), { handoff: {} });
});

Deno.test("routeTransition: repeat, abort, complete and named transitions", () => {
  assert.deepEqual(routeTransition(def, initial, "repeat"), {
    kind: "goto",
    stepId: "initial.issue",
    transition: "repeat",
  });
  assert.deepEqual(routeTransition(def, initial, "abort"), { kind: "abort" });
  assert.deepEqual(routeTransition(def, initial, "next"), {
    kind: "goto",
    stepId: "continuation.issue",
    transition: "next",
  });
  assert.deepEqual(routeTransition(def, initial, "complete"), {
    kind: "goto",
    stepId: "complete.issue",
    transition: "complete",
  }, "complete goes to the closing step the transition names");
  assert.deepEqual(routeTransition(def, closing, "complete"), { kind: "complete" });
});

Deno.test("routeTransition: a jump goes to the model's target, else the default; bad targets are errors", () => {
  assert.deepEqual(routeTransition(def, initial, "jump", "complete.issue"), {
    kind: "goto",
    stepId: "complete.issue",
    transition: "jump",
  });
  const noTarget = routeTransition(def, initial, "jump");
  assert.equal(noTarget.kind, "error");
  assert.match(
    (noTarget as { message: string }).message,
    /intent "jump" but no target at "next_action\.details\.target".*transitions\.jump/,
  );
  const withDefault: FlowStep = {
    ...initial,
    transitions: { ...initial.transitions, jump: { target: "continuation.issue" } },
  };
  assert.deepEqual(routeTransition(def, withDefault, "jump"), {
    kind: "goto",
    stepId: "continuation.issue",
    transition: "jump",
  });
  for (const target of ["nowhere", "constructor", "__proto__"]) {
    const routed = routeTransition(def, initial, "jump", target);
    assert.equal(routed.kind, "error", target);
    assert.match((routed as { message: string }).message, /is not a flow step\. Known steps: /);
  }
  const missing = routeTransition(def, closing, "next");
  assert.equal(missing.kind, "error");
  assert.match((missing as { message: string }).message, /declares no transitions\.next/);
});

Deno.test("flowStep: own registry keys only, never a prototype member", () => {
  assert.equal(flowStep(def, "initial.issue")?.id, "initial.issue");
  for (const id of ["constructor", "toString", "__proto__", "hasOwnProperty", "nowhere"]) {
    assert.equal(flowStep(def, id), undefined, id);
  }
});
