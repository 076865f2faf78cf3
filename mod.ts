/**
 * stepflow — run LLM agents as declarative step flows.
 *
 * @example
 * ```ts ignore
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 *
 * const definition = await loadAgentDefinition("code-improver");
 * const runner = new StepFlowRunner(definition);
 * const result = await runner.run({ args: { topic: "Refactoring authentication module" }, cwd: Deno.cwd() });
 * console.log(result.success, result.finalStepId, result.completionReason);
 * ```
 *
 * @module
 */

export { errorMessage, StepflowError, UsageError } from "./src/errors.ts";
export * from "./src/events/mod.ts";
export * from "./src/llm/mod.ts";
export {
  ANSWER_EXCERPT_CHARS,
  type AnswerReading,
  type AnswerRejection,
  askStructured,
  type AskStructuredBaseOptions,
  type AskStructuredOptions,
  type AskStructuredResult,
  MAX_OUTPUT_DEPTH,
  type ReaskInfo,
  type TextExcerpt,
} from "./src/engine/mod.ts";
export * from "./src/store/mod.ts";
export * from "./src/prompt/mod.ts";
// -- definition exports (owned by the definition work) --
export * from "./src/definition/mod.ts";
// -- flow exports (owned by the runner work) --
export * from "./src/flow/mod.ts";
// -- backend exports (owned by the real-backends work) --
// -- durable-run exports (owned by the durable-runs work) --
export { SPAN_ATTRIBUTES, TRACER_NAME, tracingEnabled } from "./src/flow/telemetry.ts";
