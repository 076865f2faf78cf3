/**
 * `@stepflow/core/definition`: agent definitions in detail. The `agent.json` /
 * `steps_registry.json` file formats as types, load-time flow validation
 * ({@linkcode validateFlow}), the flow graph as Mermaid ({@linkcode flowToMermaid}) and the
 * generated JSON Schemas. Loading ({@linkcode loadAgentDefinition}, {@linkcode listAgents}) is in
 * the root entry point too. Normalising, step ids, JSON-with-comments parsing and output-schema
 * resolution are the loader's business and stay in their files.
 *
 * @example Draw an agent's flow
 * ```ts
 * import { loadAgentDefinition } from "jsr:@stepflow/core";
 * import { flowToMermaid } from "jsr:@stepflow/core/definition";
 *
 * const definition = await loadAgentDefinition("issue-solver");
 * console.log(definition.entryStepId, definition.warnings);
 * console.log(flowToMermaid(definition));
 * ```
 *
 * @module
 */
export {
  type AgentConfig,
  type C3lPromptRef,
  type CheckDefinition,
  type CommandSpec,
  type CompletionCondition,
  GATE_INTENTS,
  type GateIntent,
  type ModelChainEntry,
  type ModelOnBackend,
  type ModelSetting,
  type OnErrorValue,
  type OnFail,
  type OnPass,
  type OutputSchemaRef,
  type ParameterDefinition,
  type PathPromptRef,
  type PromptRef,
  type RunBudget,
  type StepDefinition,
  type StepsRegistry,
  type StepValidation,
  type StepValidator,
  type StructuredGate,
  type WaitTimeout,
} from "./schema.ts";
export type {
  AgentDefinition,
  AgentLimits,
  AgentPricing,
  ErrorPolicy,
  FlowStep,
  ItemErrorPolicy,
  StepKind,
} from "./types.ts";
export {
  type AgentSummary,
  listAgents,
  loadAgentDefinition,
  type LoadAgentOptions,
} from "./load.ts";
export {
  type FlowValidationInput,
  type FlowValidationOptions,
  type FlowValidationResult,
  validateFlow,
} from "./validate.ts";
export { type FlowGraphSource, flowToMermaid } from "./graph.ts";
export { generateSchemas } from "./json_schemas.ts";
export { AgentDefinitionError, AgentNotFoundError } from "./errors.ts";
export { JsonParseError } from "./jsonc.ts";
export { SchemaResolutionError } from "./output_schema.ts";
// The base class of this module's errors, and the prompt references a step carries.
export { StepflowError } from "../errors.ts";
export type { C3lRef, PathRef, PromptReference } from "../prompt/c3l_path.ts";
