import assert from "node:assert/strict";
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { assertProblems, copyExample, load, loadFails, writeText } from "./fixtures.ts";

const R = "steps_registry.json";

Deno.test("a missing prompt file is an error naming the step and the full path (no fallback)", async () => {
  const agent = await copyExample("code-improver");
  await Deno.remove(join(agent.dir, "prompts/steps/phase/implement/f_default.md"));
  await Deno.remove(join(agent.dir, "prompts/checks/completion/final/f_default.md"));
  assertProblems(await loadFails(agent), [
    `${R}: step "s_b2c1": prompt file not found: ${
      join(agent.dir, "prompts/steps/phase/implement/f_default.md")
    }. Create it, or fix the step's prompt reference (there is no fallback unless --allow-fallback is given).`,
    `${R}: step "s_c9d4": check.prompt file not found: ${
      join(agent.dir, "prompts/checks/completion/final/f_default.md")
    }. Create it, or fix the step's check.prompt reference (there is no fallback unless --allow-fallback is given).`,
  ]);
});

Deno.test("editions and adaptations resolve to their own files; a missing adaptation is an error", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].edition = "bugfix";
    r.steps["continuation.issue"].adaptation = "strict";
  });
  await writeText(join(agent.dir, "prompts/steps/initial/issue/f_bugfix.md"), "Fix {uv-topic}");
  assertProblems(await loadFails(agent), [
    `${R}: step "continuation.issue": prompt file not found: ${
      join(agent.dir, "prompts/steps/continuation/issue/f_default_strict.md")
    }. Create it, or fix the step's prompt reference (there is no fallback unless --allow-fallback is given).`,
  ]);
  await writeText(join(agent.dir, "prompts/steps/continuation/issue/f_default_strict.md"), "Go");
  assert.deepEqual((await load(agent)).warnings, []);
});

Deno.test("prompt traversal is refused: '..', '/', absolute paths and bad C3L segments", async () => {
  const agent = await copyExample("code-improver", (r) => {
    r.steps.s_a8f3.prompt = { path: "../agent.json" };
    r.steps.s_b2c1.prompt = { path: "/etc/passwd" };
    r.steps.s_c9d4.prompt = { c1: "steps", c2: "..", c3: "review" };
    r.steps.s_c9d4.check.prompt = { c1: "checks", c2: "a/b", c3: "final" };
  });
  const prompts = join(agent.dir, "prompts");
  assertProblems(await loadFails(agent), [
    `${R}: step "s_a8f3": prompt: Refused prompt path "../agent.json": it resolves to ${
      join(agent.dir, "agent.json")
    }, outside ${prompts}.`,
    `${R}: step "s_b2c1": prompt: Invalid prompt path "/etc/passwd": it must be a relative path inside ${prompts}.`,
    `${R}: step "s_c9d4": prompt: Invalid C3L segment c2="..": segments must match ^[A-Za-z0-9][A-Za-z0-9_-]*$ (no "..", "/" or absolute paths).`,
    `${R}: step "s_c9d4": check.prompt: Invalid C3L segment c2="a/b": segments must match ^[A-Za-z0-9][A-Za-z0-9_-]*$ (no "..", "/" or absolute paths).`,
  ]);
});

Deno.test("a prompt that is a symlink leaving the prompt tree is refused", async () => {
  const agent = await copyExample("issue-solver");
  const outside = join(agent.root, "secret.md");
  await Deno.writeTextFile(outside, "secret");
  const file = join(agent.dir, "prompts/steps/initial/issue/f_default.md");
  await Deno.remove(file);
  await symlink(outside, file);
  assertProblems(await loadFails(agent), [
    `${R}: step "initial.issue": prompt: Refused prompt file ${file}: it is a symbolic link to ${await Deno
      .realPath(outside)}, outside the prompt folder ${join(agent.dir, "prompts")}.`,
  ]);
});

Deno.test("a symlink that stays inside the prompt tree is fine", async () => {
  const agent = await copyExample("issue-solver");
  const file = join(agent.dir, "prompts/steps/continuation/issue/f_default.md");
  await Deno.remove(file);
  await symlink(join(agent.dir, "prompts/steps/initial/issue/f_default.md"), file);
  assert.deepEqual((await load(agent)).warnings, []);
});

Deno.test("basePath must stay inside the agent folder; a prompt path must be a file", async () => {
  const escaping = await copyExample("issue-solver", (r) => {
    r.basePath = "../shared-prompts";
  });
  assertProblems(await loadFails(escaping), [
    `${R}: basePath: Invalid basePath "../shared-prompts": it must be a folder inside the agent folder ${escaping.dir}.`,
  ]);
  const folder = await copyExample("code-improver", (r) => {
    r.steps.s_a8f3.prompt = { path: "steps" };
  });
  assertProblems(await loadFails(folder), [
    `${R}: step "s_a8f3": prompt: ${join(folder.dir, "prompts", "steps")} is not a file.`,
  ]);
});

