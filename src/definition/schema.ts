/**
 * zod schemas of `agent.json` and `steps_registry.json` — the single source of truth for their types.
 * The JSON Schemas in `agents/schemas/` are generated from these (`deno task schemas`).
 *
 * The exported types are plain interfaces so the public API (and JSR's no-slow-types rule) never
 * mentions zod; each one is checked at compile time to be exactly `z.infer` of its schema, so the
 * schemas stay the single source of truth and the two cannot drift.
 *
 * The schemas describe the file shapes only; cross-step rules (targets exist, prompts exist, …) are
 * load-time validation in `validate.ts`, so that every problem is reported at once.
 *
 * @module
 */
import { z } from "zod";
import type { Exactly } from "../type_equality.ts";
import { STEP_ID_SOURCE } from "./step_id.ts";
import { FLOW_ON_ERROR, onErrorTextPattern } from "../on_error.ts";
import { FAN_OUT_FIELDS } from "./fan_out_schema.ts";
import {
  type ModelPricing,
  PriceListSchema,
  type RunBudget,
  RunBudgetSchema,
} from "./budget_schema.ts";

import { type ModelSetting, ModelSettingSchema } from "./model_setting_schema.ts";

// The model, budget and price schemas live beside this file; agent.json's users import them from
// here.
export {
  type ModelChainEntry,
  ModelChainEntrySchema,
  type ModelOnBackend,
  ModelOnBackendSchema,
  type ModelSetting,
  ModelSettingSchema,
} from "./model_setting_schema.ts";
export {
  type ModelPricing,
  ModelPricingSchema,
  PriceListSchema,
  type RunBudget,
  RunBudgetSchema,
} from "./budget_schema.ts";

/** Intents a structured gate routes on (docs/agents.md). */
export const GATE_INTENTS: readonly ["next", "repeat", "jump", "complete", "abort"] = [
  "next",
  "repeat",
  "jump",
  "complete",
  "abort",
] as const;

/** A gate intent. */
export const GateIntentSchema = z.enum(GATE_INTENTS).describe("A gate intent");
/** A gate intent. */
export type GateIntent = typeof GATE_INTENTS[number];

const Segment = z.string().min(1).describe(
  "A C3L path segment: letters, digits, '_' and '-', not starting with '_' or '-'",
);

/** A C3L prompt reference: `<c1>/<c2>/<c3>/f_<edition>[_<adaptation>].md`. */
export const C3lPromptRefSchema = z.strictObject({
  c1: Segment,
  c2: Segment,
  c3: Segment,
  edition: Segment.optional(),
  adaptation: Segment.optional(),
}).describe("C3L prompt reference");

/** A prompt given by a path relative to the registry's basePath. */
export const PathPromptRefSchema = z.strictObject({
  path: z.string().min(1).describe("Path relative to the prompts base path"),
}).describe("Path prompt reference");

/** Either form of prompt reference: C3L layers or a path. */
export const PromptRefSchema = z.union([C3lPromptRefSchema, PathPromptRefSchema]);
/** A C3L prompt reference: `<c1>/<c2>/<c3>/f_<edition>[_<adaptation>].md`. */
export interface C3lPromptRef {
  /** Layer 1, e.g. `steps`. */
  c1: string;
  /** Layer 2, e.g. `phase`. */
  c2: string;
  /** Layer 3, e.g. `analyze`. */
  c3: string;
  /** Edition (default `default`). */
  edition?: string;
  /** Adaptation suffix. */
  adaptation?: string;
}
/** A prompt given by a path relative to the prompt base path. */
export interface PathPromptRef {
  /** Relative path, e.g. `system.md`. */
  path: string;
}
/** Either form of prompt reference. */
export type PromptRef = C3lPromptRef | PathPromptRef;

/** `iterations: { min, max }` — how often a step runs before its check. */
export const IterationsSchema = z.strictObject({
  min: z.int().min(1).optional().describe("Minimum executions before the check runs (default 1)"),
  max: z.int().min(1).optional().describe("Maximum executions of the step (default 1)"),
});

/** `onPass` of a check. */
export const OnPassSchema = z.union([
  z.strictObject({ next: z.string().min(1) }),
  z.strictObject({ complete: z.literal(true) }),
]);

