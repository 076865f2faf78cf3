import assert from "node:assert/strict";
import { join } from "node:path";
import {
  c3lRelativePath,
  isWithin,
  PromptPathError,
  promptRoot,
  resolvePromptPath,
} from "../../src/prompt/c3l_path.ts";

const AGENT = "/work/.agent/demo";
const ROOT = join(AGENT, "prompts");

Deno.test("C3L paths: <c1>/<c2>/<c3>/f_<edition>[_<adaptation>].md, edition default", () => {
  assert.equal(
    c3lRelativePath({ c1: "steps", c2: "phase", c3: "analyze" }),
    "steps/phase/analyze/f_default.md",
  );
  assert.equal(
    c3lRelativePath({ c1: "steps", c2: "initial", c3: "externalState", edition: "v2" }),
    "steps/initial/externalState/f_v2.md",
  );
  assert.equal(
    c3lRelativePath({ c1: "checks", c2: "step", c3: "x", adaptation: "strict" }),
    "checks/step/x/f_default_strict.md",
  );
  assert.equal(
    resolvePromptPath(AGENT, "prompts", { c1: "steps", c2: "phase", c3: "review" }),
    join(ROOT, "steps/phase/review/f_default.md"),
  );
});

Deno.test("C3L segments: '..', '/', empty, leading '_' or '-' and absolute paths are refused", () => {
  const bad: Array<[string, Record<string, string>]> = [
    ["c1", { c1: "..", c2: "a", c3: "b" }],
    ["c2", { c1: "steps", c2: "a/b", c3: "b" }],
    ["c3", { c1: "steps", c2: "a", c3: "" }],
    ["c3", { c1: "steps", c2: "a", c3: "/etc" }],
    ["edition", { c1: "steps", c2: "a", c3: "b", edition: "../x" }],
    ["adaptation", { c1: "steps", c2: "a", c3: "b", adaptation: "-x" }],
    ["c2", { c1: "steps", c2: "_hidden", c3: "b" }],
    ["c2", { c1: "steps", c2: "a\\b", c3: "b" }],
  ];
  for (const [segment, ref] of bad) {
    assert.throws(
      () => resolvePromptPath(AGENT, "prompts", ref as never),
      (error: unknown) => {
        assert.ok(error instanceof PromptPathError);
        assert.equal(error.code, "PROMPT_PATH_INVALID");
        assert.equal(
          error.message,
          `Invalid C3L segment ${segment}=${
            JSON.stringify(ref[segment])
          }: segments must match ^[A-Za-z0-9][A-Za-z0-9_-]*$ (no "..", "/" or absolute paths).`,
        );
        return true;
      },
      JSON.stringify(ref),
    );
  }
});

Deno.test("{ path } references must stay inside <agentDir>/<basePath>", () => {
  assert.equal(resolvePromptPath(AGENT, "prompts", { path: "system.md" }), join(ROOT, "system.md"));
  assert.equal(
    resolvePromptPath(AGENT, "prompts", { path: "a/../b/c.md" }),
    join(ROOT, "b/c.md"),
    "'..' that stays inside is fine",
  );
  assert.throws(
    () => resolvePromptPath(AGENT, "prompts", { path: "../agent.json" }),
    {
      name: "PromptPathError",
      message:
        `Refused prompt path "../agent.json": it resolves to ${AGENT}/agent.json, outside ${ROOT}.`,
    },
  );
  assert.throws(
    () => resolvePromptPath(AGENT, "prompts", { path: "a/../../../x.md" }),
    /Refused prompt path "a\/\.\.\/\.\.\/\.\.\/x\.md": it resolves to \/work\/\.agent\/x\.md, outside/,
  );
  for (const path of ["/etc/passwd", "C:\\Windows\\x.md", "", "a\0b"]) {
    assert.throws(
      () => resolvePromptPath(AGENT, "prompts", { path }),
      {
        name: "PromptPathError",
        message: `Invalid prompt path ${
          JSON.stringify(path)
        }: it must be a relative path inside ${ROOT}.`,
      },
      JSON.stringify(path),
    );
  }
});

Deno.test("basePath must be a folder inside the agent folder", () => {
  assert.equal(promptRoot(AGENT, "prompts"), ROOT);
  assert.equal(promptRoot(AGENT, "."), AGENT);
  for (const basePath of ["..", "../other", "/etc"]) {
    assert.throws(
      () => promptRoot(AGENT, basePath),
      {
        name: "PromptPathError",
        message: `Invalid basePath ${
          JSON.stringify(basePath)
        }: it must be a folder inside the agent folder ${AGENT}.`,
      },
    );
  }
});

Deno.test("isWithin: the root itself and below only", () => {
  assert.equal(isWithin("/a/b", "/a/b"), true);
  assert.equal(isWithin("/a/b", "/a/b/c/d"), true);
  assert.equal(isWithin("/a/b", "/a/bc"), false);
  assert.equal(isWithin("/a/b", "/a"), false);
  assert.equal(isWithin("/a/b", "/a/b/../c"), false);
  assert.equal(isWithin("/a/b", "/a/b/..foo"), true, "a name starting with '..' is a child");
});
