/**
 * The engine kit: the parts the four engines (the step-flow runner, the PlanSpec runner, tool
 * plans, QPlan) share and that call a model or drive a step — the one structured-output path with
 * its one re-ask prompt, the one renderer of the built-in prompt templates, and the one `onError`
 * grammar, with each engine's accepted subset as data.
 *
 * @example
 * ```ts
 * import { askStructured, parseOnErrorPolicy, PLAN_ON_ERROR } from "./mod.ts";
 * import { ScriptedBackend } from "../llm/scripted.ts";
 * const backend = new ScriptedBackend(['{"answer": 42}']);
 * const asked = await askStructured({
 *   request: { kind: "step", agent: "demo", stepId: "ask", iteration: 1, prompt: "Answer.", cwd: "." },
 *   call: (request) => backend.complete(request),
 *   validate: () => [],
 * });
 * console.log(asked.ok); // true
 * console.log(parseOnErrorPolicy("retry=2", PLAN_ON_ERROR)); // { kind: "retry", count: 2 }
 * ```
 *
 * @module
 */
export {
  FLOW_ON_ERROR,
  type OnErrorDialect,
  type OnErrorForm,
  type OnErrorPolicy,
  onErrorTextPattern,
  parseOnErrorPolicy,
  PLAN_ON_ERROR,
  QPLAN_ON_ERROR,
} from "../on_error.ts";
export {
  ANSWER_EXCERPT_CHARS,
  type AnswerReading,
  type AnswerRejection,
  type AnswerSchema,
  askStructured,
  type AskStructuredBaseOptions,
  type AskStructuredOptions,
  type AskStructuredResult,
  boundDepth,
  exceedsDepth,
  excerpt,
  EXPECTED_JSON,
  judgeAnswer,
  MAX_ERRORS_SHOWN,
  MAX_OUTPUT_DEPTH,
  PROMPT_EXCERPT_CHARS,
  readJsonAnswer,
  readSchemaAnswer,
  type ReaskInfo,
  reaskPrompt,
  rejectAnswer,
  SCHEMA_MISMATCH,
  type SchemaAnswerOptions,
  type TextExcerpt,
} from "./ask_structured.ts";
export { readBuiltinPrompt, renderPromptTemplate } from "./prompt_template.ts";
// The backend contract's types that appear in these signatures.
export type { LlmRequest, LlmRequestKind, LlmResponse, LlmUsage } from "../llm/types.ts";
