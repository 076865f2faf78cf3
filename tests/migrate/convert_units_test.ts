/**
 * Direct tests of each climpt converter over a context built from inline source texts: agent.json,
 * parameters, completion (verdict), runner sections, step ids, registry fields, prompts, each step
 * part (fields, command, prompt, schema, gate, transitions), validators and schemas. The whole
 * output is pinned by `convert_golden_test.ts`; these say what each converter owns.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  convertAgentFields,
  convertFlow,
  convertParameters,
  convertRunnerSections,
  convertVerdict,
  declareRuntimeParameters,
} from "../../src/migrate/convert_agent.ts";
import {
  type ConvertContext,
  newConvertContext,
  stepScope,
} from "../../src/migrate/convert_context.ts";
import {
  convertRegistryFields,
  copyPrompts,
  mapStepIds,
  reportUnusedValidation,
  stepflowStepId,
} from "../../src/migrate/convert_registry.ts";
import {
  convertOtherFiles,
  convertSchemas,
  GENERATED_SCHEMA_FILE,
} from "../../src/migrate/convert_schemas.ts";
import {
  checkVariables,
  convertCommandStep,
  convertGate,
  convertOutputSchema,
  convertStep,
  convertStepPrompt,
  convertTransitions,
  noteStepFields,
  promptPathOf,
} from "../../src/migrate/convert_step.ts";
import { convertValidation, splitCommand } from "../../src/migrate/convert_validation.ts";
import type { NoteKind } from "../../src/migrate/notes.ts";

const SOURCE = { name: "demo", dir: "/repo/.agent/demo", base: "/repo" };

function context(agent: unknown, registry: unknown = { steps: {} }): ConvertContext {
  return newConvertContext(
    SOURCE,
    JSON.stringify(agent, null, 2),
    JSON.stringify(registry, null, 2),
  );
}

/** `kind field: detail` of every note, in order. */
function notesOf(ctx: ConvertContext, kind?: NoteKind): string[] {
  return ctx.notes.notes.filter((n) => kind === undefined || n.kind === kind)
    .map((n) => `${n.kind} ${n.field}: ${n.detail}`);
}

function hasNote(ctx: ConvertContext, kind: NoteKind, field: string, part = ""): boolean {
  return ctx.notes.notes.some((n) =>
    n.kind === kind && n.field === field && n.detail.includes(part)
  );
}

Deno.test("newConvertContext: a name that is not plain falls back to the folder's; bad JSON names the file", () => {
  assert.equal(context({ name: "ok-name" }).name, "ok-name");
  assert.equal(context({ name: "../escape" }).name, "demo");
  assert.equal(context({}).c1, "steps");
  assert.equal(context({}, { version: "2.0.0", steps: {} }).registry.version, "2.0.0");
  assert.throws(
    () => newConvertContext(SOURCE, "{", "{}"),
    (e: Error & { code?: string }) =>
      e.code === "MIGRATE_SOURCE_INVALID" && e.message.includes(".agent/demo/agent.json"),
  );
});

Deno.test("convertAgentFields: keeps description and version, drops unknown keys, reports a bad name", () => {
  const ctx = context({ name: "a b", description: "d", version: "1", extra: 1 });
  convertAgentFields(ctx);
  assert.deepEqual(ctx.agent, { name: "demo", description: "d", version: "1" });
  assert.ok(hasNote(ctx, "dropped", "extra"));
  assert.ok(hasNote(ctx, "defect", "name", 'the folder name "demo" is used'));
  assert.equal(ctx.notes.notes.find((n) => n.field === "extra")?.where, ".agent/demo/agent.json:5");
});

Deno.test("convertParameters: types, enums from validation, a reserved flag renamed, smoke values", () => {
  const ctx = context({
    parameters: {
      count: { type: "number", required: true, validation: { enum: ["1", "2"] } },
      agent: { type: "string", cli: "--agent" },
      when: { type: "date" },
      odd: 3,
    },
  });
  convertParameters(ctx);
  assert.deepEqual(ctx.parameters.count, { type: "number", required: true, enum: [1, 2] });
  assert.deepEqual(ctx.parameters.agent, { type: "string", flag: "agent-param" });
  assert.deepEqual(ctx.parameters.when, { type: "string" });
  assert.equal(ctx.parameters.odd, undefined);
  assert.deepEqual(ctx.smokeArgs, ["--count", "1"]);
  assert.ok(hasNote(ctx, "person", "parameters.agent.cli", "--agent-param"));
  assert.ok(hasNote(ctx, "person", "parameters.when.type"));
  assert.ok(hasNote(ctx, "defect", "parameters.odd"));
});

