/**
 * The loaded, normalised form of an agent: what `loadAgentDefinition` returns and the runner reads.
 *
 * @module
 */
import type { PromptReference } from "../prompt/c3l_path.ts";
import type {
  AgentConfig,
  CheckDefinition,
  ModelPricing,
  ModelSetting,
  OutputSchemaRef,
  RunBudget,
  StepDefinition,
  StepsRegistry,
  StepValidation,
  StructuredGate,
  WaitTimeout,
} from "./schema.ts";

/** What happens when a step's execution fails (docs/runner.md, "Error policies"). */
export type ErrorPolicy =
  | { kind: "fail" }
  | { kind: "continue" }
  | { kind: "retry"; count: number }
  | { kind: "jump"; target: string };

/** What a fan-out step does when one of its children fails (`onItemError`, docs/agents.md). */
export type ItemErrorPolicy =
  | { kind: "fail" }
  | { kind: "continue" }
  | { kind: "retry"; count: number };

/**
 * How a step routes: `check` (check-gated), `gate` (gate-routed), `closing`
 * (`complete.*`: runs once, then the run ends), `section` (`section.*`: a template, never run) or
 * `command` (`"kind": "command"`: runs an allowed command instead of the model) or `input`
 * (`"kind": "input"`: the run waits for a person's answer, then routes on it as a gate-routed step)
 * or `agent` (`"kind": "agent"`: another agent runs the sub-task as a child run).
 */
export type StepKind = "check" | "gate" | "closing" | "section" | "command" | "input" | "agent";

/** A step with every default applied and its prompt reference normalised. */
export interface FlowStep {
  /** The step id (its key in the registry). */
  id: string;
  /** Display name: `name`, else the id. */
  name: string;
  /** How it routes. */
  kind: StepKind;
  /** Its prompt (C3L or path); sections may have none. */
  prompt?: PromptReference;
  /** The built-in fallback prompt's key, used only with `allowFallback`. */
  fallbackKey?: string;
  /** `iterations` with defaults `{ min: 1, max: 1 }`. */
  iterations: { min: number; max: number };
  /** Check definition of a check-gated step. */
  check?: CheckDefinition;
  /** Structured gate of a gate-routed (or closing) step. */
  gate?: StructuredGate;
  /** Transitions by intent (empty object when none). */
  transitions: Readonly<Record<string, { target: string }>>;
  /** Output schema reference. */
  outputSchemaRef?: OutputSchemaRef;
  /** Parsed `onError` (default `fail`). */
  onError: ErrorPolicy;
  /** Per-step model override: a model, or a fallback chain. */
  model?: ModelSetting;
  /** Per-step tool list (overrides the agent's). */
  allowedTools?: string[];
  /** Per-step refused tool rules (added to the agent's). */
  disallowedTools?: string[];
  /** Per-step permission mode (overrides the agent's). */
  permissionMode?: string;
  /** Per-step timeout of one backend call. */
  timeoutMs?: number;
  /** Command step: the name in agent.json `commands`. */
  command?: string;
  /** Validators run after the step's answer. */
  validation?: StepValidation;
  /** Input step: the wait's limit and the intent taken when it passes. */
  waitTimeout?: WaitTimeout;
  /** Agent step: the child agent as written (`agent`). */
  agent?: string;
  /** Agent step: the child's parameters as written (`args`). */
  args?: Readonly<Record<string, unknown>>;
  /** Agent step: paths in the child's final output handed off under the step. */
  handoffFields?: readonly string[];
  /** Agent step: the child agent, loaded with the parent (set by `loadAgentDefinition`). */
  child?: AgentDefinition;
  /**
   * Fan-out step (an agent step with `forEach`): the array the child runs over, as written
   * (`{handoff.<key>}` or `{uv-<name>}`).
   */
  forEach?: string;
  /** Fan-out step: children in flight at once (`concurrency`, default 4). */
  concurrency?: number;
  /** Fan-out step: parsed `onItemError` (default `fail`). */
  onItemError?: ItemErrorPolicy;
  /** Fan-out step: the most items it takes (`maxItems`, default 1,000). */
  maxItems?: number;
  /** The step exactly as written. */
  raw: StepDefinition;
}

/** Resolved run limits. */
export interface AgentLimits {
  /** Upper bound on iterations (default 100). */
  maxTotalIterations: number;
  /** Default timeout of one backend call, when set. */
  stepTimeoutMs?: number;
  /** Timeout of the whole run, when set. */
  runTimeoutMs?: number;
  /** The hard budget (`limits.budget`), when set. */
  budget?: RunBudget;
}

/** agent.json `pricing` as loaded: the prices and where they came from (named in run logs). */
export interface AgentPricing {
  /** `<agent folder>/agent.json pricing`, or the file it names. */
  source: string;
  /** Prices by model name. */
  prices: Readonly<Record<string, ModelPricing>>;
}

/** A loaded agent (deeply frozen by `loadAgentDefinition`). */
export interface AgentDefinition {
  /** agent.json `name`. */
  name: string;
  /** Absolute agent folder. */
  dir: string;
  /** Absolute path of agent.json. */
  agentFile: string;
  /** agent.json as parsed. */
  agent: AgentConfig;
  /** Absolute path of the registry file. */
  registryFile: string;
  /** The registry as parsed. */
  registry: StepsRegistry;
  /** Prompt root relative to the agent folder (`basePath`, default `prompts`). */
  basePath: string;
  /** Every step, normalised, keyed by id. */
  steps: Readonly<Record<string, FlowStep>>;
  /** The entry step for the agent's completionType. */
  entryStepId: string;
  /** Resolved limits. */
  limits: AgentLimits;
  /** agent.json `pricing`, read and checked (the prices over the built-in table). */
  pricing?: AgentPricing;
  /** Load-time warnings (unreachable steps, no path to completion, …). */
  warnings: readonly string[];
}
