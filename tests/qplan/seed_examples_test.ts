/**
 * Every example script of seed 000 (§2, §4, §4.1, §6, §7, §10), verbatim: it parses, validates
 * and runs with the real modules; the event sequence and the final ctx[runId] are checked.
 */
import assert from "node:assert/strict";
import {
  createQPlanRegistry,
  parseScript,
  runScript,
  validateScript,
} from "../../src/qplan/mod.ts";
import { recorder, stepLines, workspace } from "./helpers.ts";

const SEED_2_BASIC = `step "Description" {
    <statements>
}`;

const SEED_2_EXTENDED = `step id="read" desc="Read file" {
    file op="read" path="./a.txt" -> raw
}`;

const SEED_2_ATTRIBUTES = `step id="calc" type="task" desc="Calculation phase" {
    math op="avg" arr=raw -> avg
}`;

const SEED_4 = `step "Full processing" {

    step "Read file" {
        file op="read" path="./a.txt" -> raw
    }

    step "Compute" {
        math op="avg" arr=raw -> avg
    }

}`;

const SEED_4_1 = `step id="pipeline" desc="Root stage" {
    step id="prepare" desc="Data prep" {
        file read path="./input.txt" -> raw
        return data=raw
    }

    step id="aggregate" desc="Aggregate" onError="retry=2" {
        math add a=total b=unknown -> total   # triggers retry policy
        return sum=total
    }

    step id="report" desc="Report" {
        if aggregate.sum > 100 {
            jump to="review"
        }
        return summary="done"
    }

    step id="review" desc="Re-check" onError="jump=\\"cleanup\\"" {
        ...
    }

    step id="cleanup" desc="Finalize" {
        ...
    }

    return prepare=prepare aggregate=aggregate report=report
}`;

const SEED_6 = `step id="read" desc="Read file" {
    file op="read" path="./a.txt" -> raw
    return data=raw count=rawCount
}`;

const SEED_7_CONTINUE = `step id="fetch" desc="Network request" onError="continue" {
    http url="https://..." -> out
}`;

const SEED_7_SEQUENCE = `step id="prepare" desc="Init" {
    ...
}

step id="fetch" desc="Collect data" onError="retry=2" {
    http url="..." -> raw
    math add a=raw b=unknown -> broken    # triggers retry
    return data=raw
}

step id="transform" desc="Extra processing" onError="jump=\\"cleanup\\"" {
    ...
}

step id="cleanup" desc="Finalize" {
    ...
}`;

const SEED_10 = `step "Full processing" {
    step "Read file" { ... }
}`;

const ALL = {
  SEED_2_BASIC,
  SEED_2_EXTENDED,
  SEED_2_ATTRIBUTES,
  SEED_4,
  SEED_4_1,
  SEED_6,
  SEED_7_CONTINUE,
  SEED_7_SEQUENCE,
  SEED_10,
};

const registry = () => createQPlanRegistry({ http: true, print: () => {} });

Deno.test("seed 000: every example parses and validates (errors: none)", () => {
  for (const [name, source] of Object.entries(ALL)) {
    parseScript(source);
    const v = validateScript(source, { registry: registry(), params: ["rawCount"] });
    assert.deepEqual(v.issues.filter((i) => i.severity === "error"), [], name);
    assert.ok(v.ok, name);
  }
});

Deno.test("seed 000 §2 basic form: a description-only step runs (placeholder warned about)", async () => {
  const v = validateScript(SEED_2_BASIC);
  assert.deepEqual(v.issues.map((i) => [i.severity, i.message, i.line]), [
    ["warning", "placeholder '<statements>' does nothing", 2],
  ]);
  const rec = recorder();
  const result = await runScript(SEED_2_BASIC, { events: rec.events, runId: "r" });
  assert.equal(result.status, "completed");
  assert.deepEqual(rec.log, [
    "state:idle->running",
    "plan:start:1",
    "start:step_1",
    "end:step_1",
    "state:running->completed",
    "plan:end:completed",
  ]);
  assert.deepEqual(rec.infos[0], {
    runId: "r",
    stepId: "step_1",
    desc: "Description",
    order: 1,
    path: ["Description"],
    depth: 0,
    errorPolicy: { kind: "fail" },
  });
  assert.deepEqual(result.results, {});
});