/** `onFail` of a check. */
export const OnFailSchema = z.union([
  z.strictObject({
    retry: z.literal(true),
    maxRetries: z.int().min(0).optional().describe(
      "0 = unlimited (still bounded by maxTotalIterations)",
    ),
  }),
  z.strictObject({ fallback: z.string().min(1) }),
]);

/** The check of a check-gated step: a separate prompt that judges the step's work. */
export const CheckSchema = z.strictObject({
  prompt: PromptRefSchema,
  responseFormat: z.record(z.string(), z.unknown()).optional(),
  onPass: OnPassSchema,
  onFail: OnFailSchema,
});
/** `onPass` of a check: go to a step, or complete the run. */
export type OnPass = { next: string } | { complete: true };
/** `onFail` of a check: retry the step (0 = unlimited retries), or fall back to a step. */
export type OnFail = { retry: true; maxRetries?: number } | { fallback: string };
/** The check of a check-gated step. */
export interface CheckDefinition {
  /** The check prompt. */
  prompt: PromptRef;
  /** Documents the expected answer, e.g. `{ "result": "ok|ng", "message": "string" }`. */
  responseFormat?: Record<string, unknown>;
  /** Where an OK verdict leads. */
  onPass: OnPass;
  /** What an NG verdict does. */
  onFail: OnFail;
}

/** The structured gate of a gate-routed step. */
export const StructuredGateSchema = z.strictObject({
  allowedIntents: z.array(GateIntentSchema).min(1),
  intentField: z.string().min(1).describe(
    "Dot path of the intent in the output, e.g. next_action.action",
  ),
  targetField: z.string().min(1).optional().describe("Dot path of the jump target"),
  fallbackIntent: GateIntentSchema.optional(),
  handoffFields: z.array(z.string().min(1)).optional(),
});
/** The structured gate of a gate-routed step. */
export interface StructuredGate {
  /** Intents the step may produce. */
  allowedIntents: GateIntent[];
  /** Dot path of the intent in the output, e.g. `next_action.action`. */
  intentField: string;
  /** Dot path of the jump target. */
  targetField?: string;
  /** Intent used when the produced one is not allowed. */
  fallbackIntent?: GateIntent;
  /** Output paths handed to later steps (stored under their last segment). */
  handoffFields?: string[];
}

/** One transition: where an intent leads. */
export const TransitionTargetSchema = z.strictObject({ target: z.string().min(1) });

/** `outputSchemaRef`: a schema file under `schemas/` and a JSON Pointer into it. */
export const OutputSchemaRefSchema = z.strictObject({
  file: z.string().min(1).describe("File name under the agent's schemas/ folder"),
  schema: z.string().startsWith("#").describe("JSON Pointer, e.g. #/definitions/initial.issue"),
});
/** An output schema reference. */
export interface OutputSchemaRef {
  /** File name under the agent's `schemas/` folder. */
  file: string;
  /** JSON Pointer into it, e.g. `#/definitions/initial.issue`. */
  schema: string;
}
/** `onError` as written: `fail`, `continue`, `retry=N`, `jump=<id>`, `{ retry: N }` or `{ jump: id }`. */
export type OnErrorValue = string | { retry: number } | { jump: string };

/** `onError`: `fail`, `continue`, `retry=N`, `jump=<id>` or the object forms. */
export const OnErrorSchema = z.union([
  z.string().regex(
    onErrorTextPattern(FLOW_ON_ERROR),
    'onError must be "fail", "continue", "retry=N" or "jump=<stepId>"',
  ),
  z.strictObject({ retry: z.int().min(0) }),
  z.strictObject({ jump: z.string().min(1) }),
]);

/** One validator of a step: a command from agent.json `commands` and how to read its result. */
export const StepValidatorSchema = z.strictObject({
  command: z.string().min(1).describe("A name in agent.json commands"),
  successWhen: z.enum(["exitCode:0", "empty"]).optional().describe(
    'Success: exit code 0 (default), or "empty": exit code 0 and no output',
  ),
  pattern: Segment.optional().describe(
    "Failure pattern: the retry prompt is f_failed_<pattern>.md",
  ),
  match: z.string().min(1).optional().describe(
    "Regular expression on the command output; the pattern applies only when it matches",
  ),
});
/** One validator of a step. */
export interface StepValidator {
  /** A name in agent.json `commands`. */
  command: string;
  /** `exitCode:0` (default) or `empty` (exit code 0 and no output). */
  successWhen?: "exitCode:0" | "empty";
  /** Failure pattern: the retry prompt is `f_failed_<pattern>.md`. */
  pattern?: string;
  /** Regular expression on the output; the pattern applies only when it matches. */
  match?: string;
}

