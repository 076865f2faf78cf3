/**
 * Load-time validation of a flow (docs/agents.md, "Load-time validation"). Every rule is checked
 * and every problem is collected — the loader turns them into one {@linkcode AgentDefinitionError}.
 *
 * @module
 */
import { type AgentConfig, GATE_INTENTS, type StepsRegistry } from "./schema.ts";
import { CLOSING_PREFIX, normalizeStep, parseErrorPolicy, SECTION_PREFIX } from "./normalize.ts";
import { isValidStepId, STEP_ID_RULE } from "./step_id.ts";
import { closestMatch } from "./suggest.ts";
import { type FlowEdge, stepEdges } from "./edges.ts";
import { checkFlowFiles } from "./validate_files.ts";
import { checkParameters } from "./parameters.ts";
import { parseMcpServers } from "./mcp_servers.ts";
import {
  checkCommandStep,
  checkCompletion,
  checkInputStep,
  checkPermissionFields,
  checkStepValidation,
  checkWaitTimeoutPlace,
} from "./validate_features.ts";
import { checkHandoffs } from "./handoff_paths.ts";
import { checkAgentFieldsPlace, checkAgentStep } from "./agent_step.ts";
import { checkFanOutFields, checkForEachHandoffs } from "./fan_out.ts";
import { FALLBACK_KEY_RULE, isValidFallbackKey } from "../prompt/resolver.ts";
import type { FlowStep } from "./types.ts";

/** Where the docs document the rules; named in the gate-rule message. */
export const VALIDATION_DOCS = "docs/agents.md#load-time-validation";

/** What {@linkcode validateFlow} checks. */
export interface FlowValidationInput {
  /** Absolute agent folder (prompt and schema files are resolved from it). */
  dir: string;
  /** The registry, as parsed by `StepsRegistrySchema`. */
  registry: StepsRegistry;
  /**
   * agent.json, as parsed by `AgentConfigSchema`. When absent (it did not parse), the rules that
   * need it — the entry step for `completionType`, the system prompt — are skipped.
   */
  agent?: AgentConfig;
  /** The steps normalised (computed from the registry when absent). */
  steps?: Readonly<Record<string, FlowStep>>;
  /** File labels used in messages (defaults `agent.json`, `steps_registry.json`). */
  files?: { agent?: string; registry?: string };
  /**
   * Ids of steps that exist in the file but failed its schema (already reported): they count as
   * existing targets and are not checked again.
   */
  unparsedStepIds?: Iterable<string>;
}

/** Options of {@linkcode validateFlow}. */
export interface FlowValidationOptions {
  /** Check that prompt, schema and system prompt files exist (default true). */
  checkFiles?: boolean;
  /** A missing prompt that a fallback can stand in for is a warning, not an error. */
  allowFallback?: boolean;
  /** Compile every output schema in full (default: meta-schema and reference check). */
  compileSchemas?: boolean;
  /** Files checked at once (default 16). */
  concurrency?: number;
}

/** The outcome of {@linkcode validateFlow}. */
export interface FlowValidationResult {
  /** Every problem; the definition is unusable when this is not empty. */
  errors: string[];
  /** Things that work but are probably mistakes (unreachable steps, …). */
  warnings: string[];
  /** The entry step for the agent's completionType, when it resolves. */
  entryStepId?: string;
  /** The normalised steps. */
  steps: Readonly<Record<string, FlowStep>>;
}

/**
 * Checks a parsed agent against every load-time rule (docs/agents.md "Load-time validation"): entry step,
 * gates and transitions, step ids, targets, intents, prompt files, output schemas, iterations,
 * onError. Returns all errors and warnings rather than throwing.
 *
 * @example
 * ```ts ignore
 * import { validateFlow } from "./validate.ts";
 * const { errors, warnings } = await validateFlow({ dir, agent, registry });
 * if (errors.length > 0) console.error(errors.join("\n"));
 * ```
 */
