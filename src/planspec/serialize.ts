import { PlanSerializeError } from "./errors.ts";
import { hasArrow, hasProgressSegment, inputsDeclaration, STATUS_MARKERS } from "./syntax.ts";
import { type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

/** Options of {@linkcode serializePlan}. */
export interface SerializeOptions {
  /**
   * `false` (default): the complete text, the inverse of `parsePlan`. `true`: node bodies and
   * children are shown or hidden by the folding rules (for LLM context): `expanded: false` hides
   * body and children, `expanded: true` shows both, otherwise active and blocked steps show their
   * body, the others hide it, and children always show.
   */
  fold?: boolean;
}

const INDENTS: string[] = [""];

function indent(depth: number): string {
  while (INDENTS.length <= depth) INDENTS.push(INDENTS[INDENTS.length - 1] + "  ");
  return INDENTS[depth];
}

/**
 * Serializes a plan to PlanSpec text (ending with a newline). `parsePlan(serializePlan(p))` equals
 * `p` for every plan the format can express; a value it cannot express (a line break in a field,
 * `|` in a description, `,` in a variable name, a detail line starting with `←`, a step id that
 * does not match its position, …) throws {@linkcode PlanSerializeError} rather than writing text
 * that would read back differently.
 *
 * @example
 * ```ts
 * import { parsePlan, serializePlan } from "./mod.ts";
 * const text = "Goal: Ship\n## Steps\n1. [x] [act] Build → artifact | ok\n  > use the release profile\n";
 * console.log(serializePlan(parsePlan(text)) === text); // true
 * console.log(serializePlan(parsePlan(text), { fold: true })); // the done step's body is folded
 * ```
 */
export function serializePlan(plan: PlanSpec, options: SerializeOptions = {}): string {
  const fold = options.fold === true;
  const out: string[] = [];
  if (plan.title !== "") out.push("# Plan: " + checkLine(plan.title, "the title"));
  if (plan.goal !== "" || plan.goalDetail.length > 0) {
    out.push(plan.goal === "" ? "Goal:" : "Goal: " + checkLine(plan.goal, "the goal"));
  }
  for (const line of plan.goalDetail) {
    if (hasBreak(line)) throw new PlanSerializeError("a goal detail line contains a line break");
    out.push(line === "" ? ">" : "> " + line);
  }
  if (plan.constraints.length > 0) {
    out.push("Constraints:");
    for (const c of plan.constraints) {
      out.push(c === "" ? "-" : "- " + checkLine(c, "a constraint"));
    }
  }
  out.push("## Steps");
  writeSteps(out, plan.steps, "", 0, fold);
  out.push("");
  return out.join("\n");
}

function writeSteps(
  out: string[],
  steps: PlanStep[],
  prefix: string,
  depth: number,
  fold: boolean,
): void {
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    const expectedId = prefix === "" ? String(i + 1) : prefix + "." + (i + 1);
    if (step.stepId !== expectedId) {
      throw new PlanSerializeError(
        `step ${step.stepId} is at position ${expectedId}: step ids must match the tree position (call renumberSteps(plan) after moving steps)`,
        step.stepId,
      );
    }
    out.push(summaryLine(step, depth));
    let showBody = true;
    let showChildren = true;
    if (fold) {
      if (step.expanded === false) showBody = showChildren = false;
      else if (step.expanded !== true) {
        showBody = step.status === PlanStatus.ACTIVE || step.status === PlanStatus.BLOCKED;
      }
    }
    if (showBody) writeBody(out, step, depth + 1);
    if (showChildren && step.children.length > 0) {
      writeSteps(out, step.children, step.stepId, depth + 1, fold);
    }
  }
}

