/**
 * `migrateClimpt` over fixtures written in climpt v1.13's format: the converted agents keep the
 * prompts and behaviour, report every field, load with stepflow's loader, and run their smoke
 * scripts through the real runner.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { loadScriptFile } from "../../src/llm/script_file.ts";
import { migrateClimpt } from "../../src/migrate/migrate.ts";
import { renameIntentsInPrompt } from "../../src/migrate/prompts.ts";
import { normalizeSchemaFile } from "../../src/migrate/schemas.ts";
import { mainPath, sampleFor } from "../../src/migrate/smoke.ts";

const FIXTURES = fileURLToPath(new URL("./fixtures/climpt", import.meta.url));
const SOURCE = join(FIXTURES, ".agent");

async function withOut(fn: (out: string) => Promise<void>): Promise<void> {
  const out = await Deno.makeTempDir({ prefix: "stepflow-migrate-test-" });
  try {
    await fn(out);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
}

const readJson = async (path: string) => JSON.parse(await Deno.readTextFile(path));

/** The 1-based line of `needle` in a fixture file at or after the line holding `after`. */
async function fixtureLine(file: string, needle: string, after?: string): Promise<number> {
  const lines = (await Deno.readTextFile(join(SOURCE, file))).split("\n");
  const from = after ? lines.findIndex((l) => l.includes(after)) : 0;
  return lines.findIndex((l, i) => i >= from && l.includes(needle)) + 1;
}

async function smokeRun(dir: string, args: Record<string, unknown>, options = {}) {
  const definition = await loadAgentDefinition(dir);
  const backend = await loadScriptFile(join(dir, "smoke.script.yaml"));
  const runner = new StepFlowRunner(definition, { backend, onWarning: () => {}, ...options });
  return await runner.run({ args, cwd: dir });
}

Deno.test("migrate climpt: the full fixture agent keeps its flow, intents and prompts", async () => {
  await withOut(async (out) => {
    const results = await migrateClimpt(FIXTURES, { out });
    assert.deepEqual(results.map((r) => r.name), ["deployer", "probe", "scout", "watcher"]);
    const probe = results.find((r) => r.name === "probe")!;
    assert.deepEqual(probe.loadErrors, []);
    const dir = join(out, "probe");

    const registry = await readJson(join(dir, "steps_registry.json"));
    assert.deepEqual(Object.keys(registry.steps), [
      "initial.probe",
      "continuation.probe",
      "complete.probe",
      "initial.count",
      "section.probecontext",
      "orphan.probe",
    ]);
    const cont = registry.steps["continuation.probe"];
    assert.deepEqual(cont.structuredGate.allowedIntents, ["next", "repeat", "complete"]);
    assert.deepEqual(cont.transitions.complete, { target: "complete.probe" });
    assert.equal(cont.transitions.handoff, undefined);
    assert.equal(cont.uvVariables, undefined, "climpt-only fields are not carried over");
    const closing = registry.steps["complete.probe"];
    assert.equal(closing.transitions, undefined, "a closing step ends the run");
    assert.deepEqual(closing.structuredGate.allowedIntents, ["complete"]);
    assert.equal(closing.structuredGate.fallbackIntent, "complete");
    assert.deepEqual(closing.outputSchemaRef, {
      file: "probe.schema.json",
      schema: "#/definitions/complete.probe",
    });
    assert.deepEqual(closing.validation, {
      validators: [{ command: "git-clean", successWhen: "empty", pattern: "git-dirty" }],
      retryPrompt: { c1: "steps", c2: "retry", c3: "probe" },
      maxRetries: 2,
    });
    assert.deepEqual(registry.entryStepMapping, {
      "poll:state": "initial.probe",
      "count:iteration": "initial.count",
    });

    const agent = await readJson(join(dir, "agent.json"));
    assert.equal(agent.behavior.completionType, "poll:state");
    assert.deepEqual(agent.behavior.allowedTools, ["Read", "Bash"]);
    assert.equal(agent.limits.maxTotalIterations, 20);
    assert.equal(agent.parameters.iterateMax.flag, "iterate-max");
    assert.equal(agent.parameters.issue.flag, undefined, "a flag equal to the key is implied");
    assert.equal(agent.parameters.resume.flag, "resume-param", "--resume is run-agent's own flag");
    assert.deepEqual(agent.commands["git-clean"], { argv: ["git", "status", "--porcelain"] });

    // Schemas: common.schema.json bundled, step schemas under definitions, intents renamed.
    const schemaText = await Deno.readTextFile(join(dir, "schemas/probe.schema.json"));
    assert.ok(!schemaText.includes("common.schema.json"), "no $ref into another file remains");
    const schema = JSON.parse(schemaText);
    assert.equal(schema.$id, undefined);
    assert.deepEqual(schema.$defs.nextAction.properties.action.enum, [
      "next",
      "repeat",
      "complete",
    ]);
    assert.deepEqual(schema.$defs.nextAction.properties.reason, { $ref: "#/$defs/reason" });
    assert.deepEqual(
      schema.definitions["complete.probe"].properties.next_action.properties.action.enum,
      ["complete", "repeat"],
    );
    assert.deepEqual(
      schema.definitions["complete.probe"].properties.verdict.enum,
      ["done", "handoff-review"],
      "values that merely contain an intent word are not intents",
    );

    // Prompts: answers renamed, prose left alone.
    const contPrompt = await Deno.readTextFile(
      join(dir, "prompts/steps/continuation/probe/f_default.md"),
    );
    assert.match(contPrompt, /or `complete` when the work is finished/);
    assert.match(contPrompt, /Example: action: complete/);
    assert.match(contPrompt, /Before closing the issue/);
    const closePrompt = await Deno.readTextFile(
      join(dir, "prompts/steps/closure/probe/f_default.md"),
    );
    assert.match(closePrompt, /return `complete` intent/);
    assert.match(closePrompt, /"action": "complete"/);
    const retry = await Deno.readTextFile(
      join(dir, "prompts/steps/retry/probe/f_failed_git-dirty.md"),
    );
    assert.match(retry, /\{validation\.output\}/);
    assert.ok(await Deno.stat(join(dir, "prompts/steps/retry/probe/f_failed.md")));
    assert.equal(
      await Deno.readTextFile(join(dir, "README.md")),
      "# probe\n\nA fixture agent in climpt's format.\n",
    );
  });
});

