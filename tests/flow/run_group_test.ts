/**
 * `RunOptions.group` through the real runner over a real agent folder: recorded in the run's
 * checkpoint and listing from its start, kept by a redrive (which ignores another group), and
 * refused with `RUN_GROUP_INVALID` before anything is recorded.
 */
import assert from "node:assert/strict";
import { StepflowError } from "../../src/errors.ts";
import { demoProject, runFlow } from "../ui/fixtures.ts";

Deno.test("run group: recorded from the start, listed, kept by a redrive", async () => {
  const project = await demoProject();
  const failed = await runFlow(project, { runId: "g1", group: "batch-1", failAt: 1 });
  assert.equal(failed.completionReason, "step_failed");
  assert.equal((await project.store.loadCheckpoint("g1"))?.state.group, "batch-1");
  await runFlow(project, { runId: "other" });
  const listed = await project.store.list();
  assert.deepEqual(listed.map((r) => [r.runId, r.group]), [["other", undefined], [
    "g1",
    "batch-1",
  ]]);
  const redriven = await runFlow(project, { redrive: "g1", group: "another", continuations: 1 });
  assert.equal(redriven.completionReason, "completed");
  assert.equal((await project.store.loadCheckpoint("g1"))?.state.group, "batch-1");
});

Deno.test("run group: a group outside the safe alphabet or too long is refused before the run is recorded", async () => {
  const project = await demoProject();
  for (const group of ["<script>", "", "a b", "-x", "g".repeat(65), "../x"]) {
    await assert.rejects(
      () => runFlow(project, { runId: "bad", group }),
      (error: unknown) =>
        error instanceof StepflowError && error.code === "RUN_GROUP_INVALID" &&
        /RunOptions\.group/.test(error.message),
      JSON.stringify(group),
    );
  }
  assert.deepEqual(await project.store.list(), []);
  await runFlow(project, { runId: "ok", group: "g".repeat(64) });
  assert.equal((await project.store.list())[0].group, "g".repeat(64));
});
