/**
 * A real run of the release-train example (an agent step running release-approval as a child
 * run), made by the real runner with the example's scripted backend into a temp project's file
 * store: for the dashboard tests of nested child runs.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { loadScriptFile } from "../../src/llm/script_file.ts";
import type { FileRunStore } from "../../src/store/file.ts";
import { runStoreFor } from "../../src/store/location.ts";
import { REPO_ROOT } from "../definition/fixtures.ts";

/**
 * A temp project holding both example agents, and a finished release-train run: the parent in
 * `storeDir` (release-train's folder), its child, a run of release-approval, in `childStoreDir`.
 */
export async function releaseTrainRun(): Promise<
  { root: string; parentId: string; childId: string; storeDir: string; childStoreDir: string }
> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-train-" });
  for (const name of ["release-train", "release-approval"]) {
    await cp(join(REPO_ROOT, ".agent", name), join(root, ".agent", name), { recursive: true });
  }
  const definition = await loadAgentDefinition("release-train", { cwd: root });
  const backend = await loadScriptFile(join(root, ".agent", "release-train", "demo.script.yaml"));
  const store = runStoreFor(definition, { cwd: root, durability: "process" });
  const child = await loadAgentDefinition("release-approval", { cwd: root });
  const runner = new StepFlowRunner(definition, { backend, store });
  const first = await runner.run({ args: { train: "november" }, cwd: root });
  assert.equal(first.completionReason, "waiting");
  const done = await runner.answer(first.runId, { decision: "next", note: "smooth" });
  assert.equal(done.completionReason, "completed", JSON.stringify(done.error));
  return {
    root,
    parentId: first.runId,
    childId: first.waiting!.child!.runId,
    storeDir: store.dir,
    childStoreDir: (store.forAgent(child) as FileRunStore).dir,
  };
}