function summaryLine(step: PlanStep, depth: number): string {
  const id = step.stepId;
  const type = step.stepType;
  let line = indent(depth) + id + ".";
  if (step.status !== PlanStatus.PENDING) {
    const marker = STATUS_MARKERS[step.status];
    if (marker === undefined) fail(id, `has an unknown status ${JSON.stringify(step.status)}`);
    line += " " + marker;
  } else if (type.length === 1 && " xX>!~".indexOf(type) >= 0 && step.stepName === "") {
    // `[x]` right after the number would read as a status marker, so spell out pending.
    line += " [ ]";
  }
  if (step.stepName !== "") line += " " + checkName(step);
  if (type.indexOf("]") >= 0 || hasBreak(type) || type !== type.trim()) {
    fail(id, `type ${JSON.stringify(type)} cannot be written inside [ ]`);
  }
  line += " [" + type + "]";
  const description = step.description;
  if (description !== "") {
    if (description.indexOf("|") >= 0) {
      fail(id, "description contains '|', which separates the result on a summary line");
    }
    line += " " + checkField(description, id, "description");
  }
  if (step.outputs.length > 0) {
    line += " → " + checkNames(step.outputs, id, "outputs", true);
  } else if (description !== "" && hasArrow(description)) {
    // An arrow inside the description would read as the outputs arrow: close it with an empty one.
    line += " →";
  }
  const result = step.result;
  const withProgress = step.doneCount !== 0 || step.totalCount !== null ||
    hasProgressSegment(result);
  if (result !== "") line += " | " + checkField(result, id, "result");
  if (withProgress) {
    line += step.totalCount === null
      ? " | Progress: " + checkCount(step.doneCount, id)
      : " | Progress: " + checkCount(step.doneCount, id) + "/" + checkCount(step.totalCount, id);
  }
  return line;
}

function writeBody(out: string[], step: PlanStep, depth: number): void {
  const pad = indent(depth);
  if (step.inputs.length > 0) {
    out.push(pad + "> ← " + checkNames(step.inputs, step.stepId, "inputs", false));
  }
  for (const line of step.detail) {
    if (line === "") {
      out.push(pad + ">");
      continue;
    }
    if (hasBreak(line)) fail(step.stepId, "has a detail line with a line break");
    if (inputsDeclaration(line) !== undefined) {
      fail(step.stepId, `has a detail line starting with an inputs arrow: ${JSON.stringify(line)}`);
    }
    out.push(pad + "> " + line);
  }
}

function checkName(step: PlanStep): string {
  const name = step.stepName;
  if (/\s/.test(name) || name.startsWith("[")) {
    fail(step.stepId, `name ${JSON.stringify(name)} must be one word not starting with '['`);
  }
  return name;
}

function checkNames(names: string[], id: string, what: string, isOutputs: boolean): string {
  for (const n of names) {
    if (
      n === "" || n !== n.trim() || n.indexOf(",") >= 0 || n.indexOf("|") >= 0 || hasBreak(n) ||
      (isOutputs && hasArrow(n))
    ) {
      fail(id, `has ${what} name ${JSON.stringify(n)} that the comma-separated list cannot hold`);
    }
  }
  return names.join(", ");
}

function checkField(text: string, id: string, what: string): string {
  if (hasBreak(text)) fail(id, `${what} contains a line break`);
  if (text !== text.trim()) fail(id, `${what} has leading or trailing whitespace`);
  return text;
}

function checkCount(n: number, id: string): number {
  if (!Number.isSafeInteger(n) || n < 0) fail(id, `progress count ${n} is not a whole number ≥ 0`);
  return n;
}

function checkLine(text: string, what: string): string {
  if (hasBreak(text)) throw new PlanSerializeError(`${what} contains a line break`);
  if (text !== text.trim()) {
    throw new PlanSerializeError(`${what} has leading or trailing whitespace`);
  }
  return text;
}

function hasBreak(text: string): boolean {
  return text.indexOf("\n") >= 0 || text.indexOf("\r") >= 0;
}

function fail(stepId: string, message: string): never {
  throw new PlanSerializeError(`step ${stepId} ${message}`, stepId);
}