Deno.test("behavior.systemPromptPath must exist inside the agent folder", async () => {
  const missing = await copyExample("code-improver", (_r, a) => {
    a.behavior.systemPromptPath = "prompts/sys.md";
  });
  assertProblems(await loadFails(missing), [
    `agent.json: behavior.systemPromptPath: file not found: ${
      join(missing.dir, "prompts/sys.md")
    }. Create it, or fix the path (it is relative to the agent folder).`,
  ]);
  const escaping = await copyExample("code-improver", (_r, a) => {
    a.behavior.systemPromptPath = "../../etc/hosts";
  });
  assertProblems(await loadFails(escaping), [
    `agent.json: behavior.systemPromptPath: Refused prompt path "../../etc/hosts": it resolves to ${
      join(escaping.dir, "../../etc/hosts")
    }, outside ${escaping.dir}.`,
  ]);
  const linked = await copyExample("code-improver");
  const system = join(linked.dir, "prompts/system.md");
  await Deno.remove(system);
  await Deno.writeTextFile(join(linked.root, "system.md"), "outside");
  await symlink(join(linked.root, "system.md"), system);
  const error = await loadFails(linked);
  assert.equal(error.problems.length, 1);
  assert.match(
    error.problems[0],
    /^agent\.json: behavior\.systemPromptPath: Refused prompt file .*system\.md: it is a symbolic link to .*, outside the prompt folder /,
  );
});

Deno.test("every outputSchemaRef resolves: file exists, parses, and the pointer exists", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].outputSchemaRef.schema = "#/definitions/initial.isue";
    r.steps["continuation.issue"].outputSchemaRef.file = "nope.json";
    r.steps["complete.issue"].outputSchemaRef.file = "broken.json";
  });
  await writeText(join(agent.dir, "schemas", "broken.json"), "{ definitions: }");
  const schemas = join(agent.dir, "schemas");
  assertProblems(await loadFails(agent), [
    `${R}: step "initial.issue": outputSchemaRef: Schema pointer #/definitions/initial.isue not found in ${
      join(schemas, "issue.schema.json")
    }. Available: #/definitions/next_action, #/definitions/initial.issue, #/definitions/continuation.issue, #/definitions/complete.issue. Fix outputSchemaRef.schema or add the definition.`,
    `${R}: step "continuation.issue": outputSchemaRef: Schema file not found: ${
      join(schemas, "nope.json")
    }. Create it, or fix outputSchemaRef.file.`,
    `${R}: step "complete.issue": outputSchemaRef: Schema file ${
      join(schemas, "broken.json")
    } is not valid JSON: ${join(schemas, "broken.json")}:1:3: invalid JSON: InvalidSymbol.`,
  ]);
});

Deno.test("a schema file that leaves the schemas folder is refused", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["complete.issue"].outputSchemaRef.file = "../agent.json";
  });
  assertProblems(await loadFails(agent), [
    `${R}: step "complete.issue": outputSchemaRef: outputSchemaRef.file "../agent.json" leaves the schemas folder ${
      join(agent.dir, "schemas")
    }.`,
  ]);
});

Deno.test("allowFallback: a missing prompt with a fallback is a warning; without one still an error", async () => {
  const agent = await copyExample("code-improver");
  const file = join(agent.dir, "prompts/steps/phase/review/f_default.md");
  await Deno.remove(file);
  // agent.json prompts.fallbackDir is "prompts/": the same tree, so the fallback is missing too
  const noFallback = await loadFails(agent, { allowFallback: true });
  assert.equal(noFallback.problems.length, 1);
  assert.match(
    noFallback.problems[0],
    /^steps_registry\.json: step "s_c9d4": prompt: Prompt file not found: .*review\/f_default\.md \(step "s_c9d4"\)\. Fallbacks tried: .*prompts\/steps\/phase\/review\/f_default\.md\./,
  );

  const withFallback = await copyExample("code-improver", (_r, a) => {
    a.prompts.fallbackDir = "fallback-prompts";
  });
  await Deno.remove(join(withFallback.dir, "prompts/steps/phase/review/f_default.md"));
  const fallback = join(withFallback.dir, "fallback-prompts/steps/phase/review/f_default.md");
  await writeText(fallback, "Review {uv-topic}");
  await loadFails(withFallback); // off by default: still an error
  const def = await load(withFallback, { allowFallback: true });
  assert.deepEqual(def.warnings, [
    `${R}: step "s_c9d4": prompt file not found: ${
      join(withFallback.dir, "prompts/steps/phase/review/f_default.md")
    }; the fallback ${fallback} will be used (allowFallback is on — fallbacks are for development only).`,
  ]);
});

Deno.test("many steps sharing one prompt and one schema file are checked once each", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    for (let i = 0; i < 50; i++) {
      const id = `extra${i}.issue`;
      const step = structuredClone(r.steps["continuation.issue"]);
      step.stepId = id;
      step.transitions = { next: { target: "complete.issue" }, repeat: { target: id } };
      step.structuredGate.allowedIntents = ["next", "repeat"];
      r.steps[id] = step;
      r.steps[i === 0 ? "continuation.issue" : `extra${i - 1}.issue`].transitions.next.target = id;
    }
  });
  const def = await load(agent);
  assert.equal(Object.keys(def.steps).length, 53);
  assert.deepEqual(def.warnings, []);
});
