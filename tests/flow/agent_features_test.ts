/**
 * Agent features through the real runner over agent folders on disk, with a scripted backend:
 * command steps, step validators (pattern retry prompts, bounds, permission), completion
 * conditions, and the load-time checks of all of them and of parameters.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentDefinitionError } from "../../src/definition/errors.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { RESERVED_PARAMETER_FLAGS } from "../../src/definition/parameters.ts";
import { CLI_FLAGS } from "../../src/cli/args.ts";
import type { ExecutorEvents } from "../../src/events/types.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import type { LlmRequest } from "../../src/llm/types.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { type AgentFiles, gateSchema, validatedFixerFiles, writeAgent } from "./fixtures.ts";

async function withRoot(fn: (root: string) => Promise<void>): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-features-" });
  try {
    await fn(root);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("validators: a failed check re-runs the step with its pattern's retry prompt, then passes", async () => {
  await withRoot(async (root) => {
    const dir = await writeAgent(root, "fixer", validatedFixerFiles(2));
    const prompts: string[] = [];
    const backend = new ScriptedBackend(async (req: LlmRequest) => {
      if (req.stepId === "work.fix") return { output: { next_action: { action: "complete" } } };
      prompts.push(req.prompt);
      // The model "fixes" the problem on its second attempt.
      if (prompts.length === 2) await Deno.writeTextFile(join(req.cwd, "done.txt"), "ok");
      return { output: { summary: `attempt ${prompts.length}` } };
    });
    const retries: string[] = [];
    const events: ExecutorEvents = {
      onStepRetry: (_info, _attempt, error) => {
        retries.push((error as { code: string }).code);
      },
    };
    const definition = await loadAgentDefinition(dir);
    const result = await new StepFlowRunner(definition, { backend, allowRun: true, events }).run({
      cwd: root,
    });
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
    assert.deepEqual(result.output, { summary: "attempt 2" });
    assert.equal(prompts[0], "Report the fix.");
    assert.match(prompts[1], /^RETRY \(missing via marker\): \S*ls: .*done\.txt/);
    assert.deepEqual(retries, ["VALIDATION_FAILED"]);
    assert.deepEqual(
      result.state.history.map((h) => [h.stepId, h.transition, h.validation ?? null]),
      [
        ["work.fix", "complete", null],
        ["complete.fix", "retry", null],
        ["complete.fix", "retry", {
          command: "marker",
          exitCode: 2,
          ok: false,
          pattern: "missing",
        }],
        ["complete.fix", "complete", null],
        ["complete.fix", "next", { command: "marker", exitCode: 0, ok: true }],
      ],
    );
  });
});

Deno.test("validators: bounded by maxRetries, then onError applies", async () => {
  await withRoot(async (root) => {
    const dir = await writeAgent(root, "fixer", validatedFixerFiles(1));
    const backend = new ScriptedBackend((req: LlmRequest) =>
      req.stepId === "work.fix"
        ? { output: { next_action: { action: "complete" } } }
        : { output: { summary: "never fixed" } }
    );
    const definition = await loadAgentDefinition(dir);
    const result = await new StepFlowRunner(definition, { backend, allowRun: true }).run({
      cwd: root,
    });
    assert.equal(result.completionReason, "step_failed");
    assert.equal(result.error?.code, "VALIDATION_FAILED");
    assert.match(result.error!.message, /after 1 retry \(validation.maxRetries 1\)/);
    assert.equal(result.state.history.filter((h) => h.validation).length, 2);
  });
});

Deno.test("validators: refused without allowRun; skipValidators skips them with a warning", async () => {
  await withRoot(async (root) => {
    const dir = await writeAgent(root, "fixer", validatedFixerFiles(1));
    const answer = (req: LlmRequest) =>
      req.stepId === "work.fix"
        ? { output: { next_action: { action: "complete" } } }
        : { output: { summary: "done" } };
    const definition = await loadAgentDefinition(dir);
    const refused = await new StepFlowRunner(definition, {
      backend: new ScriptedBackend(answer),
    }).run({ cwd: root });
    assert.equal(refused.completionReason, "step_failed");
    assert.equal(refused.error?.code, "COMMAND_NOT_ALLOWED");
    assert.match(
      refused.error!.message,
      /Pass --allow-run \(or the runner option allowRun: true\)/,
    );
    const warnings: string[] = [];
    const skipped = await new StepFlowRunner(definition, {
      backend: new ScriptedBackend(answer),
      skipValidators: true,
      onWarning: (w) => warnings.push(w),
    }).run({ cwd: root });
    assert.equal(skipped.completionReason, "completed");
    assert.match(warnings.join("\n"), /1 validator\(s\) skipped/);
  });
});

Deno.test("command steps: exit 0 follows next, a failure follows onError, output is handed off", async () => {
  await withRoot(async (root) => {
    const dir = await writeAgent(root, "ops", {
      agent: {
        name: "ops",
        behavior: { completionType: "ops" },
        parameters: { who: { type: "string", required: true }, tags: { type: "array" } },
        commands: {
          greet: { argv: ["echo", "hi {uv-who}", "{uv-tags}"] },
          fail: { argv: ["sh", "-c", "echo boom >&2; exit 3"] },
        },
      },
      registry: {
        version: "1",
        entryStep: "run.greet",
        steps: {
          "run.greet": {
            kind: "command",
            command: "greet",
            transitions: { next: { target: "run.fail" } },
          },
          "run.fail": { kind: "command", command: "fail", onError: "jump=run.last" },
          "run.last": { kind: "command", command: "greet" },
        },
      },
      prompts: {},
    });
    const definition = await loadAgentDefinition(dir);
    assert.equal(definition.steps["run.greet"].kind, "command");
    const started: string[] = [];
    const result = await new StepFlowRunner(definition, {
      backend: new ScriptedBackend([]),
      allowRun: true,
      events: { onStepStart: (info) => void started.push(info.stepId) },
    }).run({ args: { who: "ana", tags: ["a", "b"] }, cwd: root });
    assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
    assert.deepEqual(started, ["run.greet", "run.fail", "run.last"]);
    assert.deepEqual(
      result.state.history.map((h) => [h.stepId, h.transition, h.command?.exitCode]),
      [["run.greet", "next", 0], ["run.fail", "jump", 3], ["run.last", "complete", 0]],
    );
    assert.match(result.state.history[1].error!, /exited with code 3:\nboom/);
    assert.deepEqual(result.state.handoff["run.fail"], {
      stdout: "",
      stderr: "boom\n",
      exitCode: 3,
    });
    assert.equal(
      result.state.handoff["run.greet"].stdout,
      "hi ana a b\n",
      "an array fills one argument per element",
    );
    assert.deepEqual(result.output, { stdout: "hi ana a b\n", stderr: "", exitCode: 0 });
  });
});

Deno.test("completion conditions: count:iteration and detect:keyword complete the run", async () => {
  await withRoot(async (root) => {
    const files = (completion: unknown): AgentFiles => ({
      agent: { name: "looper", behavior: { completionType: "loop" }, completion },
      registry: {
        version: "1",
        entryStep: "work.loop",
        steps: {
          "work.loop": {
            c2: "work",
            c3: "loop",
            outputSchemaRef: { file: "loop.json", schema: "#/definitions/work.loop" },
            structuredGate: { allowedIntents: ["repeat"], intentField: "next_action.action" },
            transitions: { repeat: { target: "work.loop" } },
          },
        },
      },
      prompts: { "steps/work/loop/f_default.md": "Loop {iteration}." },
      schemas: { "loop.json": { definitions: { "work.loop": gateSchema(["repeat"]) } } },
    });
    const answer = (summary: string) => ({
      output: { summary, next_action: { action: "repeat" } },
    });
    const counted = await loadAgentDefinition(
      await writeAgent(root, "counted", files([{ type: "count:iteration", maxIterations: 2 }])),
    );
    const r1 = await new StepFlowRunner(counted, {
      backend: new ScriptedBackend([answer("a"), answer("b"), answer("c")]),
      onWarning: () => {},
    }).run();
    assert.equal(r1.completionReason, "completed");
    assert.deepEqual(r1.state.history.map((h) => h.transition), ["repeat", "complete"]);

    const keyword = await loadAgentDefinition(
      await writeAgent(root, "keyword", files([{ type: "detect:keyword", keyword: "ALL_GREEN" }])),
    );
    const r2 = await new StepFlowRunner(keyword, {
      backend: new ScriptedBackend([answer("red"), answer("red"), answer("now ALL_GREEN")]),
      onWarning: () => {},
    }).run();
    assert.equal(r2.completionReason, "completed");
    assert.equal(r2.iterations, 3);
  });
});

Deno.test("load-time checks of parameters, commands, validators and completion", async () => {
  await withRoot(async (root) => {
    const base = validatedFixerFiles(1);
    const broken: AgentFiles = {
      ...base,
      agent: {
        name: "broken",
        behavior: { completionType: "fix" },
        commands: { marker: { argv: ["ls"] } },
        parameters: {
          resume: { type: "boolean" },
          a: { type: "string", flag: "same" },
          b: { type: "string", flag: "same" },
          mode: { type: "string", enum: ["x", "y"], default: "z" },
          list: { type: "array", default: "one" },
        },
        completion: [{ type: "count:iteration", maxIterations: 500 }],
      },
      registry: {
        ...base.registry,
        steps: {
          ...(base.registry.steps as Record<string, unknown>),
          "complete.fix": {
            c2: "complete",
            c3: "fix",
            outputSchemaRef: { file: "fix.json", schema: "#/definitions/complete.fix" },
            validation: {
              validators: [{ command: "markr", pattern: "absent" }],
              retryPrompt: { c1: "steps", c2: "retry", c3: "fix" },
            },
          },
          "run.x": {
            kind: "command",
            command: "nope",
            structuredGate: { allowedIntents: ["next"], intentField: "a" },
          },
        },
      },
    };
    const dir = await writeAgent(root, "broken", broken);
    const error = await loadAgentDefinition(dir).then(() => undefined, (e) => e);
    assert.ok(error instanceof AgentDefinitionError, String(error));
    const text = error.problems.join("\n");
    for (
      const expected of [
        /parameters\.resume: its CLI flag --resume clashes with the CLI's own --resume/,
        /parameters "a" and "b" both use the flag --same/,
        /parameters\.mode\.default "z" is not one of its enum values/,
        /parameters\.list\.default "one" is a string, but the parameter's type is "array"/,
        /completion\[0\]\.maxIterations 500 is above limits\.maxTotalIterations \(100\)/,
        /validation\.validators\[0\]\.command "markr" is not in agent\.json commands\. Did you mean "marker"\?/,
        /f_failed_absent\.md/,
        /step "run\.x": command "nope" is not in agent\.json commands/,
        /step "run\.x": is a command step: it calls no model, so it takes no structuredGate/,
      ]
    ) assert.match(text, expected);
  });
});

Deno.test("RESERVED_PARAMETER_FLAGS is run-agent's flag table (drift check)", () => {
  const cli = new Set([
    ...CLI_FLAGS.map((f) => f.name),
    ...CLI_FLAGS.flatMap((f) => f.short ? [f.short] : []),
  ]);
  assert.deepEqual([...RESERVED_PARAMETER_FLAGS].sort(), [...cli].sort());
});

Deno.test("validators: a resumed run continues with the pending retry prompt", async () => {
  await withRoot(async (root) => {
    const dir = await writeAgent(root, "fixer", validatedFixerFiles(2));
    const definition = await loadAgentDefinition(dir);
    const store = new MemoryRunStore();
    const first = new ScriptedBackend({
      "work.fix": [{ output: { next_action: { action: "complete" } } }],
      "complete.fix": [{ output: { summary: "one" } }, { error: "process died" }],
    });
    const crashed = await new StepFlowRunner(definition, { backend: first, store, allowRun: true })
      .run({ cwd: root, runId: "run-v" });
    assert.equal(crashed.completionReason, "step_failed");
    // As if the process died during the retry call: the checkpoint after the failed validation.
    const cp = (await store.loadCheckpoint("run-v"))!;
    const state = cp.state as Record<string, unknown>;
    delete state.end;
    state.historyLength = 3;
    state.iteration = 2;
    state.currentStepId = "complete.fix";
    await store.saveCheckpoint({ ...cp, status: "running" });
    await Deno.writeTextFile(join(root, "done.txt"), "fixed");

    const second = new ScriptedBackend({ "complete.fix": [{ output: { summary: "two" } }] });
    const resumed = await new StepFlowRunner(definition, { backend: second, store, allowRun: true })
      .run({ resume: "run-v" });
    assert.equal(resumed.completionReason, "completed", JSON.stringify(resumed.error));
    assert.match(second.calls[0].prompt, /^RETRY \(missing via marker\)/);
    assert.deepEqual(resumed.state.history.map((h) => h.validation?.ok ?? null), [
      null,
      null,
      false,
      null,
      true,
    ]);
  });
});
