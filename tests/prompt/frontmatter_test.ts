import assert from "node:assert/strict";
import { StepflowError } from "../../src/errors.ts";
import { splitFrontmatter } from "../../src/prompt/frontmatter.ts";

Deno.test("a leading YAML frontmatter block is parsed and removed", () => {
  const { attributes, body } = splitFrontmatter(
    "---\ntitle: Analyze\ntags: [a, b]\n---\n# Body\n---\nnot frontmatter\n",
  );
  assert.deepEqual(attributes, { title: "Analyze", tags: ["a", "b"] });
  assert.equal(body, "# Body\n---\nnot frontmatter\n");
});

Deno.test("CRLF line ends, a BOM and an empty block are handled", () => {
  assert.deepEqual(splitFrontmatter("\uFEFF---\r\ntitle: x\r\n---\r\nBody"), {
    attributes: { title: "x" },
    body: "Body",
  });
  assert.deepEqual(splitFrontmatter("---\n\n---\nBody"), { attributes: {}, body: "Body" });
  assert.deepEqual(splitFrontmatter("---\ntitle: only\n---"), {
    attributes: { title: "only" },
    body: "",
  });
});

Deno.test("text without a leading block is returned unchanged (a BOM is dropped)", () => {
  for (const text of ["# Title\n---\na: 1\n---\n", " ---\na: 1\n---\nx", "plain {uv-topic}"]) {
    assert.deepEqual(splitFrontmatter(text), { attributes: {}, body: text });
  }
  assert.deepEqual(splitFrontmatter("\uFEFFHello"), { attributes: {}, body: "Hello" });
});

Deno.test("a frontmatter that is not a mapping gives no attributes but is still removed", () => {
  assert.deepEqual(splitFrontmatter("---\n- a\n- b\n---\nBody"), { attributes: {}, body: "Body" });
});

Deno.test("invalid YAML is an error naming the file", () => {
  assert.throws(
    () => splitFrontmatter("---\ntitle: [unclosed\n---\nBody", "/p/prompts/x.md"),
    (error: unknown) => {
      assert.ok(error instanceof StepflowError);
      assert.equal(error.code, "PROMPT_FRONTMATTER_INVALID");
      assert.match(error.message, /^Invalid YAML frontmatter in \/p\/prompts\/x\.md: /);
      assert.match(error.message, /Fix the block between the leading "---" lines\.$/);
      return true;
    },
  );
});
