/**
 * QPlan scripts (seed 000): a small step-based language for AI-written plans, run on stepflow's
 * tool registry, LLM backends and event vocabulary.
 *
 * - {@linkcode runScript} parses, validates and runs a script and reports how it ended;
 * - {@linkcode validateScript} checks one without running it;
 * - {@linkcode buildScriptPrompt} teaches an LLM the grammar and the available modules;
 * - {@linkcode createQPlanRegistry} registers the QPlan modules as tools.
 *
 * The front end (tokenizer, parser, validator), the step system (`step/`: types, parser,
 * resolver, controller, events) and the AST executor are exported for tools built on top.
 *
 * @example
 * ```ts
 * import { createQPlanRegistry, runScript } from "@stepflow/core/qplan";
 *
 * const result = await runScript(`
 * step id="calc" desc="Compute the average" {
 *   var [3, 5, 10] -> scores
 *   math avg arr=scores -> mean
 *   return mean=mean
 * }`, { registry: createQPlanRegistry() });
 * console.log(result.status, result.results.calc); // completed { mean: 6 }
 * ```
 *
 * @module
 */

// The shared contracts that appear in this module's signatures.
export { StepflowError } from "../errors.ts";
export type { ToolDescriptor } from "../tools/registry.ts";
export type { ToolContext } from "../tools/types.ts";
export type { EventName, ExecutorEvents, RunContext, RunState, StepInfo } from "../events/types.ts";
export type {
  LlmBackend,
  LlmCallOptions,
  LlmRequest,
  LlmRequestKind,
  LlmResponse,
  LlmUsage,
} from "../llm/types.ts";
export type { RetryInfo } from "../llm/retry.ts";

export * from "./run_script.ts";
export * from "./validate_script.ts";
export * from "./prompt.ts";
export * from "./progress.ts";

export * from "./core/ast.ts";
export * from "./core/tokenizer.ts";
export * from "./core/parser.ts";
export * from "./core/errors.ts";
export * from "./core/validator.ts";
export * from "./core/evaluate.ts";
export * from "./core/execution_context.ts";
export * from "./core/executor.ts";
export * from "./core/arg_check.ts";
export * from "./core/tool_types.ts";
export * from "./core/run_control.ts";
export * from "./core/future.ts";

export * from "./step/step_types.ts";
export * from "./step/step_parser.ts";
export * from "./step/step_resolver.ts";
export * from "./step/step_controller.ts";
export * from "./step/step_events.ts";
export * from "./step/step_signals.ts";

export {
  CORE_MODULES,
  createQPlanRegistry,
  type QPlanRegistryOptions,
} from "./modules/registry.ts";
export { ModuleArgumentError } from "./modules/values.ts";
