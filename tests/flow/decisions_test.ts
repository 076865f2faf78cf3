/**
 * The runner's decisions on plain values: no backend, no events, no store. Each rule of
 * STEPFLOW.md §5–§6 in, an outcome out.
 */
import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { ErrorPolicy, FlowStep } from "../../src/definition/types.ts";
import {
  type CheckCounters,
  checkOutcome,
  completionOutcome,
  failureOutcome,
  gateOutcome,
  maxIterationsError,
  type Outcome,
  schemaStrikeOutcome,
  stepFailureMessage,
  validationOutcome,
} from "../../src/flow/decisions.ts";
import { flowStep } from "../../src/flow/router.ts";
import type { ValidatorRun } from "../../src/flow/validators.ts";
import { out as scripted, seed001Files, seed004Files, writeAgent } from "./fixtures.ts";

const root = await Deno.makeTempDir({ prefix: "stepflow-decisions-" });
await writeAgent(root, "code-improver", seed001Files());
await writeAgent(root, "issue-solver", seed004Files());
const checkDef = await loadAgentDefinition("code-improver", { cwd: root });
const gateDef = await loadAgentDefinition("issue-solver", { cwd: root });
const step = (def: typeof checkDef, id: string): FlowStep => flowStep(def, id)!;
const analyze = step(checkDef, "s_a8f3"); // onPass next s_b2c1, onFail retry maxRetries 2
const implement = step(checkDef, "s_b2c1"); // iterations.max 5, onFail fallback s_a8f3
const review = step(checkDef, "s_c9d4"); // onPass complete
const initial = step(gateDef, "initial.issue");
const closing = step(gateDef, "complete.issue");
/** A seed 004 step output (the fixture builds it as a scripted entry). */
const out = (...args: Parameters<typeof scripted>) => scripted(...args).output;
const counters = (c: Partial<CheckCounters> = {}): CheckCounters => ({
  checkRuns: 1,
  checkRetries: 0,
  checkFailures: 0,
  ...c,
});
const ok = { result: "ok" as const, message: "fine" };
const ng = { result: "ng" as const, message: "still red" };

Deno.test("check OK follows onPass: the next step, or completion", () => {
  assert.deepEqual(checkOutcome(analyze, counters(), ok).outcome, {
    kind: "goto",
    stepId: "s_b2c1",
    transition: "next",
  });
  assert.deepEqual(checkOutcome(review, counters(), ok).outcome, {
    kind: "end",
    reason: "completed",
    transition: "complete",
  });
});

Deno.test("check NG repeats within iterations.max, then takes onFail's fallback", () => {
  const input = counters({ checkRuns: 2 });
  const below = checkOutcome(implement, input, ng);
  assert.deepEqual(below.outcome, { kind: "goto", stepId: "s_b2c1", transition: "repeat" });
  assert.equal(below.counters.checkFailures, 1);
  assert.equal(input.checkFailures, 0, "the given counters are not changed");
  const atMax = checkOutcome(implement, counters({ checkRuns: 5 }), ng);
  assert.deepEqual(atMax.outcome, { kind: "goto", stepId: "s_a8f3", transition: "fallback" });
});

Deno.test("check NG retries within onFail.maxRetries, then ends retries_exhausted", () => {
  const retried = checkOutcome(analyze, counters({ checkRetries: 1, checkFailures: 1 }), ng);
  assert.deepEqual(retried.outcome, { kind: "goto", stepId: "s_a8f3", transition: "retry" });
  assert.deepEqual(retried.counters, { checkRuns: 0, checkRetries: 2, checkFailures: 2 });
  const exhausted = checkOutcome(analyze, counters({ checkRetries: 2, checkFailures: 2 }), ng);
  assert.equal(exhausted.outcome.kind, "end");
  assert.deepEqual(exhausted.outcome.kind === "end" && exhausted.outcome.error, {
    code: "RETRIES_EXHAUSTED",
    message:
      '[StepFlow] Step "s_a8f3" failed 3 checks over 3 attempts (onFail.maxRetries 2, iterations.max 1). Last check: still red',
    stepId: "s_a8f3",
  });
});

Deno.test("gate: the intent routes through transitions and the handoff is read", () => {
  const output = out("initial.issue", "continue", { issue: "#42" });
  const decision = gateOutcome(gateDef, initial, output, 1);
  assert.deepEqual(decision.outcome, {
    kind: "goto",
    stepId: "continuation.issue",
    transition: "next",
  });
  assert.equal(decision.intent, "next");
  assert.deepEqual(decision.handoff, { issue: "#42" });
  assert.equal(decision.warning, undefined);
  const complete = gateOutcome(gateDef, initial, out("initial.issue", "complete"), 3);
  assert.deepEqual(complete.outcome, {
    kind: "goto",
    stepId: "complete.issue",
    transition: "complete",
  });
});

Deno.test("gate: a disallowed intent takes fallbackIntent with a warning", () => {
  const decision = gateOutcome(gateDef, initial, out("initial.issue", "escalate"), 2);
  assert.equal(decision.intent, "next");
  assert.match(decision.warning ?? "", /produced intent "abort" \(not allowed\)/);
  assert.equal(decision.outcome.kind === "goto" && decision.outcome.stepId, "continuation.issue");
});

Deno.test("gate: no intent uses fallbackIntent on iteration 1 only (R4 from iteration 2)", () => {
  const first = gateOutcome(gateDef, initial, out("initial.issue"), 1);
  assert.equal(first.intent, "next");
  const later = gateOutcome(gateDef, initial, out("initial.issue"), 2);
  assert.equal(later.intent, undefined);
  assert.equal(later.outcome.kind === "end" && later.outcome.reason, "step_routing_failed");
  assert.match(
    later.outcome.kind === "end" ? later.outcome.error!.message : "",
    /^\[StepFlow\] No intent produced for iteration 2 on step "initial.issue"\./,
  );
});

