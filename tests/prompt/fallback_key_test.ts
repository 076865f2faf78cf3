/**
 * `--allow-fallback` with an invalid `fallbackKey` says the key is invalid, and
 * the loader rejects an invalid fallbackKey whether or not fallbacks are on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { PromptNotFoundError, PromptResolver } from "../../src/prompt/resolver.ts";
import { copyExample, loadFails, writeText } from "../definition/fixtures.ts";

const ANALYZE = { c1: "steps", c2: "phase", c3: "analyze" };

Deno.test("allowFallback + invalid fallbackKey: the error blames the key, not the missing flag", async () => {
  const dir = await Deno.makeTempDir({ prefix: "stepflow_fbkey_" });
  const resolver = new PromptResolver({ agentDir: dir, allowFallback: true, onWarning: () => {} });
  await assert.rejects(
    resolver.resolve(ANALYZE, { uv: {} }, { stepId: "s_a8f3", fallbackKey: "../etc/passwd" }),
    (error: unknown) => {
      assert.ok(error instanceof PromptNotFoundError);
      assert.match(
        error.message,
        /The step's fallbackKey "\.\.\/etc\/passwd" is invalid \(use letters, digits, "_" and "-", e\.g\. "issue_initial_default"\), so no built-in fallback applies: fix the fallbackKey, or create the file\.$/,
      );
      assert.doesNotMatch(error.message, /unless --allow-fallback/);
      return true;
    },
  );
  // A valid key with no built-in prompt: nothing about the flag either.
  await assert.rejects(
    resolver.resolve(ANALYZE, { uv: {} }, { fallbackKey: "no_such_fallback" }),
    (error: unknown) => {
      assert.ok(error instanceof PromptNotFoundError);
      assert.match(error.message, /Fallbacks tried: builtin:no_such_fallback\. No fallback has it/);
      assert.doesNotMatch(error.message, /unless --allow-fallback/);
      return true;
    },
  );
});

Deno.test("load: an invalid fallbackKey is a load error with and without allowFallback", async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["continuation.issue"].fallbackKey = "a/b";
  });
  await Deno.remove(join(agent.dir, "prompts/steps/continuation/issue/f_default.md"));
  await writeText(join(agent.dir, "prompts/keep.md"), "x");
  for (const allowFallback of [false, true]) {
    const error = await loadFails(agent, { allowFallback });
    const text = error.problems.join("\n");
    assert.match(
      text,
      /step "continuation\.issue": fallbackKey "a\/b" is invalid: use letters, digits, "_" and "-"/,
    );
    if (allowFallback) assert.doesNotMatch(text, /unless --allow-fallback/);
  }
});
