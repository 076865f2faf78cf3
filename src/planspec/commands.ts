import { MAX_PLAN_DEPTH } from "./depth.ts";
import {
  bodyContent,
  inputsDeclaration,
  isStepId,
  parentIdOf,
  parseSummaryTail,
  splitNames,
} from "./syntax.ts";
import { collapseStep, expandStep, findStep, renumberSteps, stepLabel, walkSteps } from "./tree.ts";
import {
  createPlanCommand,
  isContainerType,
  isValidStepType,
  PLAN_OPS,
  type PlanCommand,
  type PlanOp,
  type PlanSpec,
  PlanStatus,
  type PlanStep,
} from "./types.ts";

/** Options of {@linkcode parsePlanCommands}. */
export interface ParseCommandsOptions {
  /**
   * Called for every `PLAN_CMD:` line that is skipped (unknown verb, missing step id or type, bare
   * `REPLAN`), with the 1-based line number, the line and the reason: a debug log.
   */
  onIgnored?: (lineNo: number, line: string, reason: string) => void;
}

const PREFIX = "PLAN_CMD:";

/**
 * Extracts the `PLAN_CMD:` commands from LLM output; every other line (the model's reasoning) is
 * ignored. `ADD` and `REVISE` take the `>` lines right below them as the new node body (`> ← a, b`
 * lines as inputs). Unknown verbs and malformed commands are skipped; so is a bare `REPLAN` (a
 * global re-plan must say `REPLAN ALL`, case-insensitive).
 *
 * Formats: `DONE|BLOCKED|SKIP <id> | <result>`, `ADD|REVISE <id> [type] description → outputs`,
 * `REPLAN <id>|ALL | <reason>`, `EXPAND|COLLAPSE <id>`.
 *
 * @example
 * ```ts
 * import { parsePlanCommands } from "./commands.ts";
 * const cmds = parsePlanCommands(`The cleaning failed, so verify first.
 * PLAN_CMD: ADD 2.3 [reason] Verify cleaned data has no nulls → verdict
 * > ← cleaned_data
 * > Check null rate < 0.1%
 * PLAN_CMD: REPLAN all | wrong goal
 * PLAN_CMD: REPLAN`);
 * console.log(cmds.map((c) => `${c.op} ${c.stepId}`)); // ["ADD 2.3", "REPLAN ALL"]
 * console.log(cmds[0].inputs, cmds[0].detail); // ["cleaned_data"] ["Check null rate < 0.1%"]
 * ```
 */
export function parsePlanCommands(
  text: string,
  options: ParseCommandsOptions = {},
): PlanCommand[] {
  const commands: PlanCommand[] = [];
  const ignore = options.onIgnored ?? (() => {});
  let open: PlanCommand | undefined;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line.startsWith(PREFIX)) {
      if (open && line.startsWith(">")) {
        const content = bodyContent(line);
        const inputs = inputsDeclaration(content);
        if (inputs === undefined) open.detail.push(content);
        else open.inputs.push(...splitNames(inputs));
      } else {
        open = undefined;
      }
      continue;
    }
    open = undefined;
    const parsed = parseCommandLine(line.slice(PREFIX.length).trim());
    if (typeof parsed === "string") {
      ignore(i + 1, line, parsed);
      continue;
    }
    commands.push(parsed);
    if (parsed.op === "ADD" || parsed.op === "REVISE") open = parsed;
  }
  return commands;
}

function parseCommandLine(body: string): PlanCommand | string {
  const space = body.search(/\s/);
  const verb = (space < 0 ? body : body.slice(0, space)).toUpperCase();
  const rest = space < 0 ? "" : body.slice(space).trim();
  if (!(PLAN_OPS as readonly string[]).includes(verb)) {
    return `unknown operation ${JSON.stringify(verb)} (valid: ${PLAN_OPS.join(", ")})`;
  }
  const op = verb as PlanOp;
  if (op === "ADD" || op === "REVISE") {
    const m = /^(\S+?)\.?\s+\[([^\]]*)\](.*)$/.exec(rest);
    if (!m || !isStepId(m[1])) {
      return `${op} needs a step id and a [type]: ${op} 2.3 [reason] description → outputs`;
    }
    const tail = parseSummaryTail(m[3]);
    return createPlanCommand({
      op,
      stepId: m[1],
      stepType: m[2].trim(),
      description: tail.description,
      outputs: tail.outputs,
      result: tail.result,
    });
  }
  const pipe = rest.indexOf("|");
  const target = (pipe < 0 ? rest : rest.slice(0, pipe)).trim().replace(/\.$/, "");
  const result = pipe < 0 ? "" : rest.slice(pipe + 1).trim();
  if (target === "") {
    if (op === "REPLAN") {
      return "bare REPLAN ignored: write REPLAN ALL to re-plan everything or REPLAN <step_id>";
    }
    return `${op} needs a step id`;
  }
  if (op === "REPLAN" && target.toUpperCase() === "ALL") {
    return createPlanCommand({ op, stepId: "ALL", result });
  }
  if (!isStepId(target)) return `${op}: ${JSON.stringify(target)} is not a step id like 2 or 2.1`;
  return createPlanCommand({ op, stepId: target, result });
}

