/**
 * Load-time checks of the agent features beyond check-gated and gate-routed steps: command steps,
 * step validators and completion conditions. Called from `validateFlow`; every problem is returned,
 * none thrown.
 *
 * @module
 */
import {
  CLAUDE_CODE_ONLY_MODES,
  parsePermissionMode,
  parsePermissionRules,
} from "./permission_rule.ts";
import type { AgentConfig, C3lPromptRef, StepValidation } from "./schema.ts";
import { closestMatch } from "./suggest.ts";
import type { FlowStep } from "./types.ts";

/** `limits.maxTotalIterations` when agent.json sets none (kept equal to the loader's default). */
const DEFAULT_MAX_ITERATIONS = 100;

function commandProblem(
  name: string,
  agent: AgentConfig | undefined,
  field: string,
): string | undefined {
  const commands = agent?.commands ?? {};
  if (Object.hasOwn(commands, name)) return undefined;
  const guess = closestMatch(name, Object.keys(commands));
  return `${field} "${name}" is not in agent.json commands.${
    guess
      ? ` Did you mean "${guess}"?`
      : ` Add "commands": { "${name}": { "argv": ["program", "arg"] } } to agent.json.`
  }`;
}

/**
 * A command step (`"kind": "command"`): it names an agent.json command, routes only with
 * `transitions.next` (or ends the run when it has none), and has no gate, check or schema.
 */
export function checkCommandStep(
  step: FlowStep,
  agent: AgentConfig | undefined,
  fail: (message: string) => void,
  targetProblem: (field: string, target: string) => string | undefined,
): void {
  const raw = step.raw;
  if (step.command === undefined) {
    fail(
      'is a command step ("kind": "command") but names no command: add "command": "<name in agent.json commands>".',
    );
  } else {
    const problem = commandProblem(step.command, agent, "command");
    if (problem) fail(problem);
  }
  const extra = (["structuredGate", "check", "outputSchemaRef", "validation"] as const).filter((
    k,
  ) => raw[k] !== undefined);
  if (extra.length > 0) {
    fail(
      `is a command step: it calls no model, so it takes no ${extra.join(", ")}. Remove ${
        extra.length > 1 ? "them" : "it"
      }.`,
    );
  }
  for (const [intent, { target }] of Object.entries(step.transitions)) {
    if (intent !== "next") {
      fail(
        `transitions.${intent}: a command step routes only with "next" (exit code 0); a failure follows onError.`,
      );
      continue;
    }
    const problem = targetProblem("transitions.next.target", target);
    if (problem) fail(problem);
  }
}

/** `validation` of a step: its commands exist, its patterns compile, it is on a step that answers. */
export function checkStepValidation(
  step: FlowStep,
  agent: AgentConfig | undefined,
  fail: (message: string) => void,
): void {
  const validation = step.validation!;
  if (step.kind === "command" || step.kind === "section") return; // reported by their own rules
  if (step.kind === "check") {
    fail("validation runs after a structured answer: use it on a gate-routed or closing step.");
  }
  validation.validators.forEach((v, i) => {
    const problem = commandProblem(v.command, agent, `validation.validators[${i}].command`);
    if (problem) fail(problem);
    if (v.match !== undefined) {
      try {
        new RegExp(v.match);
      } catch (error) {
        fail(
          `validation.validators[${i}].match is not a valid regular expression: ${
            (error as Error).message
          }`,
        );
      }
      if (v.pattern === undefined) {
        fail(
          `validation.validators[${i}].match is set without a pattern: name the pattern it selects.`,
        );
      }
    }
  });
}

/**
 * Completion conditions: at most one of each type, and a `count:iteration` the run can reach
 * before `limits.maxTotalIterations`.
 */
export function checkCompletion(agent: AgentConfig, file = "agent.json"): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const max = agent.limits?.maxTotalIterations ?? DEFAULT_MAX_ITERATIONS;
  (agent.completion ?? []).forEach((c, i) => {
    if (seen.has(c.type)) {
      problems.push(`${file}: completion[${i}]: a second "${c.type}" condition; keep one.`);
    }
    seen.add(c.type);
    if (c.type === "count:iteration" && c.maxIterations > max) {
      problems.push(
        `${file}: completion[${i}].maxIterations ${c.maxIterations} is above limits.maxTotalIterations (${max}): the run would stop with max_iterations first. Raise limits.maxTotalIterations.`,
      );
    }
  });
  return problems;
}