Deno.test("convertFlow: system prompt and fallback folder; other flow keys dropped", () => {
  const ctx = context({
    runner: {
      flow: { systemPromptPath: "prompts/system.md", prompts: { fallbackDir: "fb" }, x: 1 },
    },
  });
  convertFlow(ctx);
  assert.equal(ctx.systemPromptPath, "prompts/system.md");
  assert.deepEqual(ctx.behavior, { systemPromptPath: "prompts/system.md" });
  assert.deepEqual(ctx.agent.prompts, { fallbackDir: "fb" });
  assert.ok(hasNote(ctx, "dropped", "runner.flow.x"));
});

Deno.test("convertVerdict: each verdict type becomes a completion condition or a limit", () => {
  const count = context({
    runner: { verdict: { type: "count:iteration", config: { maxIterations: 3 } } },
  });
  convertVerdict(count);
  assert.deepEqual(count.completion, [{ type: "count:iteration", maxIterations: 3 }]);
  assert.deepEqual(count.limits, {});
  assert.equal(count.verdictType, "count:iteration");

  const keyword = context({ runner: { verdict: { type: "detect:keyword", config: {} } } });
  convertVerdict(keyword);
  assert.deepEqual(keyword.completion, [{ type: "detect:keyword", keyword: "TASK_COMPLETE" }]);

  const poll = context({
    runner: { verdict: { type: "poll:state", config: { maxIterations: 9, other: 1 } } },
  });
  convertVerdict(poll);
  assert.deepEqual(poll.completion, []);
  assert.deepEqual(poll.limits, { maxTotalIterations: 9 });
  assert.ok(hasNote(poll, "person", "runner.verdict (poll:state)"));
  assert.ok(hasNote(poll, "dropped", "runner.verdict.config.other"));

  const none = context({});
  convertVerdict(none);
  assert.equal(none.behavior.completionType, "default");
  assert.ok(hasNote(none, "person", "runner.verdict", '"default" has no stepflow equivalent'));
});

Deno.test("convertRunnerSections: boundaries, logging and the sections stepflow lacks", () => {
  const ctx = context({
    runner: {
      boundaries: { allowedTools: ["Read"], sandbox: true },
      logging: { directory: "logs", format: "text" },
      execution: {},
      other: {},
    },
  });
  convertRunnerSections(ctx);
  assert.deepEqual(ctx.behavior, { allowedTools: ["Read"] });
  assert.deepEqual(ctx.agent.logging, { directory: "logs" });
  assert.deepEqual(notesOf(ctx).map((n) => n.split(":")[0]), [
    "mapped runner.boundaries.allowedTools",
    "person runner.boundaries.sandbox",
    "person runner.execution",
    "dropped runner.logging.format",
    "mapped runner.logging",
    "dropped runner.other",
  ]);
});

Deno.test("stepflowStepId and mapStepIds: closures become closing steps; a clash keeps the climpt id", () => {
  assert.equal(stepflowStepId("closure.done", "closure"), "complete.done");
  assert.equal(stepflowStepId("plan", "work"), "plan");
  assert.equal(stepflowStepId("bad id", "work"), "work.bad id");
  assert.equal(stepflowStepId("bad id", "Odd"), "step.bad id");
  const ctx = context({}, {
    steps: { done: { stepKind: "closure" }, "closure.done": { stepKind: "closure" } },
  });
  mapStepIds(ctx);
  assert.deepEqual([...ctx.stepIds], [["done", "complete.done"], ["closure.done", "closure.done"]]);
  assert.ok(hasNote(ctx, "person", "steps.closure.done", "is taken"));
  assert.ok(hasNote(ctx, "mapped", "step ids", "done → complete.done"));
});

