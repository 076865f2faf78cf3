import assert from "node:assert/strict";
import { symlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { PromptPathError } from "../../src/prompt/c3l_path.ts";
import { PromptNotFoundError, PromptResolver } from "../../src/prompt/resolver.ts";
import { MissingVariablesError } from "../../src/prompt/variables.ts";

async function agentDir(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "stepflow_prompt_" });
  for (const [rel, text] of Object.entries(files)) {
    await Deno.mkdir(dirname(join(dir, rel)), { recursive: true });
    await Deno.writeTextFile(join(dir, rel), text);
  }
  return dir;
}

const ANALYZE = { c1: "steps", c2: "phase", c3: "analyze" };

Deno.test("resolve: C3L file → frontmatter stripped → variables substituted, JSON left alone", async () => {
  const dir = await agentDir({
    "prompts/steps/phase/analyze/f_default.md":
      '---\ntitle: Analyze\n---\nAnalyze {uv-topic} ({step_id}, iteration {iteration}).\nAnswer {"result": "ok"}.',
  });
  const resolver = new PromptResolver({ agentDir: dir });
  const prompt = await resolver.resolve(ANALYZE, {
    uv: { topic: "auth" },
    iteration: 1,
    stepId: "s_a8f3",
  });
  assert.equal(prompt.text, 'Analyze auth (s_a8f3, iteration 1).\nAnswer {"result": "ok"}.');
  assert.deepEqual(prompt.attributes, { title: "Analyze" });
  assert.equal(prompt.file, join(dir, "prompts/steps/phase/analyze/f_default.md"));
  assert.equal(prompt.fromFallback, false);
});

Deno.test("a missing prompt is an error naming the full path and the step; no fallback by default", async () => {
  const dir = await agentDir({ "fallback/steps/phase/analyze/f_default.md": "fallback text" });
  const warnings: string[] = [];
  const resolver = new PromptResolver({
    agentDir: dir,
    fallbackDir: "fallback",
    onWarning: (w) => warnings.push(w),
  });
  const file = join(dir, "prompts/steps/phase/analyze/f_default.md");
  await assert.rejects(
    resolver.resolve(ANALYZE, { uv: {} }, { stepId: "s_a8f3", fallbackKey: "analyze" }),
    (error: unknown) => {
      assert.ok(error instanceof PromptNotFoundError);
      assert.equal(error.code, "PROMPT_NOT_FOUND");
      assert.equal(
        error.message,
        `Prompt file not found: ${file} (step "s_a8f3"). Create the file, or fix the step's prompt reference. There is no fallback unless --allow-fallback is given.`,
      );
      return true;
    },
  );
  assert.deepEqual(warnings, [], "nothing fell back");
});

Deno.test("allowFallback: prompts.fallbackDir stands in, and each use warns", async () => {
  const dir = await agentDir({
    "fallback/steps/phase/analyze/f_default.md": "Fallback for {uv-topic}",
  });
  const warnings: string[] = [];
  const resolver = new PromptResolver({
    agentDir: dir,
    fallbackDir: "fallback",
    allowFallback: true,
    onWarning: (w) => warnings.push(w),
  });
  const prompt = await resolver.resolve(ANALYZE, { uv: { topic: "auth" } }, { stepId: "s_a8f3" });
  assert.equal(prompt.text, "Fallback for auth");
  assert.equal(prompt.fromFallback, true);
  assert.deepEqual(warnings, [
    `[stepflow] warning: prompt ${
      join(dir, "prompts/steps/phase/analyze/f_default.md")
    } (step "s_a8f3") is missing; using fallback ${
      join(dir, "fallback/steps/phase/analyze/f_default.md")
    }. Fallbacks are for development only.`,
  ]);
});

Deno.test("allowFallback with no fallback available still fails, listing what was tried", async () => {
  const dir = await agentDir({});
  const resolver = new PromptResolver({
    agentDir: dir,
    fallbackDir: "fallback",
    allowFallback: true,
  });
  await assert.rejects(
    resolver.resolve(ANALYZE, { uv: {} }, { stepId: "s_a8f3" }),
    (error: unknown) =>
      error instanceof PromptNotFoundError &&
      error.message.includes(
        `Fallbacks tried: ${join(dir, "fallback/steps/phase/analyze/f_default.md")}.`,
      ),
  );
});

Deno.test("a missing adaptation is an error, not a silent fall back to the edition", async () => {
  const dir = await agentDir({ "prompts/steps/phase/analyze/f_default.md": "edition text" });
  const resolver = new PromptResolver({ agentDir: dir });
  await assert.rejects(
    resolver.resolve({ ...ANALYZE, adaptation: "strict" }, { uv: {} }),
    (error: unknown) =>
      error instanceof PromptNotFoundError &&
      error.message.startsWith(
        `Prompt file not found: ${join(dir, "prompts/steps/phase/analyze/f_default_strict.md")}.`,
      ),
  );
});