/**
 * The retry prompt of a failed validation: `<retryPrompt>/f_failed_<pattern>.md`, or
 * `f_failed.md` when no pattern applies.
 *
 * @example
 * ```ts
 * import { retryPromptRef } from "./validate_features.ts";
 * retryPromptRef({ c1: "steps", c2: "retry", c3: "issue" }, "git-dirty");
 * // { c1: "steps", c2: "retry", c3: "issue", edition: "failed", adaptation: "git-dirty" }
 * ```
 */
export function retryPromptRef(base: C3lPromptRef, pattern?: string): C3lPromptRef {
  const ref: C3lPromptRef = { c1: base.c1, c2: base.c2, c3: base.c3, edition: "failed" };
  if (pattern !== undefined) ref.adaptation = pattern;
  return ref;
}

/** Every retry prompt a step's validation may use (each must exist at load). */
export function retryPromptRefs(validation: StepValidation): C3lPromptRef[] {
  const base = validation.retryPrompt;
  if (!base) return [];
  const refs: C3lPromptRef[] = [];
  let generic = false;
  const patterns = new Set<string>();
  for (const v of validation.validators) {
    if (v.pattern === undefined || v.match !== undefined) generic = true;
    if (v.pattern !== undefined) patterns.add(v.pattern);
  }
  for (const p of patterns) refs.push(retryPromptRef(base, p));
  if (generic) refs.push(retryPromptRef(base));
  return refs;
}

/**
 * Problems with a tool-permission block (agent.json `behavior`, or a step): every
 * `allowedTools` / `disallowedTools` rule must parse and `permissionMode` must be a known mode —
 * a typo is a problem with a did-you-mean. `where` (when not empty) prefixes each message.
 */
export function checkPermissionFields(
  block: { allowedTools?: string[]; disallowedTools?: string[]; permissionMode?: string },
  where: string,
): string[] {
  const problems: string[] = [];
  const at = where ? `${where}: ` : "";
  for (const field of ["allowedTools", "disallowedTools"] as const) {
    const list = block[field];
    if (!list) continue;
    for (const problem of parsePermissionRules(list).problems) {
      problems.push(`${at}${field} ${problem}.`);
    }
  }
  const mode = block.permissionMode;
  if (mode !== undefined && !CLAUDE_CODE_ONLY_MODES.includes(mode)) {
    const parsed = parsePermissionMode(mode);
    if (!parsed.ok) problems.push(`${at}${parsed.problem}.`);
  }
  return problems;
}

/**
 * An input step (`"kind": "input"`): it routes exactly as a gate-routed step (its gate and
 * transitions are checked by the same rules), but a person answers, not a model: it takes no
 * check, model settings or validators; every intent a person can pick that moves the run on
 * (`next`, `jump`) has a transition, and `waitTimeout` takes an intent the step allows.
 */
export function checkInputStep(step: FlowStep, fail: (message: string) => void): void {
  const raw = step.raw;
  const extra = (
    ["check", "model", "allowedTools", "permissionMode", "timeoutMs", "validation"] as const
  ).filter((k) => raw[k] !== undefined);
  if (extra.length > 0) {
    fail(
      `is an input step: a person answers it, not a model, so it takes no ${
        extra.join(", ")
      }. Remove ${extra.length > 1 ? "them" : "it"} (waitTimeout limits the wait).`,
    );
  }
  const gate = step.gate;
  if (!gate) return; // reported with the other steps that lack a structuredGate
  for (const intent of gate.allowedIntents) {
    if ((intent === "next" || intent === "jump") && !step.transitions[intent]) {
      fail(
        `structuredGate.allowedIntents includes "${intent}" but transitions.${intent} is missing: a person's answer needs a step to go to. Add "transitions": { "${intent}": { "target": "<stepId>" } }, or remove "${intent}" from allowedIntents.`,
      );
    }
  }
  const timeout = step.waitTimeout;
  if (timeout && !gate.allowedIntents.includes(timeout.intent)) {
    fail(
      `waitTimeout.intent "${timeout.intent}" is not in structuredGate.allowedIntents (${
        gate.allowedIntents.join(", ")
      }); add it there or take another intent when the wait passes.`,
    );
  }
}

/** `waitTimeout` on a step that does not wait. */
export function checkWaitTimeoutPlace(step: FlowStep, fail: (message: string) => void): void {
  if (step.kind !== "input" && step.raw.waitTimeout !== undefined) {
    fail(
      'sets "waitTimeout" but is not an input step: only a step that waits for a person takes it. Add "kind": "input", or remove "waitTimeout".',
    );
  }
}