/** `validation` of a step: validators, the retry prompt folder and the retry bound. */
export const StepValidationSchema = z.strictObject({
  validators: z.array(StepValidatorSchema).min(1),
  retryPrompt: C3lPromptRefSchema.optional().describe(
    "Retry prompt folder; the file is f_failed_<pattern>.md, or f_failed.md when no pattern applies",
  ),
  maxRetries: z.int().min(0).optional().describe("Re-runs after a failed validation (default 3)"),
});
/** Validators of a step. */
export interface StepValidation {
  /** Commands run in order after the step's answer; the first failure counts. */
  validators: StepValidator[];
  /** Retry prompt folder (edition `failed`, adaptation = pattern); default: the step's own prompt. */
  retryPrompt?: C3lPromptRef;
  /** Re-runs after a failed validation (default 3). */
  maxRetries?: number;
}

/** `waitTimeout` of an input step: the wait's limit and the intent taken when it passes. */
export const WaitTimeoutSchema = z.strictObject({
  ms: z.int().positive().describe("How long the run waits for an answer, in milliseconds"),
  intent: GateIntentSchema.describe("The intent the step takes when the wait passes unanswered"),
});
/** `waitTimeout` of an input step. */
export interface WaitTimeout {
  /** How long the run waits for an answer, in milliseconds. */
  ms: number;
  /** The intent the step takes when the wait passes unanswered. */
  intent: GateIntent;
}