export async function validateFlow(
  input: FlowValidationInput,
  options: FlowValidationOptions = {},
): Promise<FlowValidationResult> {
  const F = input.files?.registry ?? "steps_registry.json";
  const A = input.files?.agent ?? "agent.json";
  const { registry, agent } = input;
  const unparsed = new Set(input.unparsedStepIds ?? []);
  const steps = input.steps ?? normalizeSteps(registry);
  const allIds = new Set([...Object.keys(registry.steps), ...unparsed]);
  const ordered = Object.keys(registry.steps).filter((id) => !unparsed.has(id) && steps[id])
    .map((id) => steps[id]);

  const stepErrors = new Map<string, string[]>();
  const warnings: string[] = [];
  const stepError = (id: string, message: string) => {
    const full = `${F}: step "${id}": ${message}`;
    const list = stepErrors.get(id);
    if (list) list.push(full);
    else stepErrors.set(id, [full]);
  };
  const targetProblem = targetChecker(allIds, F);

  const agentErrors: string[] = [...checkParameters(agent?.parameters ?? {}, A)];
  if (agent) agentErrors.push(...checkCompletion(agent, A));
  if (agent) agentErrors.push(...checkPermissionFields(agent.behavior, `${A}: behavior`));
  if (agent?.behavior.mcpServers !== undefined) {
    const { problems } = parseMcpServers(agent.behavior.mcpServers, undefined);
    agentErrors.push(...problems.map((p) => `${A}: behavior.${p}`));
  }

  const { entryStepId, errors: registryErrors } = checkEntry(agent, registry, F, targetProblem);

  const routing: StepRouting = {
    agent,
    warnings,
    F,
    allIds,
    targetProblem,
    missingGate: [],
    missingTransitions: [],
  };
  for (const step of ordered) checkStep(step, (message) => stepError(step.id, message), routing);
  const gateRule = gateRuleError(routing.missingGate, routing.missingTransitions, F);
  const gateErrors = gateRule === undefined ? [] : [gateRule];

  // Files.
  const generalErrors: string[] = [];
  let handoffUses: ReadonlyMap<string, readonly string[]> = new Map();
  if (options.checkFiles !== false) {
    const found = await checkFlowFiles({
      dir: input.dir,
      basePath: registry.basePath ?? "prompts",
      agent,
      steps: ordered,
      files: { agent: A, registry: F },
      allowFallback: options.allowFallback,
      compileSchemas: options.compileSchemas,
      concurrency: options.concurrency,
    });
    generalErrors.push(...found.general);
    for (const [id, messages] of found.byStep) {
      const list = stepErrors.get(id);
      if (list) list.push(...messages);
      else stepErrors.set(id, [...messages]);
    }
    warnings.push(...found.warnings);
    handoffUses = found.handoffUses;
  }

  const errors = [...agentErrors, ...generalErrors, ...registryErrors, ...gateErrors];
  for (const step of ordered) errors.push(...stepErrors.get(step.id) ?? []);

  // Graph warnings only make sense once the graph itself is sound.
  const structural = registryErrors.length + gateErrors.length + stepErrors.size;
  if (structural === 0 && unparsed.size === 0 && entryStepId !== undefined) {
    warnings.push(...graphWarnings(ordered, entryStepId, F));
    const handoffs = checkHandoffs(ordered, entryStepId, handoffUses, F);
    errors.push(...handoffs.errors);
    warnings.push(...handoffs.warnings);
    const forEach = checkForEachHandoffs(ordered, entryStepId, F);
    errors.push(...forEach.errors);
    warnings.push(...forEach.warnings);
  }
  const result: FlowValidationResult = { errors, warnings, steps };
  if (entryStepId !== undefined) result.entryStepId = entryStepId;
  return result;
}

/** Why a route to `target` cannot work, or undefined when it can; `field` names the route. */
type TargetProblem = (field: string, target: string) => string | undefined;

