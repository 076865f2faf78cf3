/**
 * QPlan scripts (docs/qplan.md): a small step-based language for AI-written plans, run on
 * stepflow's tool registry, LLM backends and event vocabulary.
 *
 * - {@linkcode runScript} parses, validates and runs a script and reports how it ended;
 * - {@linkcode validateScript} checks one without running it;
 * - {@linkcode buildScriptPrompt} teaches an LLM the grammar and the available modules;
 * - {@linkcode createQPlanRegistry} registers the QPlan modules as tools.
 *
 * The front end (tokenizer, parser, validator), the step system (`step/`: types, resolver,
 * controller, events) and the AST executor are exported for tools built on top; their helpers
 * (identifier scanning, frames, control-flow signals, argument checkers) stay in their files.
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
export type { PathGuard, ReachedPath, ToolContext } from "../tools/types.ts";
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

export {
  type RunError,
  runScript,
  type RunScriptOptions,
  type RunScriptResult,
} from "./run_script.ts";
export {
  renderIssues,
  type ScriptValidation,
  validateScript,
  type ValidateScriptOptions,
} from "./validate_script.ts";
export { buildScriptPrompt, extractScript, type ScriptPromptOptions } from "./prompt.ts";
export { createProgressPrinter, type ProgressOptions } from "./progress.ts";

// The layers, for tools built on top: tokenizer, parser and AST, validator, step system, executor.
export type {
  ActionArg,
  ActionStatement,
  ArrayExpr,
  BinaryExpr,
  BinaryOperator,
  ControlStatement,
  EachStatement,
  ExistsExpr,
  Expr,
  IfStatement,
  JumpStatement,
  LiteralExpr,
  ObjectExpr,
  ParallelStatement,
  PathExpr,
  PathSegment,
  PlaceholderStatement,
  PlanMetaEntry,
  PrintItem,
  ReturnEntry,
  ReturnStatement,
  Script,
  SetStatement,
  SourcePosition,
  Statement,
  UnaryExpr,
  VarStatement,
  WhileStatement,
} from "./core/ast.ts";
export { type Token, tokenize, type TokenType } from "./core/tokenizer.ts";
export { parseExpression, parseScript } from "./core/parser.ts";
export { QPlanRuntimeError, QPlanSyntaxError, renderCaret } from "./core/errors.ts";
export { validateAst, type ValidateAstOptions, type ValidationIssue } from "./core/validator.ts";
export { ExpressionError } from "./core/evaluate.ts";
export type {
  ExecutionContext,
  Frame,
  QPlanToolContext,
  ToolContextBase,
} from "./core/execution_context.ts";
export {
  type ApproveTool,
  Executor,
  type ExecutorOptions,
  type MaybePromise,
} from "./core/executor.ts";
export type {
  ArgIssue,
  ArgParseResult,
  ArgSchema,
  QPlanTool,
  QPlanToolRegistry,
} from "./core/tool_types.ts";
export { RunControl, RunSupervisor, type SupervisorOptions } from "./core/run_control.ts";
export { QPlanFuture } from "./core/future.ts";
export type {
  EntryHop,
  ResolvedStep,
  StepAttribute,
  StepErrorPolicy,
  StepNode,
  StepResolution,
  StepResolutionIssue,
} from "./step/step_types.ts";
export { resolveSteps } from "./step/step_resolver.ts";
export type { AbortedSignal, FlowSignal, JumpSignal } from "./step/step_signals.ts";
export { type StepBody, StepController, type StepFailure } from "./step/step_controller.ts";
export type {
  QPlanPlanInfo,
  QPlanRunContext,
  QPlanRunStatus,
  QPlanStepInfo,
  StepEvents,
} from "./step/step_events.ts";

export {
  CORE_MODULES,
  createQPlanRegistry,
  type QPlanRegistryOptions,
} from "./modules/registry.ts";
export { ModuleArgumentError } from "./modules/values.ts";