/** One step of the registry (both shapes; the validator enforces exactly one routing form). */
export const StepSchema = z.strictObject({
  id: z.string().optional().describe("Must equal the step's key when present"),
  stepId: z.string().optional().describe("Must equal the step's key when present"),
  name: z.string().optional(),
  description: z.string().optional(),
  prompt: PromptRefSchema.optional(),
  c2: Segment.optional(),
  c3: Segment.optional(),
  edition: Segment.optional(),
  adaptation: Segment.optional(),
  fallbackKey: z.string().optional(),
  iterations: IterationsSchema.optional(),
  check: CheckSchema.optional(),
  structuredGate: StructuredGateSchema.optional(),
  transitions: z.record(z.string(), TransitionTargetSchema).optional(),
  outputSchemaRef: OutputSchemaRefSchema.optional(),
  onError: OnErrorSchema.optional(),
  model: ModelSettingSchema.optional(),
  allowedTools: z.array(z.string()).optional(),
  disallowedTools: z.array(z.string()).optional(),
  permissionMode: z.string().optional(),
  timeoutMs: z.int().positive().optional(),
  kind: z.enum(["command", "input", "agent"]).optional().describe(
    '"command": run agent.json commands[command] instead of the model; "input": ask a person; "agent": run another agent',
  ),
  agent: z.string().min(1).optional().describe(
    "Agent step: the child agent, a folder name under the agent root or a path from this agent's folder",
  ),
  args: z.record(z.string(), z.unknown()).optional().describe(
    'Agent step: the child\'s parameters; "{handoff.<key>}" and "{uv-<name>}" take a value, anything else is literal',
  ),
  handoffFields: z.array(z.string().min(1)).optional().describe(
    "Agent step: paths in the child's final output handed off under this step (with forEach: picked from each child's output)",
  ),
  ...FAN_OUT_FIELDS,
  command: z.string().min(1).optional().describe("Command step: a name in agent.json commands"),
  validation: StepValidationSchema.optional(),
  waitTimeout: WaitTimeoutSchema.optional(),
});
/** One step as written in the registry. */
export interface StepDefinition {
  /** Must equal the step's key when present. */
  id?: string;
  /** Must equal the step's key when present (the same as `id`). */
  stepId?: string;
  /** Display name. */
  name?: string;
  /** Free text. */
  description?: string;
  /** The prompt: C3L layers `{ c1, c2, c3 }` or `{ path }`. */
  prompt?: PromptRef;
  /** The prompt's C3L layer 2 (with `c1 = "steps"`; instead of `prompt`). */
  c2?: string;
  /** The prompt's C3L layer 3. */
  c3?: string;
  /** The prompt's edition. */
  edition?: string;
  /** The prompt's adaptation. */
  adaptation?: string;
  /** Built-in fallback prompt key (used only with allowFallback). */
  fallbackKey?: string;
  /** `{ min, max }` runs before/around the check. */
  iterations?: { min?: number; max?: number };
  /** Makes the step check-gated. */
  check?: CheckDefinition;
  /** Makes the step gate-routed. */
  structuredGate?: StructuredGate;
  /** Intent → target step. */
  transitions?: Record<string, { target: string }>;
  /** Output schema. */
  outputSchemaRef?: OutputSchemaRef;
  /** Error policy. */
  onError?: OnErrorValue;
  /** Model override: a model, or a fallback chain. */
  model?: ModelSetting;
  /** Tools override. */
  allowedTools?: string[];
  /** Refused tool rules (added to the agent's). */
  disallowedTools?: string[];
  /** Permission mode override. */
  permissionMode?: string;
  /** Timeout of one backend call. */
  timeoutMs?: number;
  /**
   * `"command"`: the step runs `agent.json` `commands[command]` instead of the model; `"input"`:
   * the run waits for a person's answer (docs/agents.md, "Input steps"); `"agent"`: another agent
   * runs as a child run (docs/agents.md, "Agent steps").
   */
  kind?: "command" | "input" | "agent";
  /** Agent step: the child agent (a folder name under the agent root, or a path from this agent's folder). */
  agent?: string;
  /** Agent step: the child's parameters (`{handoff.<key>}` and `{uv-<name>}` take a value). */
  args?: Record<string, unknown>;
  /** Agent step: paths in the child's final output handed off under the step. */
  handoffFields?: string[];
  /**
   * Fan-out step: the array to run the child agent over, one child run per element —
   * `"{handoff.<key>}"` or `"{uv-<name>}"` (docs/agents.md, "Fan-out steps").
   */
  forEach?: string;
  /** Fan-out step: children in flight at once (default 4). */
  concurrency?: number;
  /** Fan-out step: what a failed child does — `fail` (default), `continue`, `retry=N`. */
  onItemError?: string | { retry: number };
  /** Fan-out step: the most items it takes (default 1,000). */
  maxItems?: number;
  /** Command step: the name of the command in agent.json `commands`. */
  command?: string;
  /** Validators run after the step's answer (retry with a pattern prompt on failure). */
  validation?: StepValidation;
  /** Input step: how long the run waits for an answer, and the intent it takes when none came. */
  waitTimeout?: WaitTimeout;
}

/** `steps_registry.json`. */
export const StepsRegistrySchema = z.strictObject({
  $schema: z.string().optional(),
  version: z.string().min(1),
  basePath: z.string().min(1).optional().describe(
    'Prompt root relative to the agent folder (default "prompts")',
  ),
  entryStep: z.string().min(1).optional(),
  entryStepMapping: z.record(z.string(), z.string().min(1)).optional(),
  // The id rule is checked by the flow validation (with a fix-it message); the pattern is only
  // written into the JSON Schema so that editors flag a bad id as it is typed.
  steps: z.record(
    z.string().meta({ pattern: STEP_ID_SOURCE, description: "Step id (docs/agents.md)" }),
    StepSchema,
  ),
}).describe("stepflow steps registry");
/** The steps registry (`steps_registry.json`). */
export interface StepsRegistry {
  /** JSON Schema reference for editors. */
  $schema?: string;
  /** Registry version. */
  version: string;
  /** Prompt root relative to the agent folder (default `prompts`). */
  basePath?: string;
  /** Entry step. */
  entryStep?: string;
  /** Entry step per completionType. */
  entryStepMapping?: Record<string, string>;
  /** Steps by id. */
  steps: Record<string, StepDefinition>;
}