/** A {@linkcode TargetProblem} over the step ids `allIds` of the registry file `F`. */
function targetChecker(allIds: ReadonlySet<string>, F: string): TargetProblem {
  return (field, target) => {
    if (!allIds.has(target)) {
      const guess = closestMatch(target, allIds);
      return `${field} "${target}" is not a step in ${F}.${
        guess ? ` Did you mean "${guess}"?` : " Fix the id, or add the step."
      }`;
    }
    if (target.startsWith(SECTION_PREFIX)) {
      return `${field} "${target}" is a template section (${SECTION_PREFIX}*), not a flow step; route to a flow step instead.`;
    }
    return undefined;
  };
}

/** The entry step for the agent's completionType, and the problems of every entry setting. */
function checkEntry(
  agent: AgentConfig | undefined,
  registry: StepsRegistry,
  F: string,
  targetProblem: TargetProblem,
): { entryStepId?: string; errors: string[] } {
  const errors: string[] = [];
  let entryStepId: string | undefined;
  if (agent) {
    const type = agent.behavior.completionType;
    // completionType comes from a file: only an own mapping counts ("constructor" is no step).
    const mapping = registry.entryStepMapping;
    entryStepId = (mapping && Object.hasOwn(mapping, type) ? mapping[type] : undefined) ??
      registry.entryStep;
    if (entryStepId === undefined) {
      errors.push(
        `[StepFlow] No entry step configured for completionType "${type}".\n` +
          `Define either "entryStepMapping.${type}" or "entryStep" in ${F}.`,
      );
    }
  }
  if (registry.entryStep !== undefined) {
    const problem = targetProblem("entryStep", registry.entryStep);
    if (problem) errors.push(`${F}: ${problem}`);
  }
  for (const [type, target] of Object.entries(registry.entryStepMapping ?? {})) {
    const problem = targetProblem(`entryStepMapping.${type}`, target);
    if (problem) errors.push(`${F}: ${problem}`);
  }
  return entryStepId === undefined ? { errors } : { entryStepId, errors };
}

/** What the step checks share: the agent, the routes, and what is reported for all steps at once. */
interface StepRouting {
  agent: AgentConfig | undefined;
  warnings: string[];
  F: string;
  allIds: ReadonlySet<string>;
  targetProblem: TargetProblem;
  /** Gate-routed steps without a gate or transitions, reported as one message each. */
  missingGate: string[];
  missingTransitions: string[];
}

/** Checks one step: the fields every step has, then the rules of its kind. */
function checkStep(step: FlowStep, fail: (message: string) => void, routing: StepRouting): void {
  checkCommonFields(step, fail, routing.targetProblem);
  const raw = step.raw;
  if (step.validation) checkStepValidation(step, routing.agent, fail);
  if (step.kind !== "command" && raw.command !== undefined) {
    fail('sets "command" but is not a command step: add "kind": "command", or remove "command".');
  }
  checkWaitTimeoutPlace(step, fail);
  checkAgentFieldsPlace(step, fail);
  checkFanOutFields(step, routing.agent, fail);
  if (step.kind === "agent") {
    checkAgentStep(step, routing.agent, fail, routing.targetProblem);
    return;
  }
  if (step.kind === "command") {
    checkCommandStep(step, routing.agent, fail, routing.targetProblem);
    return;
  }
  if (step.kind === "input") checkInputStep(step, fail);
  if (step.kind === "section") {
    const fields = routingFields(raw);
    if (fields.length > 0) {
      fail(
        `is a template section (${SECTION_PREFIX}*), not a flow step: remove ${
          fields.join(", ")
        } (or rename the step).`,
      );
    }
    return;
  }
  if (step.kind === "closing") {
    const fields = routingFields(raw).filter((f) => f !== "structuredGate");
    if (fields.length > 0) {
      fail(
        `is a closing step (${CLOSING_PREFIX}*): it runs once and ends the run, so it takes no ${
          fields.join(" or ")
        }. Remove ${fields.length > 1 ? "them" : "it"}.`,
      );
    }
    if (!step.outputSchemaRef) {
      fail(
        `closing step has no outputSchemaRef: add "outputSchemaRef": { "file": "<name>.schema.json", "schema": "#/definitions/${step.id}" } for its final report.`,
      );
    }
    if (step.gate) checkGate(step, fail, routing.warnings, routing.F, routing.allIds);
    return;
  }
  checkFlowStep(step, fail, routing);
}