Deno.test("gate: abort ends the run aborted; a closing step completes with its output", () => {
  const gate = { ...initial.gate!, allowedIntents: [...initial.gate!.allowedIntents, "abort"] };
  const aborting = { ...initial, gate } as FlowStep;
  const aborted = gateOutcome(gateDef, aborting, out("initial.issue", "escalate"), 2).outcome;
  assert.equal(aborted.kind === "end" && aborted.error?.code, "ABORT_INTENT");
  const report = { stepId: "complete.issue", summary: "done" };
  assert.deepEqual(gateOutcome(gateDef, closing, report, 4).outcome, {
    kind: "end",
    reason: "completed",
    transition: "complete",
    output: report,
  });
});

Deno.test("completion conditions end only a run that would go on; text is read lazily", () => {
  const goOn: Outcome = { kind: "goto", stepId: "x", transition: "next" };
  const count = [{ type: "count:iteration" as const, maxIterations: 3 }];
  const noText = () => assert.fail("the answer text is not needed for count:iteration");
  assert.deepEqual(completionOutcome(count, goOn, 2, noText), { outcome: goOn });
  assert.deepEqual(completionOutcome(count, goOn, 3, noText), {
    outcome: { kind: "end", reason: "completed", transition: "complete" },
    met: "count:iteration reached 3 iteration(s)",
  });
  const ended: Outcome = { kind: "end", reason: "aborted", transition: "abort" };
  assert.deepEqual(completionOutcome(count, ended, 9, noText), { outcome: ended });
  const keyword = [{ type: "detect:keyword" as const, keyword: "DONE" }];
  assert.equal(
    completionOutcome(keyword, goOn, 1, () => "all DONE").met,
    'detect:keyword found "DONE"',
  );
});

Deno.test("two-strike rule: the first strike retries the step, the second ends the run", () => {
  assert.deepEqual(schemaStrikeOutcome(initial, 1, "gone"), {
    kind: "goto",
    stepId: "initial.issue",
    transition: "retry",
  });
  const second = schemaStrikeOutcome(initial, 2, "gone");
  assert.equal(second.kind === "end" && second.reason, "schema_resolution_failed");
  assert.equal(
    second.kind === "end" && second.error?.message,
    '[StepFlow] Schema resolution failed twice in a row on step "initial.issue": pointer #/definitions/initial.issue in schemas/issue.schema.json. gone',
  );
});

Deno.test("onError: fail, continue, retry=N and jump decide the outcome", () => {
  const withPolicy = (s: FlowStep, onError: ErrorPolicy) => ({ ...s, onError }) as FlowStep;
  const failure = { code: "BACKEND_ERROR", message: "connection refused" };
  assert.deepEqual(failureOutcome(initial, failure, 0), {
    kind: "end",
    reason: "step_failed",
    transition: "fail",
    error: {
      code: "BACKEND_ERROR",
      message: 'Step "initial.issue" failed: connection refused',
      stepId: "initial.issue",
    },
  });
  const cont = withPolicy(initial, { kind: "continue" });
  assert.deepEqual(failureOutcome(cont, failure, 0), {
    kind: "goto",
    stepId: "continuation.issue",
    transition: "continue",
  });
  assert.deepEqual(failureOutcome(withPolicy(review, { kind: "continue" }), failure, 0), {
    kind: "end",
    reason: "completed",
    transition: "continue",
  });
  const retry = withPolicy(initial, { kind: "retry", count: 2 });
  assert.deepEqual(failureOutcome(retry, failure, 1), {
    kind: "goto",
    stepId: "initial.issue",
    transition: "retry",
  });
  const gaveUp = failureOutcome(retry, failure, 2);
  assert.match(gaveUp.kind === "end" ? gaveUp.error!.message : "", / \(gave up after 2 retries\)$/);
  const jump = withPolicy(initial, { kind: "jump", target: "complete.issue" });
  assert.deepEqual(failureOutcome(jump, failure, 0), {
    kind: "goto",
    stepId: "complete.issue",
    transition: "jump",
  });
  // A configuration error is never retried.
  const missing = { code: "PROMPT_VARIABLES_MISSING", message: "missing {uv-topic}" };
  assert.equal(failureOutcome(retry, missing, 0).kind, "end");
});

Deno.test("validation: a failure retries while retries are left, then fails the step", () => {
  const run: ValidatorRun = {
    command: "test",
    exitCode: 1,
    ok: false,
    reason: "exit 1",
    pattern: "tests",
    output: "x".repeat(30_000),
    startedAt: new Date(0).toISOString(),
    durationMs: 5,
  };
  const retry = validationOutcome(initial, run, 0, 1);
  assert.equal(retry.kind, "retry");
  if (retry.kind === "retry") {
    assert.equal(retry.retry.output.length, 20_000);
    assert.equal(retry.retry.pattern, "tests");
    assert.equal(
      retry.message,
      'Step "initial.issue": validator "test" failed (exit 1, pattern tests)',
    );
  }
  const fail = validationOutcome(initial, run, 1, 1);
  assert.equal(fail.kind, "fail");
  assert.match(fail.message, /after 1 retry \(validation\.maxRetries 1\)\. Last output:\nx{2000}$/);
});

Deno.test("messages name the step once and say how to go on", () => {
  assert.equal(stepFailureMessage("a", 'Step "a" timed out'), 'Step "a" timed out');
  assert.equal(stepFailureMessage("a", "boom"), 'Step "a" failed: boom');
  assert.match(maxIterationsError(7, "a").message, /maxTotalIterations \(7\) at step "a"\. Raise/);
});