Deno.test("migrate climpt: MIGRATION.md names every field with its climpt file:line", async () => {
  await withOut(async (out) => {
    await migrateClimpt(join(SOURCE, "probe"), { out });
    const report = await Deno.readTextFile(join(out, "probe/MIGRATION.md"));
    const section = (title: string) => {
      const start = report.indexOf(`## ${title}`);
      assert.ok(start >= 0, `section ${title}`);
      const end = report.indexOf("\n## ", start + 1);
      return report.slice(start, end < 0 ? undefined : end);
    };
    const defects = section("Defects in the source");
    const missingPromptLine = await fixtureLine(
      "probe/steps_registry.json",
      '"c3"',
      '"orphan.probe": {',
    );
    assert.ok(
      defects.includes(
        `| \`steps.orphan.probe.c2/c3\` | prompt file prompts/steps/orphan/probe/f_default.md does not exist in the source | \`.agent/probe/steps_registry.json:${missingPromptLine}\` |`,
      ),
      defects,
    );
    assert.match(defects, /uses \{uv-target_label\}, which no parameter provides/);
    assert.match(defects, /step "orphan\.probe" is unreachable/);
    assert.ok(!defects.includes('initial.count" is unreachable'), "entered under count:iteration");

    const person = section("Needs a person");
    const cliLine = await fixtureLine("probe/agent.json", '"cli"', '"resume": {');
    assert.ok(person.includes(`\`.agent/probe/agent.json:${cliLine}\``), person);
    for (
      const field of ["runner.integrations", "runner.execution", "runner.verdict (poll:state)"]
    ) {
      assert.ok(person.includes(`\`${field}\``), field);
    }
    assert.match(person, /f_failed_git-dirty\.md.*\{\{…\}\} template parameters/);

    const dropped = section("Dropped");
    for (const field of ["agentId", "pathTemplate", "runner.actions", "steps.initial.probe.type"]) {
      assert.ok(dropped.includes(`\`${field}\``), field);
    }
    const mapped = section("Mapped");
    const handoffLine = await fixtureLine("probe/steps_registry.json", '"handoff": { "target"');
    assert.ok(
      mapped.includes(
        `| \`steps.continuation.probe.transitions.handoff\` | → complete: complete.probe | \`.agent/probe/steps_registry.json:${handoffLine}\` |`,
      ),
      mapped,
    );
    assert.match(mapped, /line 3 `handoff` → `complete`/);
  });
});