/**
 * Executes one command on `plan`, in place, deterministically.
 *
 * - `DONE` / `BLOCKED` / `SKIP`: set the status (and the result when given); `SKIP` also skips the
 *   step's unfinished descendants.
 * - `ADD P.k`: inserts a pending step as the k-th child of `P` (a `subtask`/`decide`), or as the k-th
 *   top-level step; later siblings are renumbered. k may be at most one past the last child.
 * - `REVISE id`: replaces type, description and outputs (the whole summary line); `>` lines replace
 *   the node body (detail and inputs), without them the body is kept. The step becomes pending with
 *   no result, so it runs again.
 * - `REPLAN id`: clears a container's children and makes it pending (the engine then generates new
 *   ones). `REPLAN ALL` does nothing here: the engine regenerates the whole plan.
 * - `EXPAND` / `COLLAPSE`: view flags, see {@linkcode expandStep}.
 *
 * @returns `""` on success, otherwise an error message that starts with the command
 *
 * @example
 * ```ts
 * import { applyCommand, createPlanCommand, parsePlan } from "./mod.ts";
 * const plan = parsePlan("Goal: g\n1. [act] A\n2. [act] B\n");
 * applyCommand(plan, createPlanCommand({ op: "ADD", stepId: "2", stepType: "reason", description: "Check A" }));
 * console.log(plan.steps.map((s) => `${s.stepId} ${s.description}`)); // ["1 A", "2 Check A", "3 B"]
 * ```
 */
export function applyCommand(plan: PlanSpec, cmd: PlanCommand): string {
  const error = execute(plan, cmd);
  return error === "" ? "" : `${cmd.op} ${cmd.stepId}: ${error}`;
}

/**
 * Executes commands in order (each sees the plan as left by the previous one).
 *
 * @returns the error messages; an empty list means every command succeeded
 */
export function applyCommands(plan: PlanSpec, commands: PlanCommand[]): string[] {
  const errors: string[] = [];
  for (const cmd of commands) {
    const error = applyCommand(plan, cmd);
    if (error !== "") errors.push(error);
  }
  return errors;
}

function execute(plan: PlanSpec, cmd: PlanCommand): string {
  switch (cmd.op) {
    case "DONE":
      return setStatus(plan, cmd, PlanStatus.DONE);
    case "BLOCKED":
      return setStatus(plan, cmd, PlanStatus.BLOCKED);
    case "SKIP":
      return setStatus(plan, cmd, PlanStatus.SKIPPED);
    case "ADD":
      return add(plan, cmd);
    case "REVISE":
      return revise(plan, cmd);
    case "REPLAN":
      return replan(plan, cmd);
    case "EXPAND":
      return expandStep(plan, cmd.stepId);
    case "COLLAPSE":
      return collapseStep(plan, cmd.stepId);
    default:
      return `unknown operation '${(cmd as PlanCommand).op}'`;
  }
}

function setStatus(plan: PlanSpec, cmd: PlanCommand, status: PlanStatus): string {
  const found = findStep(plan, cmd.stepId);
  if (!found) return `step ${cmd.stepId} not found`;
  found.step.status = status;
  if (cmd.result !== "") found.step.result = cmd.result;
  if (status === PlanStatus.SKIPPED) skipUnfinished(found.step.children);
  return "";
}

/** Marks every pending, active or blocked step of a subtree as skipped. */
export function skipUnfinished(steps: PlanStep[]): void {
  walkSteps(steps, (step) => {
    if (step.status !== PlanStatus.DONE && step.status !== PlanStatus.SKIPPED) {
      step.status = PlanStatus.SKIPPED;
    }
  });
}

function checkType(stepType: string): string {
  return isValidStepType(stepType)
    ? ""
    : `invalid type '${stepType}' (expected reason, act, decide or subtask)`;
}

