/**
 * stepflow — run LLM agents as declarative step flows.
 *
 * This entry point holds what a program that runs agents needs, and nothing more: loading agent
 * definitions, the runner with its options and result, the events a handler receives, the error
 * classes, and the contract a backend implements. Everything else has an entry point of its own:
 *
 * | Entry point                 | What it holds                                                       |
 * | --------------------------- | ------------------------------------------------------------------- |
 * | `@stepflow/core/llm`        | the backends (scripted, replay, Anthropic, OpenAI, Claude Code), the factory, retries, prices |
 * | `@stepflow/core/store`      | the run stores (memory, file, PostgreSQL), choosing one, printing recorded runs |
 * | `@stepflow/core/definition` | the `agent.json` / `steps_registry.json` formats, `validateFlow`, `flowToMermaid`, the JSON Schemas |
 * | `@stepflow/core/runner`     | the runner's detail types (history, permission asks, child runs) and its OpenTelemetry names |
 * | `@stepflow/core/events`     | every event payload a handler may receive                           |
 * | `@stepflow/core/ui`         | the local web dashboard: run it, or serve it from your program      |
 * | `@stepflow/core/testing`    | agents tested in `deno test`: run on a script, assert on the path   |
 * | `@stepflow/core/cli`        | the `stepflow` command as a library                                 |
 * | `@stepflow/core/plan`, `/planspec`, `/qplan`, `/worker` | tool plans, PlanSpec, QPlan, scale-out workers |
 *
 * @example Run an agent
 * ```ts ignore
 * import { loadAgentDefinition, StepFlowRunner } from "jsr:@stepflow/core";
 *
 * const definition = await loadAgentDefinition("code-improver");
 * const runner = new StepFlowRunner(definition);
 * const result = await runner.run({ args: { topic: "Refactoring authentication module" }, cwd: Deno.cwd() });
 * console.log(result.success, result.finalStepId, result.completionReason);
 * ```
 *
 * @example Catch what went wrong by its stable code
 * ```ts
 * import { loadAgentDefinition, StepflowError } from "jsr:@stepflow/core";
 *
 * try {
 *   await loadAgentDefinition("no-such-agent", { cwd: Deno.cwd() });
 * } catch (error) {
 *   if (error instanceof StepflowError) console.error(error.code, error.message);
 *   else throw error;
 * }
 * ```
 *
 * @module
 */

// Loading: find, list and load agent definitions.
export {
  type AgentDefinition,
  type AgentSummary,
  listAgents,
  loadAgentDefinition,
  type LoadAgentOptions,
} from "./src/definition/mod.ts";

// The runner, its options and its result.
export {
  type AnswerOptions,
  type CompletionReason,
  type PendingInput,
  type RunHandle,
  type RunOptions,
  type RunUsage,
  type StepFlowResult,
  StepFlowRunner,
  type StepFlowRunnerOptions,
} from "./src/flow/mod.ts";

// Events: what a handler passed as `events` receives (every payload: `@stepflow/core/events`).
export {
  EVENT_NAMES,
  type EventName,
  type ExecutorEvents,
  type RunContext,
  type StepInfo,
  type ToolCallEvent,
} from "./src/events/mod.ts";

// The backend contract (the backends themselves: `@stepflow/core/llm`), and reading the JSON of an
// answer the one way the engines read it, for a program that calls a backend itself.
export type {
  LlmBackend,
  LlmCallOptions,
  LlmRequest,
  LlmResponse,
  LlmUsage,
} from "./src/llm/mod.ts";
export {
  type AnswerReading,
  type AnswerRejection,
  readJsonAnswer,
} from "./src/engine/ask_structured.ts";

// Errors: the base class with its stable `code` (one of the listed codes), the helper that prints
// any thrown value, and the classes a run or a load throws.
export {
  errorMessage,
  type KnownCode,
  StepflowError,
  type StepflowErrorCode,
  UsageError,
} from "./src/errors.ts";
export { ERROR_CODES, type ErrorCodeOf, type ErrorModule } from "./src/error_codes.ts";
export {
  AgentDefinitionError,
  AgentNotFoundError,
  JsonParseError,
  SchemaResolutionError,
} from "./src/definition/mod.ts";
export { BackendError } from "./src/llm/mod.ts";
export { MissingVariablesError, PromptNotFoundError, PromptPathError } from "./src/prompt/mod.ts";
// A library error's next step as data (`details.next`: `{ action: "resume", runId }`), and the
// renderer a formatter takes to print one (`commandLine` of `@stepflow/core/cli` is the CLI's).
export type { CommandRenderer, NextStep, StepflowAction } from "./src/invocation.ts";
