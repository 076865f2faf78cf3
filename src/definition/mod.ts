/**
 * Agent definitions: the `agent.json` / `steps_registry.json` file formats, `loadAgentDefinition`,
 * load-time flow validation, the flow graph (Mermaid) and the generated JSON Schemas.
 *
 * @example
 * ```ts ignore
 * import { flowToMermaid, loadAgentDefinition } from "./mod.ts";
 * const definition = await loadAgentDefinition("issue-solver");
 * console.log(definition.entryStepId, definition.warnings);
 * console.log(flowToMermaid(definition));
 * ```
 *
 * @module
 */
// Re-exported so this module's API is complete on its own (its errors extend StepflowError).
export { StepflowError } from "../errors.ts";
export type { C3lRef, PathRef, PromptReference } from "../prompt/c3l_path.ts";
export {
  type AgentConfig,
  type C3lPromptRef,
  type CheckDefinition,
  type CommandSpec,
  type CompletionCondition,
  GATE_INTENTS,
  type GateIntent,
  type OnErrorValue,
  type OnFail,
  type OnPass,
  type OutputSchemaRef,
  type ParameterDefinition,
  type PathPromptRef,
  type PromptRef,
  type StepDefinition,
  type StepsRegistry,
  type StepValidation,
  type StepValidator,
  type StructuredGate,
} from "./schema.ts";
export {
  checkParameters,
  parameterFlag,
  type ParameterValue as ParsedParameterValue,
  parseParameterText,
  RESERVED_PARAMETER_FLAGS,
} from "./parameters.ts";
export * from "./types.ts";
export * from "./normalize.ts";
export * from "./jsonc.ts";
export * from "./output_schema.ts";
export * from "./step_id.ts";
export * from "./errors.ts";
export * from "./load.ts";
export * from "./validate.ts";
export * from "./edges.ts";
export * from "./graph.ts";
export * from "./json_schemas.ts";
