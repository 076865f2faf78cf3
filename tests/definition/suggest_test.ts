import assert from "node:assert/strict";
import { closestMatch } from "../../src/definition/suggest.ts";
import { copyExample, loadFails } from "./fixtures.ts";

Deno.test("did-you-mean: only for real typos", () => {
  assert.equal(closestMatch("nxt", ["next", "complete"]), "next");
  assert.equal(closestMatch("compelte", ["next", "complete"]), "complete");
  assert.equal(closestMatch("lst", ["list", "init"]), "list");
  assert.equal(closestMatch("my-agnet", ["my-agent", "other"]), "my-agent");
  assert.equal(closestMatch("allowdIntnts", ["allowedIntents"]), "allowedIntents");
  // A different word, not a typo: no suggestion.
  assert.equal(closestMatch("stepKind", ["stepId", "name", "c2", "c3"]), undefined);
  assert.equal(closestMatch("c4", ["c1", "c2", "c3"]), undefined);
  assert.equal(closestMatch("model", ["mode"]), "mode");
  assert.equal(closestMatch("verbose", ["version"]), undefined);
});

Deno.test('unknown key "stepKind" gets no "did you mean stepId"', async () => {
  const agent = await copyExample("issue-solver", (r) => {
    r.steps["initial.issue"].stepKind = "gate";
  });
  const error = await loadFails(agent);
  assert.equal(error.problems.length, 1, error.problems.join("\n"));
  assert.match(error.problems[0], /unknown key "stepKind"/);
  assert.doesNotMatch(error.problems[0], /did you mean/);
});