Deno.test("a prompt symlinked outside the prompt tree is refused; inside is fine", async () => {
  const dir = await agentDir({
    "secret.md": "secret",
    "prompts/steps/phase/review/f_default.md": "review",
  });
  await Deno.mkdir(join(dir, "prompts/steps/phase/analyze"), { recursive: true });
  await symlink(join(dir, "secret.md"), join(dir, "prompts/steps/phase/analyze/f_default.md"));
  await Deno.mkdir(join(dir, "prompts/steps/phase/implement"), { recursive: true });
  await symlink(
    join(dir, "prompts/steps/phase/review/f_default.md"),
    join(dir, "prompts/steps/phase/implement/f_default.md"),
  );
  const resolver = new PromptResolver({ agentDir: dir });
  await assert.rejects(
    resolver.resolve(ANALYZE, { uv: {} }),
    (error: unknown) => {
      assert.ok(error instanceof PromptPathError);
      assert.match(
        error.message,
        /^Refused prompt file .*analyze\/f_default\.md: it is a symbolic link to .*secret\.md, outside the prompt folder /,
      );
      return true;
    },
  );
  const inside = await resolver.resolve({ ...ANALYZE, c3: "implement" }, { uv: {} });
  assert.equal(inside.text, "review");
});

Deno.test("traversal in references is refused before any file is read", async () => {
  const dir = await agentDir({ "agent.json": "{}" });
  const resolver = new PromptResolver({ agentDir: dir });
  for (
    const ref of [{ path: "../agent.json" }, { path: "/etc/passwd" }, { ...ANALYZE, c2: ".." }]
  ) {
    assert.throws(() => resolver.pathOf(ref), PromptPathError, JSON.stringify(ref));
    await assert.rejects(resolver.resolve(ref, { uv: {} }), PromptPathError);
  }
});

Deno.test("missing variables fail with every name; the template is cached, a failed read is not", async () => {
  const dir = await agentDir({});
  const resolver = new PromptResolver({ agentDir: dir });
  await assert.rejects(resolver.template(ANALYZE), PromptNotFoundError);
  const file = join(dir, "prompts/steps/phase/analyze/f_default.md");
  await Deno.mkdir(dirname(file), { recursive: true });
  await Deno.writeTextFile(file, "{uv-a} {uv-b} {handoff.c}");
  await assert.rejects(
    resolver.resolve(ANALYZE, { uv: {} }, { stepId: "s_a8f3" }),
    (error: unknown) =>
      error instanceof MissingVariablesError &&
      JSON.stringify(error.missing) === '["uv-a","uv-b","handoff.c"]',
  );
  await Deno.writeTextFile(file, "changed");
  assert.equal(
    (await resolver.resolve(ANALYZE, { uv: { a: 1, b: 2 }, handoff: { c: 3 } })).text,
    "1 2 3",
    "the successful read is cached for this resolver",
  );
  assert.equal((await new PromptResolver({ agentDir: dir }).template(ANALYZE)).body, "changed");
});

Deno.test("a folder in place of a prompt file is a clear error", async () => {
  const dir = await agentDir({ "prompts/steps/phase/analyze/f_default.md/x": "" });
  await assert.rejects(
    new PromptResolver({ agentDir: dir }).resolve(ANALYZE, { uv: {} }),
    /Prompt path .*f_default\.md is not a file\./,
  );
});

Deno.test("pathOf: a reference resolved before and changed in place is resolved again, checks included", async () => {
  const dir = await agentDir({});
  const resolver = new PromptResolver({ agentDir: dir });
  const ref: { c1: string; c2: string; c3: string; edition?: string } = { ...ANALYZE };
  const first = resolver.pathOf(ref);
  assert.equal(first, join(dir, "prompts/steps/phase/analyze/f_default.md"));
  assert.equal(resolver.pathOf(ref), first);
  ref.edition = "review";
  assert.equal(resolver.pathOf(ref), join(dir, "prompts/steps/phase/analyze/f_review.md"));
  ref.c3 = "..";
  assert.throws(() => resolver.pathOf(ref), PromptPathError);
  assert.throws(() => resolver.pathOf(ref), PromptPathError);
  const path = { path: "system.md" };
  assert.equal(resolver.pathOf(path), join(dir, "prompts/system.md"));
  path.path = "../../escape.md";
  assert.throws(() => resolver.pathOf(path), PromptPathError);
  await Deno.remove(dir, { recursive: true });
});
