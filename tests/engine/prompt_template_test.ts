import assert from "node:assert/strict";
import { readBuiltinPrompt, renderPromptTemplate } from "../../src/engine/prompt_template.ts";
import { StepflowError } from "../../src/errors.ts";
import { loadPlanPrompts, PLAN_PROMPT_NAMES } from "../../src/planspec/prompts.ts";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof StepflowError ? `${error.code}: ${error.message}` : String(error);
  }
  return undefined;
}

Deno.test("renderPromptTemplate fills {name} in one pass and leaves JSON braces alone", () => {
  assert.equal(
    renderPromptTemplate('Do {task} in {where}. Answer {"ok": true} or { ok }.', {
      task: "{where}",
      where: "src/",
    }),
    'Do {where} in src/. Answer {"ok": true} or { ok }.',
  );
  // A tool-plan reference in a prompt's prose is not a placeholder.
  assert.equal(renderPromptTemplate('write "${step_1.path}"', {}), 'write "${step_1.path}"');
  // Names are the record's own keys only.
  assert.match(codeOf(() => renderPromptTemplate("{constructor}", {})) ?? "", /MISSING/);
});

Deno.test("renderPromptTemplate names every placeholder without a value, and refuses {{name}}", () => {
  assert.equal(
    codeOf(() => renderPromptTemplate("{goal} {step_id} {goal}", { plan: "p" })),
    "PROMPT_VARIABLES_MISSING: Prompt template uses {goal}, {step_id}, which have no value " +
      "(known: plan).",
  );
  assert.equal(
    codeOf(() => renderPromptTemplate("Goal: {{goal}} / {{ plan_state }}", { goal: "g" })),
    "PROMPT_TEMPLATE_INVALID: Prompt template uses {{goal}}, {{plan_state}}: placeholders are " +
      "written with one brace, as in agent prompts — {goal}, {plan_state}.",
  );
});

/** The placeholders of every built-in prompt: exactly the variables its engine fills. */
const BUILTIN_VARIABLES: Record<string, string[]> = {
  "plan/generate.md": ["task", "workspace", "tools"],
  "plan/revise.md": ["task", "workspace", "tools", "version", "plan", "feedback"],
  "plan/recover.md": [
    "task",
    "description",
    "error",
    "step_id",
    "tool",
    "args",
    "attempt",
    "plan",
    "tools",
  ],
  "planspec/generate.md": ["description"],
  "planspec/regenerate.md": ["goal", "reason", "plan_state", "history"],
  "planspec/children.md": ["goal", "plan_state", "step_id", "step_type", "description", "reason"],
  "planspec/step.md": [
    "goal",
    "constraints",
    "step_id",
    "step_type",
    "description",
    "detail",
    "inputs",
    "outputs",
    "history",
    "task_kind",
  ],
  "planspec/reflect.md": [
    "goal",
    "step_id",
    "description",
    "status",
    "result",
    "plan_state",
    "can_interact",
    "attempt",
    "max_attempts",
    "history",
  ],
  "planspec/replan.md": ["goal", "round", "max_rounds", "issues", "plan_state", "history"],
};

Deno.test("every built-in prompt uses the one syntax and only the variables its engine fills", async () => {
  assert.deepEqual(
    Object.keys(BUILTIN_VARIABLES).filter((p) => p.startsWith("planspec/")).sort(),
    PLAN_PROMPT_NAMES.map((n) => `planspec/${n}.md`).sort(),
  );
  for (const [path, names] of Object.entries(BUILTIN_VARIABLES)) {
    const template = await readBuiltinPrompt(path);
    assert.ok(!/\{\{/.test(template), `${path} still uses {{…}}`);
    const values = Object.fromEntries(names.map((n) => [n, `<${n}>`]));
    const rendered = renderPromptTemplate(template, values);
    for (const name of names) {
      assert.ok(rendered.includes(`<${name}>`), `${path}: {${name}} unused`);
    }
  }
});

Deno.test("readBuiltinPrompt: a missing file is PROMPT_NOT_FOUND with its URL", async () => {
  await assert.rejects(readBuiltinPrompt("planspec/nope.md"), (error: StepflowError) => {
    assert.equal(error.code, "PROMPT_NOT_FOUND");
    assert.match(
      error.message,
      /^Cannot read the built-in prompt file:.*prompts\/planspec\/nope\.md: /,
    );
    return true;
  });
});

Deno.test("loadPlanPrompts refuses an override that names no PlanSpec prompt", async () => {
  await assert.rejects(
    loadPlanPrompts({ step: "x", reask: "y", rethink: "z" } as Record<string, string>),
    /^StepflowError: prompts: no PlanSpec prompt is named "reask", "rethink" \(known: generate, regenerate, children, step, reflect, replan\); re-asks use/,
  );
});