/** The id, prompt form, fallback key, iterations and onError of any step. */
function checkCommonFields(
  step: FlowStep,
  fail: (message: string) => void,
  targetProblem: TargetProblem,
): void {
  const { id, raw } = step;
  if (!isValidStepId(id)) fail(`invalid step id: ${STEP_ID_RULE}.`);
  for (const field of ["id", "stepId"] as const) {
    const own = raw[field];
    if (own !== undefined && own !== id) {
      fail(`${field} "${own}" does not match the step's key "${id}"; make them equal.`);
    }
  }
  checkPromptForm(step, fail);
  for (const problem of checkPermissionFields(step.raw, "")) fail(problem);
  if (step.fallbackKey !== undefined && !isValidFallbackKey(step.fallbackKey)) {
    fail(`fallbackKey ${JSON.stringify(step.fallbackKey)} is invalid: ${FALLBACK_KEY_RULE}.`);
  }
  const { min, max } = step.iterations;
  if (min > max) {
    fail(
      `iterations.min (${min}) is greater than iterations.max (${max}${
        raw.iterations?.max === undefined ? ", the default" : ""
      }); raise max or lower min.`,
    );
  }
  if (raw.onError !== undefined) {
    const policy = parseErrorPolicy(raw.onError);
    if (!policy) {
      fail(
        `onError ${
          JSON.stringify(raw.onError)
        } is invalid: use "fail", "continue", "retry=N" or "jump=<stepId>".`,
      );
    } else if (policy.kind === "jump") {
      const problem = targetProblem("onError jump target", policy.target);
      if (problem) fail(problem);
    }
  }
}

/** A flow step routes one way: check-gated (`check`) or gate-routed (`structuredGate`). */
function checkFlowStep(step: FlowStep, fail: (message: string) => void, routing: StepRouting) {
  const { id, raw } = step;
  const { targetProblem } = routing;
  if (step.check && step.gate) {
    fail(
      'defines both check and structuredGate; a flow step routes one way, check-gated ("check") or gate-routed ("structuredGate"): remove one of them (docs/agents.md, "steps_registry.json").',
    );
  }
  if (!step.check && !step.gate) routing.missingGate.push(id);
  if (!step.check && raw.transitions === undefined) routing.missingTransitions.push(id);
  if (step.check && !step.gate && raw.transitions !== undefined) {
    fail(
      "is check-gated but defines transitions; a check step routes with check.onPass / check.onFail. Remove transitions (or use structuredGate instead of check).",
    );
  }
  if (!step.check && !step.outputSchemaRef) {
    fail(
      `gate-routed step has no outputSchemaRef: add "outputSchemaRef": { "file": "<name>.schema.json", "schema": "#/definitions/${id}" }.`,
    );
  }
  if (step.check) {
    const { onPass, onFail } = step.check;
    if ("next" in onPass) {
      const problem = targetProblem("check.onPass.next", onPass.next);
      if (problem) fail(problem);
    }
    if ("fallback" in onFail) {
      const problem = targetProblem("check.onFail.fallback", onFail.fallback);
      if (problem) fail(problem);
    }
  }
  if (step.gate) checkGate(step, fail, routing.warnings, routing.F, routing.allIds);
  if (!step.check || step.gate) {
    for (const [intent, { target }] of Object.entries(step.transitions)) {
      const problem = targetProblem(`transitions.${intent}.target`, target);
      if (problem) fail(problem);
    }
  }
  if (step.gate && step.onError.kind === "continue" && !step.transitions.next) {
    fail(
      'onError "continue" follows the step\'s next route, but it has no transitions.next: add one, or use another onError policy.',
    );
  }
}