Deno.test("seed 000 §2 extended form: file read stores the outputs object under the step id", async () => {
  const root = await workspace({ "a.txt": "hello" });
  const rec = recorder();
  const result = await runScript(SEED_2_EXTENDED, { events: rec.events, workspaceRoot: root });
  assert.equal(result.status, "completed");
  assert.deepEqual(stepLines(rec.log), ["start:read", 'end:read {"raw":"hello"}']);
  assert.deepEqual(result.results, { read: { raw: "hello" } });
  assert.deepEqual(result.vars, { raw: "hello" });
});

Deno.test("seed 000 §2 attributes: type and desc reach stepInfo; arr=raw reads the param", async () => {
  const rec = recorder();
  const result = await runScript(SEED_2_ATTRIBUTES, {
    events: rec.events,
    params: { raw: "1 2 3" },
  });
  assert.equal(result.status, "completed");
  assert.equal(rec.infos[0].type, "task");
  assert.equal(rec.infos[0].desc, "Calculation phase");
  assert.deepEqual(result.results, { calc: { avg: 2 } });

  // Without the param, "raw" is passed as text and math names it.
  const bare = await runScript(SEED_2_ATTRIBUTES);
  assert.equal(bare.status, "error");
  assert.match(bare.error!.message, /math avg: arr\[0\] must be a number, got "raw"/);
  assert.equal(bare.error!.line, 2);
  assert.equal(bare.error!.stepId, "calc");
});

Deno.test("seed 000 §4: sub-steps get paths from their descriptions; results reach the parent", async () => {
  const root = await workspace({ "a.txt": "4 6" });
  const rec = recorder();
  const result = await runScript(SEED_4, { events: rec.events, workspaceRoot: root });
  assert.equal(result.status, "completed");
  assert.deepEqual(stepLines(rec.log), [
    "start:step_1",
    "start:step_2",
    'end:step_2 {"raw":"4 6"}',
    "start:step_3",
    'end:step_3 {"avg":5}',
    // Only nested steps: the last action's raw value (QPLAN.md "Execution").
    "end:step_1 5",
  ]);
  assert.deepEqual(rec.infos.map((i) => [i.stepId, i.order, i.path, i.depth, i.parentStepId]), [
    ["step_1", 1, ["Full processing"], 0, undefined],
    ["step_2", 2, ["Full processing", "Read file"], 1, "step_1"],
    ["step_3", 3, ["Full processing", "Compute"], 1, "step_1"],
  ]);
  assert.deepEqual(result.results, {
    step_2: { raw: "4 6" },
    step_3: { avg: 5 },
    step_1: 5,
  });
});

Deno.test("seed 000 §4.1: aggregate retries twice (3 attempts), then the pipeline fails", async () => {
  const root = await workspace({ "input.txt": "42" });
  const rec = recorder();
  const result = await runScript(SEED_4_1, { events: rec.events, workspaceRoot: root });
  assert.equal(result.status, "error");
  assert.deepEqual(rec.log, [
    "state:idle->running",
    "plan:start:6",
    "start:pipeline",
    "start:prepare",
    'end:prepare {"data":"42"}',
    "start:aggregate",
    "error:aggregate",
    "retry:aggregate:1",
    "start:aggregate",
    "error:aggregate",
    "retry:aggregate:2",
    "start:aggregate",
    "error:aggregate",
    "error:pipeline",
    "state:running->failed",
    "plan:end:error",
  ]);
  assert.deepEqual(result.results, { prepare: { data: "42" } });
  assert.equal(result.error?.stepId, "aggregate");
  assert.equal(result.error?.line, 8);
  assert.match(result.error!.message, /math add: a must be a number, got "total"/);
  assert.deepEqual(result.failures.map((f) => [f.stepId, f.attempt, f.handledBy]), [
    ["aggregate", 1, "retry"],
    ["aggregate", 2, "retry"],
    ["aggregate", 3, "fail"],
    ["pipeline", 1, "fail"],
  ]);
  // The bare words are reported as warnings, not errors.
  assert.deepEqual(
    result.issues.filter((i) => i.code === "bare-word").map((i) => i.message),
    [
      `'total' is not a variable here; a=total passes the text "total"`,
      `'unknown' is not a variable here; b=unknown passes the text "unknown"`,
    ],
  );
});