Deno.test("migrate climpt: the converted agent loads (source defects as warnings) and its smoke script runs", async () => {
  await withOut(async (out) => {
    await migrateClimpt(FIXTURES, { out });
    const dir = join(out, "probe");
    const definition = await loadAgentDefinition(dir);
    assert.equal(definition.warnings.length, 2, definition.warnings.join("\n"));
    assert.ok(definition.warnings.some((w) => w.includes('"orphan.probe" is unreachable')));
    const result = await smokeRun(dir, { issue: 1, completed_iterations: "0", target_label: "x" }, {
      skipValidators: true,
    });
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
    assert.deepEqual(result.state.history.map((h) => [h.stepId, h.intent]), [
      ["initial.probe", "next"],
      ["continuation.probe", "complete"],
      ["complete.probe", "complete"],
    ]);
    assert.deepEqual(result.state.handoff["initial.probe"], { plan: "smoke" });
  });
});

Deno.test("migrate climpt: a subprocess closure becomes a command step that runs with allowRun", async () => {
  await withOut(async (out) => {
    await migrateClimpt(join(SOURCE, "deployer"), { out });
    const dir = join(out, "deployer");
    const agent = await readJson(join(dir, "agent.json"));
    assert.deepEqual(agent.commands.deploy, {
      argv: ["deno", "eval", "console.log('deployed to {uv-target}')"],
      timeoutMs: 30000,
    });
    assert.deepEqual(agent.completion, [{ type: "count:iteration", maxIterations: 1 }]);
    const registry = await readJson(join(dir, "steps_registry.json"));
    assert.deepEqual(registry.steps["complete.deploy"], {
      stepId: "complete.deploy",
      name: "Deploy",
      kind: "command",
      command: "deploy",
    });
    const ok = await smokeRun(dir, { target: "prod" }, { allowRun: true });
    assert.equal(ok.completionReason, "completed", JSON.stringify(ok.error));
    assert.equal(ok.state.handoff["complete.deploy"].stdout, "deployed to prod\n");
    assert.deepEqual(ok.state.history[0].command, { name: "deploy", exitCode: 0 });
    const refused = await smokeRun(dir, { target: "prod" });
    assert.equal(refused.completionReason, "step_failed");
    assert.match(refused.error!.message, /Pass --allow-run/);
  });
});

Deno.test("migrate climpt: detect:keyword becomes a completion condition the smoke run meets", async () => {
  await withOut(async (out) => {
    await migrateClimpt(join(SOURCE, "watcher"), { out });
    const dir = join(out, "watcher");
    const agent = await readJson(join(dir, "agent.json"));
    assert.deepEqual(agent.completion, [{ type: "detect:keyword", keyword: "WATCH_DONE" }]);
    assert.equal(agent.limits.maxTotalIterations, 10);
    const result = await smokeRun(dir, {});
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
    assert.deepEqual(result.state.history.map((h) => h.stepId), [
      "initial.watch",
      "continuation.watch",
    ]);
  });
});

Deno.test("migrate climpt: parameters keep their CLI flags, arrays and enums", async () => {
  await withOut(async (out) => {
    const [scout] = await migrateClimpt(join(SOURCE, "scout"), { out });
    const agent = await readJson(join(out, "scout/agent.json"));
    assert.deepEqual(agent.parameters.labels, {
      type: "array",
      description: "Labels to scan",
      default: ["bug"],
      flag: "label",
    });
    assert.deepEqual(agent.parameters.mode.enum, ["quick", "deep"]);
    assert.equal(agent.parameters.mode.flag, "scan-mode");
    assert.equal(agent.parameters.verbose.flag, "verbose-param");
    const report = await Deno.readTextFile(join(out, "scout/MIGRATION.md"));
    assert.match(report, /parameters\.limit\.validation\.min/);
    assert.match(report, /permissive schema/, "a closure without schema gets one, and says so");
    assert.deepEqual(scout.loadErrors, []);
    const result = await smokeRun(join(out, "scout"), {
      labels: ["bug", "ui"],
      mode: "deep",
      limit: 3,
    });
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  });
});