/** The one message of the gate rule: the flow steps that lack a gate or transitions. */
function gateRuleError(
  missingGate: readonly string[],
  missingTransitions: readonly string[],
  F: string,
): string | undefined {
  if (missingGate.length === 0 && missingTransitions.length === 0) return undefined;
  const lines = [
    "[StepFlow] Flow validation failed. All Flow steps must define structuredGate and transitions.",
  ];
  if (missingGate.length > 0) {
    lines.push(`Steps missing structuredGate: ${missingGate.join(", ")}`);
  }
  if (missingTransitions.length > 0) {
    lines.push(`Steps missing transitions: ${missingTransitions.join(", ")}`);
  }
  lines.push(
    `See ${VALIDATION_DOCS} for requirements. Fix them in ${F} (a check-gated step satisfies the rule with its "check").`,
  );
  return lines.join("\n");
}

/** Normalises every step of a registry. */
export function normalizeSteps(registry: StepsRegistry): Record<string, FlowStep> {
  const out: Record<string, FlowStep> = {};
  for (const [id, step] of Object.entries(registry.steps)) out[id] = normalizeStep(id, step);
  return out;
}

function routingFields(raw: FlowStep["raw"]): string[] {
  const out: string[] = [];
  if (raw.check !== undefined) out.push("check");
  if (raw.structuredGate !== undefined) out.push("structuredGate");
  if (raw.transitions !== undefined) out.push("transitions");
  return out;
}

function checkPromptForm(step: FlowStep, fail: (message: string) => void): void {
  const raw = step.raw;
  const topLevel = (["c2", "c3", "edition", "adaptation"] as const).filter((k) =>
    raw[k] !== undefined
  );
  if (raw.prompt !== undefined && topLevel.length > 0) {
    fail(
      `sets both "prompt" and top-level ${
        topLevel.join("/")
      }; name the prompt one way: "prompt": { c1, c2, c3 } or top-level c2/c3 (docs/agents.md, "steps_registry.json").`,
    );
    return;
  }
  if (raw.prompt === undefined && topLevel.length > 0 && !step.prompt) {
    const missing = (["c2", "c3"] as const).filter((k) => raw[k] === undefined);
    fail(
      `names its prompt with top-level c2/c3 but has no ${
        missing.join(" or ")
      }; set both (the prompt is steps/<c2>/<c3>/f_<edition>.md).`,
    );
    return;
  }
  if (
    !step.prompt && step.kind !== "section" && step.kind !== "command" && step.kind !== "agent"
  ) {
    fail(
      'has no prompt: set "prompt": { "c1", "c2", "c3" } (or { "path" }), or top-level "c2" and "c3".',
    );
  }
}

function checkGate(
  step: FlowStep,
  fail: (message: string) => void,
  warnings: string[],
  F: string,
  allIds: ReadonlySet<string>,
): void {
  const gate = step.gate!;
  const id = step.id;
  const allowed = new Set<string>(gate.allowedIntents);
  const allowedList = gate.allowedIntents.join(", ");
  if (gate.fallbackIntent !== undefined && !allowed.has(gate.fallbackIntent)) {
    fail(
      `structuredGate.fallbackIntent "${gate.fallbackIntent}" is not one of allowedIntents (${allowedList}); add it there or change fallbackIntent.`,
    );
  }
  if (allowed.has("jump") && gate.targetField === undefined && !step.raw.transitions?.jump) {
    fail(
      'structuredGate.allowedIntents includes "jump" but nothing can supply a target: set structuredGate.targetField to the output field that holds the target step id (e.g. "next_action.details.target"), or give transitions.jump a default "target".',
    );
  }
  if (step.kind === "closing" || step.raw.transitions === undefined) return;
  for (const [intent, { target }] of Object.entries(step.transitions)) {
    if (!(GATE_INTENTS as readonly string[]).includes(intent)) {
      fail(
        `transitions.${intent}: "${intent}" is not a gate intent (${
          GATE_INTENTS.join(", ")
        }); rename or remove it.`,
      );
    } else if (!allowed.has(intent)) {
      fail(
        `transitions.${intent}: "${intent}" is not in structuredGate.allowedIntents (${allowedList}); add it there or remove the transition.`,
      );
    } else if (intent === "complete") {
      if (target === id) {
        fail(
          `transitions.complete.target is the step itself; a complete transition must lead to a closing step (${CLOSING_PREFIX}*), never back to its own step.`,
        );
      } else if (
        allIds.has(target) && !target.startsWith(CLOSING_PREFIX) &&
        !target.startsWith(SECTION_PREFIX)
      ) {
        fail(
          `transitions.complete.target "${target}" is not a closing step: the complete intent must lead to a "${CLOSING_PREFIX}*" step, or omit transitions.complete to end the run at this step.`,
        );
      }
    } else if (intent === "repeat" && target !== id) {
      warnings.push(
        `${F}: step "${id}": transitions.repeat.target "${target}" is ignored: repeat always re-runs the step itself. Point it at "${id}" or remove it.`,
      );
    } else if (intent === "abort") {
      warnings.push(
        `${F}: step "${id}": transitions.abort.target "${target}" is ignored: abort ends the run. Remove it.`,
      );
    }
  }
  if (allowed.has("next") && !step.transitions.next) {
    fail(
      'structuredGate.allowedIntents includes "next" but transitions.next is missing: add "transitions": { "next": { "target": "<stepId>" } }, or remove "next" from allowedIntents.',
    );
  }
}