Deno.test("seed 000 §4.1 with defined totals: report jumps to review, review runs, cleanup follows", async () => {
  const root = await workspace({ "input.txt": "42" });
  const rec = recorder();
  const result = await runScript(SEED_4_1, {
    events: rec.events,
    workspaceRoot: root,
    params: { total: 100, unknown: 5 },
  });
  assert.equal(result.status, "completed");
  assert.deepEqual(stepLines(rec.log), [
    "start:pipeline",
    "start:prepare",
    'end:prepare {"data":"42"}',
    "start:aggregate",
    'end:aggregate {"sum":105}',
    "start:report",
    "jump:report->review",
    "start:review",
    "end:review",
    "start:cleanup",
    "end:cleanup",
    'end:pipeline {"prepare":{"data":"42"},"aggregate":{"sum":105}}',
  ]);
  assert.deepEqual(result.results, {
    prepare: { data: "42" },
    aggregate: { sum: 105 },
    pipeline: { prepare: { data: "42" }, aggregate: { sum: 105 }, report: undefined },
  });
});

Deno.test("seed 000 §6: return shapes the result; ctx[runId][read] holds it", async () => {
  const root = await workspace({ "a.txt": "abc" });
  const rec = recorder();
  const result = await runScript(SEED_6, {
    events: rec.events,
    workspaceRoot: root,
    params: { rawCount: 3 },
    runId: "run-6",
  });
  assert.equal(result.status, "completed");
  assert.equal(result.runId, "run-6");
  assert.deepEqual(stepLines(rec.log), ["start:read", 'end:read {"data":"abc","count":3}']);
  assert.deepEqual(result.results, { read: { data: "abc", count: 3 } });

  // Without the param, the validator names the variable and the step.
  const v = validateScript(SEED_6);
  assert.deepEqual(v.issues.map((i) => [i.message, i.line]), [
    ["variable 'rawCount' (step 'read') is not defined", 3],
  ]);
});

Deno.test("seed 000 §7: onError=continue records the error and the plan goes on", async () => {
  const rec = recorder();
  const result = await runScript(SEED_7_CONTINUE, { events: rec.events, registry: registry() });
  assert.equal(result.status, "completed");
  assert.deepEqual(stepLines(rec.log), ["start:fetch", "error:fetch", "end:fetch"]);
  assert.deepEqual(result.results, {});
  assert.equal(result.vars.out, undefined);
  assert.equal(result.failures.length, 1);
  assert.equal(result.failures[0].handledBy, "continue");
  assert.match(result.failures[0].message, /has no valid host name/);
});

Deno.test("seed 000 §7 sequence: fetch retries twice then fails; later steps do not run", async () => {
  const rec = recorder();
  const result = await runScript(SEED_7_SEQUENCE, { events: rec.events, registry: registry() });
  assert.equal(result.status, "error");
  assert.deepEqual(stepLines(rec.log), [
    "start:prepare",
    "end:prepare",
    "start:fetch",
    "error:fetch",
    "retry:fetch:1",
    "start:fetch",
    "error:fetch",
    "retry:fetch:2",
    "start:fetch",
    "error:fetch",
  ]);
  assert.match(result.error!.message, /Module 'http' failed: http: "\.\.\." is not a valid URL/);
  assert.deepEqual(result.results, {});
});

Deno.test("seed 000 §10: paths of nested description-only steps", async () => {
  const rec = recorder();
  const result = await runScript(SEED_10, { events: rec.events });
  assert.equal(result.status, "completed");
  assert.deepEqual(rec.infos.map((i) => i.path), [
    ["Full processing"],
    ["Full processing", "Read file"],
  ]);
});