Deno.test("migrate climpt: refuses to overwrite without force; dry run writes nothing", async () => {
  await withOut(async (out) => {
    const dry = await migrateClimpt(join(SOURCE, "watcher"), { out, dryRun: true });
    assert.equal(dry[0].loadErrors.length, 0);
    assert.deepEqual([...Deno.readDirSync(out)], []);
    await migrateClimpt(join(SOURCE, "watcher"), { out });
    await Deno.writeTextFile(join(out, "watcher/mine.txt"), "keep?");
    await assert.rejects(
      () => migrateClimpt(join(SOURCE, "watcher"), { out }),
      (e: unknown) =>
        e instanceof StepflowError && e.code === "MIGRATE_TARGET_EXISTS" &&
        /--force/.test(e.message),
    );
    assert.equal(await Deno.readTextFile(join(out, "watcher/mine.txt")), "keep?");
    await migrateClimpt(join(SOURCE, "watcher"), { out, force: true });
    await assert.rejects(() => Deno.stat(join(out, "watcher/mine.txt")));
    await assert.rejects(
      () => migrateClimpt(join(out, "nothing-here"), { out }),
      (e: unknown) => e instanceof StepflowError && e.code === "MIGRATE_SOURCE_NOT_FOUND",
    );
  });
});

Deno.test("renameIntentsInPrompt renames answers only", () => {
  const { text, changes } = renameIntentsInPrompt(
    'Return `closing`, "handoff" or \'closing\'; action: handoff. Before closing, handoff-detail stays; `"closing"`.',
    { closing: "complete", handoff: "complete" },
  );
  assert.equal(
    text,
    'Return `complete`, "complete" or \'complete\'; action: complete. Before closing, handoff-detail stays; `"complete"`.',
  );
  assert.equal(changes.length, 5);
});

Deno.test("normalizeSchemaFile reports a $ref into a missing file and renames clashing defs", () => {
  const doc = {
    $defs: { item: { type: "string" } },
    "a.step": {
      type: "object",
      properties: {
        x: { $ref: "common.schema.json#/$defs/item" },
        y: { $ref: "gone.schema.json#/$defs/z" },
      },
    },
  };
  const common = { $defs: { item: { type: "number" } } };
  const result = normalizeSchemaFile(
    doc,
    [{ source: "a.step", stepId: "a.step" }],
    (f) => f === "common.schema.json" ? common : undefined,
    {},
  );
  const defs = result.document.$defs as Record<string, unknown>;
  assert.deepEqual(defs["common.item"], { type: "number" });
  const step =
    (result.document.definitions as Record<string, Record<string, Record<string, unknown>>>)[
      "a.step"
    ];
  assert.deepEqual(step.properties.x, { $ref: "#/$defs/common.item" });
  assert.deepEqual(result.missing.map((m) => m.name), ["gone.schema.json"]);
});

Deno.test("sampleFor satisfies if/then; mainPath follows next, then complete", () => {
  const schema = {
    type: "object",
    required: ["verdict"],
    properties: { verdict: { enum: ["go", "stop"] }, why: { type: "string", minLength: 3 } },
    allOf: [{ if: { properties: { verdict: { const: "go" } } }, then: { required: ["why"] } }],
  };
  assert.deepEqual(sampleFor(schema, {}), { verdict: "go", why: "smoke" });
  const gate = (allowed: string[], transitions: Record<string, string>) => ({
    structuredGate: { allowedIntents: allowed as ("next" | "complete")[], intentField: "a" },
    transitions: Object.fromEntries(
      Object.entries(transitions).map(([k, v]) => [k, { target: v }]),
    ),
  });
  const path = mainPath({
    version: "1",
    steps: {
      "a.one": gate(["next"], { next: "a.two" }),
      "a.two": gate(["next", "complete"], { next: "a.two", complete: "complete.a" }),
      "complete.a": {},
    },
  }, "a.one");
  assert.deepEqual(path, [
    { stepId: "a.one", intent: "next" },
    { stepId: "a.two", intent: "complete" },
    { stepId: "complete.a" },
  ]);
});

Deno.test("migrate climpt: an agent name that is not a plain name never leaves --out", async () => {
  await withOut(async (out) => {
    const source = join(out, "src", ".agent", "evil");
    await Deno.mkdir(source, { recursive: true });
    await Deno.writeTextFile(
      join(source, "agent.json"),
      JSON.stringify({ name: "../../escaped", runner: { verdict: { type: "count:iteration" } } }),
    );
    await Deno.writeTextFile(
      join(source, "steps_registry.json"),
      JSON.stringify({ version: "1", entryStepMapping: { "count:iteration": "run" }, steps: {} }),
    );
    const [result] = await migrateClimpt(join(out, "src"), { out: join(out, "agents") });
    assert.equal(result.name, "evil");
    assert.equal(result.dir, join(out, "agents", "evil"));
    const report = await Deno.readTextFile(join(out, "agents/evil/MIGRATION.md"));
    assert.match(report, /"\.\.\/\.\.\/escaped" is not a plain name/);
    await assert.rejects(() => Deno.stat(join(out, "escaped")));
  });
});
