// A recorded run of the haiku agent, replayed and asserted as docs/testing.md shows it.
import {
  assertCompleted,
  assertGoldenPrompts,
  assertIntents,
  assertPath,
  runAgentForTest,
} from "../../src/testing/mod.ts"; // in your project: "jsr:@stepflow/core/testing"

const recording = new URL("./recordings/haiku.replay.yaml", import.meta.url);

Deno.test("haiku: a weak first draft is redrafted, then accepted", async () => {
  const run = await runAgentForTest({
    agent: "haiku",
    script: recording,
    args: { topic: "autumn" },
  });
  assertCompleted(run);
  assertPath(run, ["draft.haiku", "draft.haiku"]);
  assertIntents(run, [undefined, undefined]); // a check-gated step routes on its check, not intents
  await assertGoldenPrompts(run, new URL("./golden/haiku/", import.meta.url));
});
