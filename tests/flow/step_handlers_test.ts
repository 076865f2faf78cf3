/**
 * Step handlers on their own: each is a function from the step, the run state and its
 * dependencies to a result, so a kind is tested without the loop (no history, no store). The
 * flows through the real runner are in the other files of this folder.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { AgentDefinition, FlowStep } from "../../src/definition/types.ts";
import { createEventEmitter } from "../../src/events/emitter.ts";
import type { LlmBackend } from "../../src/llm/types.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { PromptResolver } from "../../src/prompt/resolver.ts";
import { OutputSchemaCache } from "../../src/flow/output_validator.ts";
import { flowStep } from "../../src/flow/router.ts";
import { newRunnerState, type RunnerState, stepInfo } from "../../src/flow/run_state.ts";
import type { StepDependencies } from "../../src/flow/step_handler.ts";
import { STEP_HANDLERS } from "../../src/flow/step_handlers.ts";
import { waitFor } from "../../src/flow/run_wait.ts";
import { out, seed001Files, seed004Files, writeAgent } from "./fixtures.ts";

const root = await Deno.makeTempDir({ prefix: "stepflow-handlers-" });
await writeAgent(root, "code-improver", seed001Files());
await writeAgent(root, "issue-solver", seed004Files());
const checkDef = await loadAgentDefinition("code-improver", { cwd: root });
const gateDef = await loadAgentDefinition("issue-solver", { cwd: root });

/** A run state at its first iteration, and dependencies that record what the handler used. */
function harness(def: AgentDefinition, backend: LlmBackend) {
  const state: RunnerState = newRunnerState(
    def,
    { args: { topic: "flaky test" }, cwd: root },
    "r1",
  );
  state.iteration = 1;
  const started: (string | undefined)[] = [];
  const warnings: string[] = [];
  const deps = (step: FlowStep): StepDependencies => ({
    definition: def,
    options: {},
    info: stepInfo(state, step),
    prompts: new PromptResolver({ agentDir: def.dir, basePath: def.basePath }),
    systemPrompts: new PromptResolver({ agentDir: def.dir, basePath: "." }),
    schemas: new OutputSchemaCache(def.dir),
    events: createEventEmitter([]),
    started: (prompt) => Promise.resolve(void started.push(prompt)),
    call: (request) => backend.complete(request),
    reask: () => Promise.resolve(),
    commandContext: () => ({
      commands: def.agent.commands,
      allowRun: false,
      args: state.args,
      cwd: state.cwd,
      agent: def.name,
      stepId: step.id,
    }),
    waitIfPaused: () => Promise.resolve(),
    log: () => Promise.resolve(),
    warn: (message) => void warnings.push(message),
    runChild: () => Promise.reject(new Error("this agent has no agent step")),
    fanOut: () => Promise.reject(new Error("this agent has no fan-out step")),
  });
  return { state, deps, started, warnings };
}

Deno.test("gate-routed handler: outcome, history fields, handoff and answer come back as data", async () => {
  const step = flowStep(gateDef, "initial.issue")!;
  const backend = new ScriptedBackend([
    out("initial.issue", "continue", { analysis: { approach: "tests first" } }),
  ]);
  const h = harness(gateDef, backend);
  const result = await STEP_HANDLERS[step.kind as "gate"](step, h.state, h.deps(step));
  assert.deepEqual(result.outcome, {
    kind: "goto",
    stepId: "continuation.issue",
    transition: "next",
  });
  assert.equal(result.record?.intent, "next");
  assert.match(result.record?.answer?.text ?? "", /"action":"continue"/);
  assert.deepEqual(result.response?.structuredOutput, {
    stepId: "initial.issue",
    next_action: { action: "continue" },
    analysis: { approach: "tests first" },
  });
  assert.equal(h.started.length, 1, "step_start is logged once, with the prompt");
  assert.match(h.started[0] ?? "", /flaky test/);
  assert.deepEqual(h.state.handoff, {}, "the loop stores the handoff, not the handler");
  assert.equal(backend.calls[0]?.outputSchema !== undefined, true);
});

Deno.test("gate-routed handler: a schema that cannot be resolved is a strike, without a call", async () => {
  const step: FlowStep = {
    ...flowStep(gateDef, "initial.issue")!,
    outputSchemaRef: { file: "missing.schema.json", schema: "#/definitions/x" },
  };
  const backend = new ScriptedBackend([]);
  const h = harness(gateDef, backend);
  const first = await STEP_HANDLERS.gate(step, h.state, h.deps(step));
  assert.deepEqual(first.outcome, { kind: "goto", stepId: "initial.issue", transition: "retry" });
  assert.equal(first.failure?.code, "STRUCTURED_OUTPUT_UNAVAILABLE");
  assert.deepEqual(first.failure?.fields, { strike: 1 });
  const second = await STEP_HANDLERS.gate(step, h.state, h.deps(step));
  assert.equal(second.outcome?.kind, "end");
  assert.equal(second.failure?.fields?.strike, 2);
  assert.equal(backend.calls.length, 0);
});

Deno.test("check-gated handler: the verdict routes; a failed check call keeps the step's answer", async () => {
  const step = flowStep(checkDef, "s_a8f3")!;
  const passing = harness(checkDef, new ScriptedBackend(["analysed", '{"result": "ok"}']));
  const passed = await STEP_HANDLERS.check(step, passing.state, passing.deps(step));
  assert.deepEqual(passed.outcome, { kind: "goto", stepId: "s_b2c1", transition: "next" });
  assert.deepEqual(passed.record?.checkResult, { result: "ok", message: "" });
  assert.equal(passed.record?.answer?.text, "analysed");

  const failing = harness(checkDef, new ScriptedBackend(["analysed", { error: "check down" }]));
  const failed = await STEP_HANDLERS.check(step, failing.state, failing.deps(step));
  assert.equal(failed.outcome, undefined);
  assert.match(String(failed.error), /check down/);
  assert.equal(failed.record?.answer?.text, "analysed");
});

Deno.test("a call that comes back waiting (a tool call's permission) is the handler's outcome, never a thrown error", async () => {
  const ask = {
    stepId: "x",
    callId: "c1",
    tool: "Bash",
    args: { command: "make" },
    reason: "asks",
  };
  const waiting = waitFor({ kind: "permission", ask });
  // Check-gated: the step's call answers, the check call waits.
  const checkStep = flowStep(checkDef, "s_a8f3")!;
  const checking = harness(checkDef, new ScriptedBackend(["analysed"]));
  const checkDeps = checking.deps(checkStep);
  let checkCalls = 0;
  const checked = await STEP_HANDLERS.check(checkStep, checking.state, {
    ...checkDeps,
    call: (request) => ++checkCalls === 1 ? checkDeps.call(request) : Promise.resolve(waiting),
  });
  assert.equal(checked.outcome, waiting);
  assert.equal(checked.error, undefined);
  // Gate-routed: the first answer is invalid, and the re-ask waits: no further call, no failure.
  const gateStep = flowStep(gateDef, "initial.issue")!;
  const gating = harness(gateDef, new ScriptedBackend(["not json"]));
  const gateDeps = gating.deps(gateStep);
  const sent: string[] = [];
  const gated = await STEP_HANDLERS.gate(gateStep, gating.state, {
    ...gateDeps,
    call: (request) => {
      sent.push(request.kind);
      return request.kind === "reask" ? Promise.resolve(waiting) : gateDeps.call(request);
    },
  });
  assert.equal(gated.outcome, waiting);
  assert.equal(gated.error, undefined);
  assert.deepEqual(sent, ["step", "reask"]);
});