function add(plan: PlanSpec, cmd: PlanCommand): string {
  const typeError = checkType(cmd.stepType);
  if (typeError) return typeError;
  if (cmd.stepId.split(".").length > MAX_PLAN_DEPTH) {
    return `step ${cmd.stepId} would be nested more than ${MAX_PLAN_DEPTH} levels deep (the PlanSpec limit); add it higher up`;
  }
  const parentId = parentIdOf(cmd.stepId);
  let siblings = plan.steps;
  let parent: PlanStep | undefined;
  if (parentId !== "") {
    const found = findStep(plan, parentId);
    if (!found) return `parent step ${parentId} not found`;
    parent = found.step;
    if (!isContainerType(parent.stepType)) {
      return `parent ${
        stepLabel(parent)
      } is type '${parent.stepType}', which cannot have children (only subtask/decide)`;
    }
    siblings = parent.children;
  }
  const position = Number(cmd.stepId.slice(parentId === "" ? 0 : parentId.length + 1));
  if (position < 1 || position > siblings.length + 1) {
    const where = parent ? `step ${parentId} has` : "the plan has";
    return `position ${position} is out of range: ${where} ${siblings.length} step(s), so use ${
      parentId === "" ? "" : parentId + "."
    }1 to ${parentId === "" ? "" : parentId + "."}${siblings.length + 1}`;
  }
  const step: PlanStep = {
    stepId: cmd.stepId,
    stepName: "",
    stepType: cmd.stepType,
    description: cmd.description,
    inputs: [...cmd.inputs],
    outputs: [...cmd.outputs],
    detail: [...cmd.detail],
    result: "",
    status: PlanStatus.PENDING,
    doneCount: 0,
    totalCount: null,
    children: [],
  };
  siblings.splice(position - 1, 0, step);
  renumberSteps(siblings, parentId, position - 1);
  if (parent && (parent.status === PlanStatus.DONE || parent.status === PlanStatus.SKIPPED)) {
    parent.status = PlanStatus.ACTIVE;
  }
  return "";
}

function revise(plan: PlanSpec, cmd: PlanCommand): string {
  const found = findStep(plan, cmd.stepId);
  if (!found) return `step ${cmd.stepId} not found`;
  const typeError = checkType(cmd.stepType);
  if (typeError) return typeError;
  const step = found.step;
  if (!isContainerType(cmd.stepType) && step.children.length > 0) {
    return `${
      stepLabel(step)
    } has children, so it cannot become type '${cmd.stepType}'; REPLAN it or keep a subtask/decide type`;
  }
  step.stepType = cmd.stepType;
  step.description = cmd.description;
  step.outputs = [...cmd.outputs];
  if (cmd.detail.length > 0 || cmd.inputs.length > 0) {
    step.detail = [...cmd.detail];
    step.inputs = [...cmd.inputs];
  }
  step.status = PlanStatus.PENDING;
  step.result = "";
  step.doneCount = 0;
  step.totalCount = null;
  return "";
}

function replan(plan: PlanSpec, cmd: PlanCommand): string {
  if (cmd.stepId === "" || cmd.stepId.toUpperCase() === "ALL") return "";
  const found = findStep(plan, cmd.stepId);
  if (!found) return `step ${cmd.stepId} not found`;
  const step = found.step;
  if (!isContainerType(step.stepType)) {
    return `${
      stepLabel(step)
    } is type '${step.stepType}': REPLAN <id> only applies to subtask/decide containers (use REVISE for a leaf)`;
  }
  step.children = [];
  step.status = PlanStatus.PENDING;
  step.result = "";
  step.doneCount = 0;
  step.totalCount = null;
  return "";
}

/** Formats a command back to its `PLAN_CMD:` text (with `>` lines for ADD/REVISE). */
export function formatPlanCommand(cmd: PlanCommand): string {
  const head = `PLAN_CMD: ${cmd.op}${cmd.stepId === "" ? "" : " " + cmd.stepId}`;
  if (cmd.op === "ADD" || cmd.op === "REVISE") {
    let line = `${head} [${cmd.stepType}]${cmd.description === "" ? "" : " " + cmd.description}`;
    if (cmd.outputs.length > 0) line += " → " + cmd.outputs.join(", ");
    const body: string[] = [line];
    if (cmd.inputs.length > 0) body.push("> ← " + cmd.inputs.join(", "));
    for (const d of cmd.detail) body.push(d === "" ? ">" : "> " + d);
    return body.join("\n");
  }
  return cmd.result === "" ? head : `${head} | ${cmd.result}`;
}