/** A declared CLI/run parameter of an agent. */
export const ParameterSchema = z.strictObject({
  type: z.enum(["string", "number", "boolean", "array"]),
  description: z.string().optional(),
  required: z.boolean().optional(),
  default: z.union([
    z.string(),
    z.number(),
    z.boolean(),
    z.array(z.union([z.string(), z.number()])),
  ]).optional(),
  flag: z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*$/, "flag: letters, digits, '_' and '-'")
    .optional().describe('CLI flag name without dashes (default: the key), e.g. "iterate-max"'),
  items: z.enum(["string", "number"]).optional().describe(
    'Element type of an array (default "string")',
  ),
  enum: z.array(z.union([z.string(), z.number()])).min(1).optional().describe(
    "Allowed values (of each element, for an array)",
  ),
});
/** A declared CLI/run parameter. */
export interface ParameterDefinition {
  /** Value type; `array` is a repeatable flag or a comma list. */
  type: "string" | "number" | "boolean" | "array";
  /** Help text. */
  description?: string;
  /** Whether it must be given. */
  required?: boolean;
  /** Default value. */
  default?: string | number | boolean | (string | number)[];
  /** CLI flag name without dashes (default: the key), e.g. `iterate-max`. */
  flag?: string;
  /** Element type of an `array` parameter (default `string`). */
  items?: "string" | "number";
  /** Allowed values (of each element, for an array). */
  enum?: (string | number)[];
}

/** A completion condition (beyond the structured gate), checked after every iteration. */
export const CompletionConditionSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("count:iteration"),
    maxIterations: z.int().positive().describe("The run completes after this many iterations"),
  }),
  z.strictObject({
    type: z.literal("detect:keyword"),
    keyword: z.string().min(1).describe("The run completes when a step's answer contains it"),
  }),
]);
/** A completion condition: after N iterations, or when an answer contains a keyword. */
export type CompletionCondition =
  | { type: "count:iteration"; maxIterations: number }
  | { type: "detect:keyword"; keyword: string };

/** An allowed command (argv, no shell) that command steps and validators may run. */
export const CommandSpecSchema = z.strictObject({
  argv: z.array(z.string()).min(1).describe("Program and arguments; {uv-<name>} is substituted"),
  timeoutMs: z.int().positive().optional().describe("Kill it after this long (default 300000)"),
});
/** An allowed command. */
export interface CommandSpec {
  /** Program and arguments (no shell); `{uv-<name>}` in an argument is substituted. */
  argv: string[];
  /** Kill it after this long (default 300000 ms). */
  timeoutMs?: number;
}

