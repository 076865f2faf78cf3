/**
 * Pure helpers that turn a registry step as written into a {@linkcode FlowStep}.
 *
 * @module
 */
import { FLOW_ON_ERROR, ITEM_ON_ERROR, parseOnErrorPolicy } from "../on_error.ts";
import type { PromptReference } from "../prompt/c3l_path.ts";
import type { StepDefinition } from "./schema.ts";
import type { ErrorPolicy, FlowStep, ItemErrorPolicy, StepKind } from "./types.ts";

/** Step ids starting with this are template sections, not flow steps. */
export const SECTION_PREFIX = "section.";
/** Step ids starting with this are closing steps. */
export const CLOSING_PREFIX = "complete.";

/**
 * Parses an `onError` value of a step flow ({@linkcode FLOW_ON_ERROR} of the one grammar). Returns
 * undefined for an unparseable value (the zod schema rejects those first; the validator reports
 * them with the step id).
 *
 * @example
 * ```ts
 * import { parseErrorPolicy } from "./normalize.ts";
 * parseErrorPolicy("retry=3"); // { kind: "retry", count: 3 }
 * parseErrorPolicy('jump="cleanup"'); // { kind: "jump", target: "cleanup" }
 * ```
 */
export function parseErrorPolicy(value: StepDefinition["onError"]): ErrorPolicy | undefined {
  return parseOnErrorPolicy(value, FLOW_ON_ERROR) as ErrorPolicy | undefined;
}

/** The kind of a step, from its id and routing fields. */
export function stepKindOf(id: string, step: StepDefinition): StepKind {
  if (step.kind === "command") return "command";
  if (step.kind === "input") return "input";
  if (step.kind === "agent") return "agent";
  if (id.startsWith(SECTION_PREFIX)) return "section";
  if (id.startsWith(CLOSING_PREFIX)) return "closing";
  if (step.check && !step.structuredGate) return "check";
  return "gate";
}

/**
 * The prompt reference of a step: `prompt` or top-level `c2`/`c3` with `c1 = "steps"`
 * (docs/agents.md). Undefined when the step names neither.
 */
export function promptRefOf(step: StepDefinition): PromptReference | undefined {
  if (step.prompt) return step.prompt;
  if (step.c2 !== undefined && step.c3 !== undefined) {
    const ref: PromptReference = { c1: "steps", c2: step.c2, c3: step.c3 };
    if (step.edition !== undefined) ref.edition = step.edition;
    if (step.adaptation !== undefined) ref.adaptation = step.adaptation;
    return ref;
  }
  return undefined;
}

/** Normalises one step (defaults applied). An invalid `onError` becomes `fail` here; validation reports it. */
export function normalizeStep(id: string, step: StepDefinition): FlowStep {
  const out: FlowStep = {
    id,
    name: step.name ?? id,
    kind: stepKindOf(id, step),
    iterations: { min: step.iterations?.min ?? 1, max: step.iterations?.max ?? 1 },
    transitions: step.transitions ?? {},
    onError: parseErrorPolicy(step.onError) ?? { kind: "fail" },
    raw: step,
  };
  const prompt = promptRefOf(step);
  if (prompt) out.prompt = prompt;
  if (step.fallbackKey !== undefined) out.fallbackKey = step.fallbackKey;
  if (step.check) out.check = step.check;
  if (step.structuredGate) out.gate = step.structuredGate;
  if (step.outputSchemaRef) out.outputSchemaRef = step.outputSchemaRef;
  if (step.model !== undefined) out.model = step.model;
  if (step.allowedTools !== undefined) out.allowedTools = step.allowedTools;
  if (step.disallowedTools !== undefined) out.disallowedTools = step.disallowedTools;
  if (step.permissionMode !== undefined) out.permissionMode = step.permissionMode;
  if (step.timeoutMs !== undefined) out.timeoutMs = step.timeoutMs;
  if (step.command !== undefined) out.command = step.command;
  if (step.validation !== undefined) out.validation = step.validation;
  if (step.waitTimeout !== undefined) out.waitTimeout = step.waitTimeout;
  if (step.agent !== undefined) out.agent = step.agent;
  if (step.args !== undefined) out.args = step.args;
  if (step.handoffFields !== undefined) out.handoffFields = step.handoffFields;
  if (step.forEach !== undefined) out.forEach = step.forEach;
  if (step.concurrency !== undefined) out.concurrency = step.concurrency;
  if (step.maxItems !== undefined) out.maxItems = step.maxItems;
  if (step.onItemError !== undefined) {
    out.onItemError = (parseOnErrorPolicy(step.onItemError, ITEM_ON_ERROR) as
      | ItemErrorPolicy
      | undefined) ?? { kind: "fail" };
  }
  return out;
}
