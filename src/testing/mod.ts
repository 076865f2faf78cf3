/**
 * `@stepflow/core/testing`: agents tested like code in `deno test`. Run an agent on a script or a
 * recorded run ({@linkcode runAgentForTest}), assert on the path it took, the intents, handoff,
 * tool calls and output, and keep its prompts as golden files. See docs/testing.md.
 *
 * @example
 * ```ts
 * import { assertCompleted, assertPath, runAgentForTest } from "./mod.ts";
 *
 * Deno.test("haiku: a weak draft is redrafted once", async () => {
 *   const run = await runAgentForTest({
 *     agent: "haiku",
 *     script: ".agent/haiku/demo.script.yaml",
 *     args: { topic: "autumn" },
 *   });
 *   assertCompleted(run);
 *   assertPath(run, ["draft.haiku", "draft.haiku"]);
 * });
 * ```
 *
 * @module
 */
export {
  type RecordedEvent,
  runAgentForTest,
  type TestCall,
  type TestRun,
  type TestRunOptions,
  type TestToolCall,
} from "./run.ts";
export {
  type AnsweredRun,
  answerWaits,
  type AnswerWaitsOptions,
  type ScriptAnswer,
} from "./answers.ts";
export {
  assertCompleted,
  assertHandoff,
  assertIntents,
  assertNoToolCall,
  assertOutput,
  assertPath,
  assertToolCall,
  formatPath,
  type SafeParseSchema,
  type ToolCallMatch,
} from "./assertions.ts";
export {
  assertGoldenPrompts,
  type GoldenOptions,
  UPDATE_GOLDEN_ENV,
  UPDATE_GOLDEN_FLAG,
} from "./golden.ts";
export { type ReplayDrift, type ReplayMode } from "../llm/replay.ts";