/** `agent.json`. */
export const AgentConfigSchema = z.strictObject({
  $schema: z.string().optional(),
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, "name: letters, digits, '_' and '-'"),
  displayName: z.string().optional(),
  description: z.string().optional(),
  version: z.string().optional(),
  behavior: z.strictObject({
    systemPromptPath: z.string().min(1).optional(),
    completionType: z.string().min(1),
    completionConfig: z.record(z.string(), z.unknown()).optional(),
    allowedTools: z.array(z.string()).optional(),
    disallowedTools: z.array(z.string()).optional(),
    permissionMode: z.string().optional(),
    permissionAsks: z.enum(["refuse", "wait"]).optional().describe(
      'A tool call that asks for permission with nobody to ask: "refuse" (default) or "wait" (the run waits for an allow/deny answer, as at an input step)',
    ),
    mcpServers: z.record(z.string(), z.unknown()).optional().describe(
      'MCP servers, as in Claude Code: { name: { command, args?, env? } | { type: "http", url, headers? } }',
    ),
    backend: z.string().min(1).optional().describe("claude-code | anthropic | openai | scripted"),
    model: ModelSettingSchema.optional(),
  }),
  prompts: z.strictObject({
    registry: z.string().min(1).optional().describe(
      'Registry file (default "steps_registry.json")',
    ),
    fallbackDir: z.string().optional(),
  }).optional(),
  logging: z.strictObject({
    directory: z.string().min(1).optional(),
    format: z.literal("jsonl").optional(),
    maxFiles: z.int().positive().optional(),
    store: z.string().min(1).optional().describe(
      'Run store: "file" (default) or a postgres:// URL (prefer STEPFLOW_STORE for credentials)',
    ),
  }).optional(),
  parameters: z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*$/), ParameterSchema).optional(),
  limits: z.strictObject({
    maxTotalIterations: z.int().positive().optional(),
    stepTimeoutMs: z.int().positive().optional(),
    runTimeoutMs: z.int().positive().optional(),
    budget: RunBudgetSchema.optional().describe(
      "A hard budget: checked before every model call and tool call (docs/budgets.md)",
    ),
  }).optional(),
  pricing: z.union([z.string().min(1), PriceListSchema]).optional().describe(
    "Prices of the models this agent calls, over the built-in table: a JSON file in the agent folder, or the list itself",
  ),
  completion: z.array(CompletionConditionSchema).optional().describe(
    "Completion conditions checked after every iteration",
  ),
  commands: z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/), CommandSpecSchema)
    .optional().describe("Commands that command steps and validators may run (with --allow-run)"),
}).describe("stepflow agent definition");
/** `agent.json` as written. */
export interface AgentConfig {
  /** JSON Schema reference for editors. */
  $schema?: string;
  /** Agent name (letters, digits, `_`, `-`). */
  name: string;
  /** Display name. */
  displayName?: string;
  /** Description. */
  description?: string;
  /** Agent version. */
  version?: string;
  /** Behaviour. */
  behavior: {
    systemPromptPath?: string;
    completionType: string;
    completionConfig?: Record<string, unknown>;
    allowedTools?: string[];
    disallowedTools?: string[];
    permissionMode?: string;
    /**
     * A tool call that asks for permission when nobody can be asked: `"refuse"` (the default: the
     * model is told why) or `"wait"` (the run records the request and waits for an allow/deny
     * answer — `--answer`, the dashboard, `StepFlowRunner.answer` — like an input step).
     */
    permissionAsks?: "refuse" | "wait";
    mcpServers?: Record<string, unknown>;
    backend?: string;
    /** A model, or a fallback chain (docs/backends.md, "Model fallback chains"). */
    model?: ModelSetting;
  };
  /** Prompt settings. */
  prompts?: { registry?: string; fallbackDir?: string };
  /** Run log settings. */
  logging?: { directory?: string; format?: "jsonl"; maxFiles?: number; store?: string };
  /** Declared parameters. */
  parameters?: Record<string, ParameterDefinition>;
  /** Run limits. */
  limits?: {
    maxTotalIterations?: number;
    stepTimeoutMs?: number;
    runTimeoutMs?: number;
    /** A hard budget: checked before every model call and tool call. */
    budget?: RunBudget;
  };
  /**
   * Prices of the models this agent calls, over the built-in table: a JSON file inside the agent
   * folder (`"pricing": "prices.json"`), or the list itself (model name → prices).
   */
  pricing?: string | Record<string, ModelPricing>;
  /** Completion conditions checked after every iteration. */
  completion?: CompletionCondition[];
  /** Commands that command steps and validators may run (only with `--allow-run`). */
  commands?: Record<string, CommandSpec>;
}

// Compile-time proof that every interface above is exactly what its zod schema parses to.
// Hand-written because public: readable in `deno doc` (why: src/type_equality.ts).
const _schemasMatchInterfaces: [
  Exactly<z.infer<typeof PromptRefSchema>, PromptRef>,
  Exactly<z.infer<typeof CheckSchema>, CheckDefinition>,
  Exactly<z.infer<typeof StructuredGateSchema>, StructuredGate>,
  Exactly<z.infer<typeof OutputSchemaRefSchema>, OutputSchemaRef>,
  Exactly<z.infer<typeof OnErrorSchema>, OnErrorValue>,
  Exactly<z.infer<typeof StepSchema>, StepDefinition>,
  Exactly<z.infer<typeof StepsRegistrySchema>, StepsRegistry>,
  Exactly<z.infer<typeof ParameterSchema>, ParameterDefinition>,
  Exactly<z.infer<typeof AgentConfigSchema>, AgentConfig>,
  Exactly<z.infer<typeof StepValidationSchema>, StepValidation>,
  Exactly<z.infer<typeof CompletionConditionSchema>, CompletionCondition>,
  Exactly<z.infer<typeof CommandSpecSchema>, CommandSpec>,
  Exactly<z.infer<typeof WaitTimeoutSchema>, WaitTimeout>,
] = [true, true, true, true, true, true, true, true, true, true, true, true, true];