Deno.test("convertRegistryFields: entry steps renamed, custom layouts and agentId checked", () => {
  const ctx = context({ name: "demo" }, {
    agentId: "other",
    entryStepMapping: { "count:iteration": "done" },
    pathTemplate: "{c1}/{c2}.md",
    steps: { done: { stepKind: "closure" } },
  });
  ctx.verdictType = "detect:keyword";
  mapStepIds(ctx);
  convertRegistryFields(ctx);
  assert.deepEqual(ctx.registry.entryStepMapping, { "count:iteration": "complete.done" });
  assert.ok(hasNote(ctx, "defect", "agentId", '"other" differs'));
  assert.ok(hasNote(ctx, "person", "pathTemplate", "custom layout"));
  assert.ok(hasNote(ctx, "defect", "entryStepMapping", '"detect:keyword"'));
});

Deno.test("copyPrompts: .md files get the intent renames, other files are copied as they are", async () => {
  const base = await Deno.makeTempDir({ prefix: "stepflow-convert-" });
  try {
    const dir = join(base, ".agent", "demo");
    await Deno.mkdir(join(dir, "prompts", "steps"), { recursive: true });
    await Deno.writeTextFile(join(dir, "prompts", "steps", "a.md"), 'Answer "closing".\n');
    await Deno.writeTextFile(join(dir, "prompts", "steps", "b.txt"), "closing\n");
    const ctx = newConvertContext({ name: "demo", dir, base }, '{"runner":{}}', "{}");
    ctx.systemPromptPath = "prompts/none.md";
    await copyPrompts(ctx);
    assert.equal(ctx.files.get("prompts/steps/a.md"), 'Answer "complete".\n');
    assert.equal(ctx.files.get("prompts/steps/b.txt"), "closing\n");
    assert.deepEqual([...ctx.promptTexts.keys()], ["prompts/steps/a.md"]);
    assert.ok(hasNote(ctx, "mapped", "prompts/steps/a.md", "line 1 "));
    assert.ok(hasNote(ctx, "defect", "runner.flow.systemPromptPath"));
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});

/** A context whose registry holds `steps`, ids mapped, with `prompts` as converted prompt texts. */
function stepContext(
  steps: Record<string, unknown>,
  options: { c1?: string; prompts?: Record<string, string>; registry?: object; agent?: object } =
    {},
): ConvertContext {
  const ctx = context(options.agent ?? {}, { c1: options.c1, ...options.registry, steps });
  convertParameters(ctx);
  mapStepIds(ctx);
  for (const [path, text] of Object.entries(options.prompts ?? {})) {
    ctx.files.set(path, text);
    ctx.promptTexts.set(path, text);
  }
  return ctx;
}

Deno.test("noteStepFields: keeps name and description; entry conditions need a person", () => {
  const s = { stepId: "other", name: "N", description: "D", priority: 1, stepKind: "x", z: 1 };
  const ctx = stepContext({ plan: s });
  const st = stepScope(ctx, "plan", s);
  noteStepFields(ctx, st);
  assert.deepEqual(st.out, { stepId: "plan", name: "N", description: "D" });
  assert.deepEqual(notesOf(ctx).map((n) => n.split(":")[0]), [
    "defect steps.plan.stepId",
    "person steps.plan.priority",
    "person steps.plan.stepKind",
    "dropped steps.plan.z",
  ]);
});

Deno.test("convertCommandStep: a subprocess closure becomes a command with {uv-*} arguments", () => {
  const s = {
    stepKind: "work",
    runner: { command: "gh", args: ["issue", "${context.issue}"], timeout: 9 },
  };
  const ctx = stepContext({ ship: s });
  const st = stepScope(ctx, "ship", s);
  convertCommandStep(ctx, st, s.runner);
  assert.deepEqual(st.out, { stepId: "ship", kind: "command", command: "ship" });
  assert.deepEqual(ctx.commands, { ship: { argv: ["gh", "issue", "{uv-issue}"], timeoutMs: 9 } });
  assert.equal(ctx.needsAllowRun, true);
  assert.ok(hasNote(ctx, "defect", "steps.ship.runner.args", 'context "issue"'));
});

Deno.test("convertStepPrompt and promptPathOf: the C3L reference, a missing file written as a stub", () => {
  assert.equal(
    promptPathOf({ c1: "s", c2: "a", c3: "b", edition: "e", adaptation: "x" }),
    "prompts/s/a/b/f_e_x.md",
  );
  const s = { c2: "work", c3: "plan", edition: "v2" };
  const ctx = stepContext({ plan: s }, { c1: "custom" });
  const st = stepScope(ctx, "plan", s);
  convertStepPrompt(ctx, st);
  assert.deepEqual(st.out.prompt, { c1: "custom", c2: "work", c3: "plan", edition: "v2" });
  assert.match(ctx.files.get("prompts/custom/work/plan/f_v2.md")!, /MIGRATION/);
  assert.ok(hasNote(ctx, "defect", "steps.plan.c2/c3", "does not exist"));
});

Deno.test("checkVariables: climpt's run-time variables and undeclared ones become runtime variables", () => {
  const ctx = stepContext({}, {
    agent: { parameters: { topic: { type: "string" } } },
    prompts: { "p.md": "{uv-topic} {uv-iteration} {uv-other} {input_text}" },
  });
  checkVariables(ctx, "plan", "p.md", ["other"], "where");
  assert.deepEqual([...ctx.runtimeVariables], ["iteration", "other"]);
  assert.ok(hasNote(ctx, "defect", "steps.plan", "listed in uvVariables"));
  assert.ok(hasNote(ctx, "person", "steps.plan", "{input_text}"));
  declareRuntimeParameters(ctx);
  assert.deepEqual(Object.keys(ctx.parameters), ["topic", "iteration", "other"]);
  assert.deepEqual(ctx.smokeArgs, ["--iteration", "smoke", "--other", "smoke"]);
});

Deno.test("convertOutputSchema: a named schema is renamed to the step; a gate step without one gets a generated schema", () => {
  const named = { outputSchemaRef: { file: "a.schema.json", schema: "plan" } };
  const gated = { structuredGate: {} };
  const ctx = stepContext({ plan: named, decide: gated });
  for (const [id, s] of Object.entries({ plan: named, decide: gated })) {
    const st = stepScope(ctx, id, s);
    convertOutputSchema(ctx, st);
    assert.deepEqual(st.out.outputSchemaRef?.schema, `#/definitions/${id}`);
  }
  assert.deepEqual([...ctx.schemaUses], [
    ["a.schema.json", [{ source: "plan", stepId: "plan" }]],
    [GENERATED_SCHEMA_FILE, [{ source: "generated:decide", stepId: "decide" }]],
  ]);
});

Deno.test("convertGate: intents renamed, repeat dropped on a closing step, a lost fallback reported", () => {
  const s = {
    stepKind: "closure",
    structuredGate: { allowedIntents: ["closing", "handoff", "repeat"], fallbackIntent: "repeat" },
  };
  const ctx = stepContext({ done: s });
  const st = stepScope(ctx, "done", s);
  convertGate(ctx, st);
  assert.deepEqual(st.out.structuredGate, { allowedIntents: ["complete"] });
  assert.ok(hasNote(ctx, "dropped", "steps.done.structuredGate.fallbackIntent"));
});

Deno.test("convertTransitions: renamed intents, unknown targets, repeat elsewhere, two intents one name", () => {
  const steps = {
    plan: {
      stepKind: "work",
      transitions: {
        next: { target: "work" },
        repeat: { target: "work" },
        closing: { target: "done" },
        handoff: { target: "done2" },
        jump: { target: "nowhere" },
      },
    },
    work: { stepKind: "work" },
    done: { stepKind: "closure" },
    done2: { stepKind: "closure" },
  };
  const ctx = stepContext(steps);
  const st = stepScope(ctx, "plan", steps.plan);
  convertTransitions(ctx, st);
  assert.deepEqual(st.out.transitions, {
    next: { target: "work" },
    complete: { target: "complete.done" },
  });
  assert.ok(hasNote(ctx, "person", "steps.plan.transitions.repeat", "always re-runs"));
  assert.ok(hasNote(ctx, "person", "steps.plan.transitions.handoff", "kept the first"));
  assert.ok(hasNote(ctx, "defect", "steps.plan.transitions.jump", "is not a step"));
});

Deno.test("convertStep: a work step that cannot route is a defect; a section step stops after its prompt", () => {
  const steps = { lone: { stepKind: "work" }, "section.a": { stepKind: "work" } };
  const ctx = stepContext(steps);
  convertStep(ctx, stepScope(ctx, "lone", steps.lone));
  assert.ok(hasNote(ctx, "defect", "steps.lone", "cannot route"));
  assert.ok(hasNote(ctx, "defect", "steps.lone", "names no prompt"));
  const before = ctx.notes.notes.length;
  convertStep(ctx, stepScope(ctx, "section.a", steps["section.a"]));
  assert.equal(ctx.notes.notes.length, before);
});

Deno.test("splitCommand and convertValidation: validators become commands with retry prompts", () => {
  assert.deepEqual(splitCommand("deno lint"), { argv: ["deno", "lint"], shell: false });
  assert.equal(splitCommand("ls *.ts").shell, true);
  assert.equal(splitCommand("git diff @{u}").shell, false);
  const steps = { plan: { stepKind: "work" } };
  const ctx = stepContext(steps, {
    registry: {
      validators: {
        lint: { type: "command", command: "deno lint", failurePattern: "lint" },
        web: { type: "http" },
      },
      failurePatterns: { lint: { edition: "failed", adaptation: "lint" }, unused: {} },
      validationSteps: {
        plan: {
          c2: "retry",
          c3: "plan",
          validationConditions: [{ validator: "lint" }, { validator: "web" }],
        },
        ghost: {},
      },
    },
  });
  const st = stepScope(ctx, "plan", steps.plan);
  convertValidation(ctx, st);
  assert.deepEqual(st.out.validation, {
    validators: [{ command: "lint", pattern: "lint" }],
    retryPrompt: { c1: "steps", c2: "retry", c3: "plan" },
    maxRetries: 3,
  });
  assert.deepEqual(ctx.commands, { lint: { argv: ["deno", "lint"] } });
  assert.deepEqual([...ctx.files.keys()].sort(), [
    "prompts/steps/retry/plan/f_failed.md",
    "prompts/steps/retry/plan/f_failed_lint.md",
  ]);
  assert.ok(hasNote(ctx, "person", "validators.web", "not a command"));
  reportUnusedValidation(ctx);
  assert.ok(hasNote(ctx, "defect", "validationSteps.ghost", "names no step"));
  assert.ok(hasNote(ctx, "dropped", "failurePatterns.unused"));
});

Deno.test("convertSchemas and convertOtherFiles: definitions renamed, missing and unused files reported", async () => {
  const base = await Deno.makeTempDir({ prefix: "stepflow-convert-" });
  try {
    const dir = join(base, ".agent", "demo");
    await Deno.mkdir(join(dir, "schemas"), { recursive: true });
    await Deno.writeTextFile(
      join(dir, "schemas", "a.schema.json"),
      JSON.stringify({ definitions: { plan: { type: "object" } } }),
    );
    await Deno.writeTextFile(join(dir, "schemas", "unused.json"), "{}");
    await Deno.writeTextFile(join(dir, "README.md"), "# Demo\n");
    await Deno.writeTextFile(join(dir, "config.json"), "{}");
    const ctx = newConvertContext({ name: "demo", dir, base }, "{}", '{"steps":{}}');
    ctx.schemaUses.set("a.schema.json", [{ source: "plan", stepId: "p" }]);
    ctx.schemaUses.set("gone.json", [{ source: "x", stepId: "q" }]);
    ctx.schemaUses.set(GENERATED_SCHEMA_FILE, [{ source: "generated:r", stepId: "r" }]);
    const schemas = await convertSchemas(ctx);
    assert.ok(Object.hasOwn(schemas.get("a.schema.json")!.definitions as object, "p"));
    assert.deepEqual(Object.keys(schemas.get(GENERATED_SCHEMA_FILE)!.definitions as object), [
      "r",
    ]);
    assert.ok(hasNote(ctx, "defect", "schemas/gone.json", "missing or not JSON"));
    assert.ok(hasNote(ctx, "dropped", "schemas/unused.json", "no step uses it"));
    await convertOtherFiles(ctx);
    assert.equal(ctx.files.get("README.md"), "# Demo\n");
    assert.ok(hasNote(ctx, "dropped", "config.json", "climpt-specific"));
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
