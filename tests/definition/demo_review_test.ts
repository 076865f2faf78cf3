import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { loadScriptFile } from "../../src/llm/script_file.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { MemoryRunStore } from "../../src/store/memory.ts";
import { REPO_ROOT } from "./fixtures.ts";

Deno.test("review-files demo: the fan-out runs the tool-using file-reviewer once per file, three at once; every scripted answer is used", async () => {
  const cwd = await Deno.makeTempDir({ prefix: "stepflow_review_demo_" });
  for (const agent of ["review-files", "file-reviewer"]) {
    await cp(join(REPO_ROOT, ".agent", agent), join(cwd, ".agent", agent), { recursive: true });
  }
  const definition = await loadAgentDefinition("review-files", { cwd });
  const backend = await loadScriptFile(join(cwd, ".agent", "review-files", "demo.script.yaml"));
  assert.ok(backend instanceof ScriptedBackend);
  let most = 0;
  const result = await new StepFlowRunner(definition, {
    backend,
    store: new MemoryRunStore(),
    events: { onFanOut: (_info, report) => void (most = Math.max(most, report.running)) },
  }).run({ cwd });
  assert.equal(result.completionReason, "completed", JSON.stringify(result.error));
  assert.equal(backend.remaining(), 0, "every scripted answer is used");
  const { results, counts } = result.state.handoff["review.each"] as {
    results: { item: { path: string }; output: { verdict: string } }[];
    counts: unknown;
  };
  assert.deepEqual(counts, { total: 4, completed: 4, failed: 0 });
  assert.deepEqual(results.map((r) => [r.item.path, r.output.verdict]), [
    ["tmp/review-demo/sum.ts", "request changes"],
    ["tmp/review-demo/greet.ts", "approve"],
    ["tmp/review-demo/port.ts", "request changes"],
    ["tmp/review-demo/slug.ts", "approve"],
  ]);
  assert.equal(most, 3, "three reviewers at once");
  // Each child read its own file with the Read tool (the sample the parent wrote).
  const reads = backend.toolTurns.flatMap((t) => {
    const last = t.messages.at(-1)!;
    return last.role === "tool" ? last.results.filter((r) => r.name === "Read") : [];
  });
  assert.equal(reads.length, 4);
  assert.ok(reads.every((r) => !r.isError), JSON.stringify(reads));
  assert.ok(reads.some((r) => r.content.includes("i <= xs.length")));
  assert.match(String((result.output as { summary: string }).summary), /2 of 4 files may ship/);
});