/** Unreachable steps and flow steps with no path to completion. */
function graphWarnings(steps: readonly FlowStep[], entry: string, F: string): string[] {
  const routable = steps.filter((s) => s.kind !== "section");
  const edges = new Map<string, FlowEdge[]>();
  for (const step of routable) edges.set(step.id, stepEdges(step));
  const warnings: string[] = [];

  // Forward: everything the entry can reach, error routes included.
  const reached = new Set<string>([entry]);
  const queue = [entry];
  let jumpsFollowed = false;
  while (queue.length > 0) {
    const id = queue.pop()!;
    for (const edge of edges.get(id) ?? []) {
      if ("step" in edge.to) {
        if (!reached.has(edge.to.step)) {
          reached.add(edge.to.step);
          queue.push(edge.to.step);
        }
      } else if ("anyStep" in edge.to && !jumpsFollowed) {
        jumpsFollowed = true;
        for (const s of routable) {
          if (!reached.has(s.id)) {
            reached.add(s.id);
            queue.push(s.id);
          }
        }
      }
    }
  }
  for (const step of routable) {
    if (!reached.has(step.id)) {
      warnings.push(
        `${F}: step "${step.id}" is unreachable from the entry step "${entry}": no next, fallback, transition or onError jump leads to it. Route to it, or remove it.`,
      );
    }
  }

  // Backward from completion, normal routes only (error routes are not a plan to finish).
  const reverse = new Map<string, string[]>();
  const canComplete = new Set<string>();
  const jumpers: string[] = [];
  for (const [from, list] of edges) {
    for (const edge of list) {
      if (edge.kind === "error") continue;
      if ("end" in edge.to && edge.to.end === "complete") canComplete.add(from);
      else if ("step" in edge.to) {
        const back = reverse.get(edge.to.step);
        if (back) back.push(from);
        else reverse.set(edge.to.step, [from]);
      } else if ("anyStep" in edge.to) jumpers.push(from);
    }
  }
  const pending = [...canComplete];
  const mark = (id: string) => {
    if (!canComplete.has(id)) {
      canComplete.add(id);
      pending.push(id);
    }
  };
  while (pending.length > 0) {
    while (pending.length > 0) for (const from of reverse.get(pending.pop()!) ?? []) mark(from);
    if (canComplete.size > 0) { for (const jumper of jumpers) mark(jumper); }
  }
  for (const step of routable) {
    const routed = step.kind === "check" || step.kind === "gate" || step.kind === "input";
    if (routed && !canComplete.has(step.id)) {
      warnings.push(
        `${F}: step "${step.id}" has no path to completion: no route from it reaches check.onPass { complete: true }, a "complete" intent or a closing step, so a run that enters it can only end by max_iterations, abort or an error.`,
      );
    }
  }
  return warnings;
}
