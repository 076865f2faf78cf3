import { PlanParseError } from "./errors.ts";
import {
  bodyContent,
  inputsDeclaration,
  parentIdOf,
  parseSummaryTail,
  splitNames,
  statusOfMarker,
} from "./syntax.ts";
import { createPlanSpec, type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

/** The fields of a step summary line, before it is placed in the tree. */
interface SummaryLine {
  stepId: string;
  status: PlanStatus;
  stepName: string;
  stepType: string;
  rest: string;
}

/**
 * Reads one step summary line (already trimmed at the start):
 * `N. [status] step_name [type] description → outputs | result | Progress: N/M`.
 * Returns an error reason instead of throwing so that callers can add the line number.
 */
function readSummaryLine(line: string): SummaryLine | string {
  let pos = 0;
  const len = line.length;
  // Step id: digits and dots, with an optional trailing dot.
  while (pos < len) {
    const c = line.charCodeAt(pos);
    if ((c >= 48 && c <= 57) || c === 46) pos++;
    else break;
  }
  let stepId = line.slice(0, pos);
  if (stepId.endsWith(".")) stepId = stepId.slice(0, -1);
  if (!/^\d+(?:\.\d+)*$/.test(stepId)) {
    return "a step line must start with a step number like 1. or 2.1.";
  }
  const next = line.charCodeAt(pos);
  if (pos < len && next !== 32 && next !== 9 && next !== 91) {
    return `expected a space after the step number ${stepId}.`;
  }
  pos = skipSpaces(line, pos);
  let status: PlanStatus = PlanStatus.PENDING;
  if (line.charCodeAt(pos) === 91 && line.charCodeAt(pos + 2) === 93) {
    const marked = statusOfMarker(line[pos + 1]);
    if (marked !== undefined) {
      status = marked;
      pos = skipSpaces(line, pos + 3);
    }
  }
  let stepName = "";
  if (pos < len && line.charCodeAt(pos) !== 91) {
    const start = pos;
    while (pos < len && line.charCodeAt(pos) !== 32 && line.charCodeAt(pos) !== 9) pos++;
    stepName = line.slice(start, pos);
    pos = skipSpaces(line, pos);
  }
  if (pos >= len || line.charCodeAt(pos) !== 91) {
    return `step ${stepId} has no [type]; write it as "${stepId}. [reason|act|decide|subtask] description"`;
  }
  const close = line.indexOf("]", pos + 1);
  if (close < 0) return `step ${stepId} has an unclosed [type] bracket`;
  return {
    stepId,
    status,
    stepName,
    stepType: line.slice(pos + 1, close).trim(),
    rest: line.slice(close + 1),
  };
}

function skipSpaces(line: string, pos: number): number {
  while (pos < line.length) {
    const c = line.charCodeAt(pos);
    if (c === 32 || c === 9) pos++;
    else break;
  }
  return pos;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * Builds the step tree from summary and body lines. Step ids encode the tree: the parent of `2.1.3`
 * is `2.1`, which must be an ancestor of the current position, and the k-th child of `P` must be
 * numbered `P.k` (top-level steps `1`, `2`, …, or `<root>.1`, … under a non-empty root id).
 */
class TreeBuilder {
  readonly steps: PlanStep[] = [];
  readonly #rootId: string;
  /** The path from the top-level step to the last step read. */
  readonly #stack: PlanStep[] = [];
  #last: PlanStep | undefined;

  constructor(rootId = "") {
    this.#rootId = rootId;
  }

  get last(): PlanStep | undefined {
    return this.#last;
  }

  addStepLine(line: string, lineNo: number, raw: string): void {
    const summary = readSummaryLine(line);
    if (typeof summary === "string") throw new PlanParseError(lineNo, raw, summary);
    const parentId = parentIdOf(summary.stepId);
    const stack = this.#stack;
    let siblings: PlanStep[];
    let expected: string;
    if (parentId === this.#rootId) {
      stack.length = 0;
      siblings = this.steps;
      expected = this.#rootId === ""
        ? String(siblings.length + 1)
        : `${this.#rootId}.${siblings.length + 1}`;
    } else {
      while (stack.length > 0 && stack[stack.length - 1].stepId !== parentId) stack.pop();
      if (stack.length === 0) {
        const where = this.#rootId === "" ? "" : ` under step ${this.#rootId}`;
        throw new PlanParseError(
          lineNo,
          raw,
          `step ${summary.stepId} has no parent step ${parentId}${where} above it (a step's parent must come first, e.g. 2 before 2.1)`,
        );
      }
      const parent = stack[stack.length - 1];
      siblings = parent.children;
      expected = `${parentId}.${siblings.length + 1}`;
    }
    if (summary.stepId !== expected) {
      throw new PlanParseError(
        lineNo,
        raw,
        `step ${summary.stepId} is out of sequence: expected ${expected} (the k-th child of step P is numbered P.k)`,
      );
    }
    const tail = parseSummaryTail(summary.rest);
    const step: PlanStep = {
      stepId: summary.stepId,
      stepName: summary.stepName,
      stepType: summary.stepType,
      description: tail.description,
      inputs: [],
      outputs: tail.outputs,
      detail: [],
      result: tail.result,
      status: summary.status,
      doneCount: tail.doneCount,
      totalCount: tail.totalCount,
      children: [],
    };
    siblings.push(step);
    stack.push(step);
    this.#last = step;
  }

  /** Adds a `>` line to the last step; returns false when there is no step yet. */
  addBodyLine(line: string): boolean {
    const step = this.#last;
    if (!step) return false;
    const content = bodyContent(line);
    const inputs = inputsDeclaration(content);
    if (inputs === undefined) step.detail.push(content);
    else for (const name of splitNames(inputs)) step.inputs.push(name);
    return true;
  }
}

type Section = "header" | "goal" | "constraints" | "steps";

const TITLE = /^#(?!#)\s*(.*)$/;
const GOAL = /^(?:\*\*goal\*\*\s*:|\*\*goal:\*\*|goal\s*:)(.*)$/i;
const CONSTRAINTS = /^(?:constraints\s*:|##\s*constraints\b)(.*)$/i;
const STEPS = /^##\s*steps\b(.*)$/i;

/**
 * Parses PlanSpec text into a {@linkcode PlanSpec}.
 *
 * - an empty (or blank) text gives an empty plan;
 * - step ids encode the tree (`2.1` is a child of `2`); indentation is ignored;
 * - status markers are optional (`pending` by default); `[type]` may be followed by text directly;
 * - `→ outputs` (or `->`) ends the description; `| result` and `| Progress: N/M` / `| Progress: N`
 *   follow;
 * - `> ← inputs` (or `> <- inputs`) body lines fill `inputs`, other `>` lines fill `detail`;
 * - `**Goal**:` and `## Constraints` are accepted besides `Goal:` and `Constraints:`; step lines
 *   without a `## Steps` heading are accepted too.
 *
 * @throws {PlanParseError} naming the line number and quoting the line.
 *
 * @example
 * ```ts
 * import { parsePlan } from "./parse.ts";
 * const plan = parsePlan(`Goal: Ship
 * ## Steps
 * 1. [x] [act] Build -> artifact | built in 2 min
 * 2. [subtask] Release → release
 *   2.1. [act] Tag the commit
 *     > ← artifact
 * `);
 * console.log(plan.steps[1].children[0].inputs); // ["artifact"]
 * ```
 */
export function parsePlan(text: string): PlanSpec {
  const plan = createPlanSpec();
  const builder = new TreeBuilder();
  plan.steps = builder.steps;
  let section: Section = "header";
  let titleSeen = false;
  let goalSeen = false;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let raw = lines[i];
    if (raw.endsWith("\r")) raw = raw.slice(0, -1);
    const line = raw.trimStart();
    if (line === "") continue;
    const first = line.charCodeAt(0);
    if (isDigit(first)) {
      builder.addStepLine(line, i + 1, raw);
      section = "steps";
      continue;
    }
    if (first === 62 /* > */) {
      if (section === "steps") {
        if (!builder.addBodyLine(line)) {
          throw new PlanParseError(i + 1, raw, "a '>' body line must follow a step line");
        }
      } else if (section === "goal") {
        plan.goalDetail.push(bodyContent(line));
      } else {
        throw new PlanParseError(
          i + 1,
          raw,
          "a '>' line must follow 'Goal:' (goal explanation) or a step line (node body)",
        );
      }
      continue;
    }
    if (section === "steps") {
      throw new PlanParseError(
        i + 1,
        raw,
        "unexpected text among the steps: expected a step line like '1. [act] description' or a '>' body line",
      );
    }
    const trimmed = line.trimEnd();
    let m: RegExpExecArray | null;
    if ((m = STEPS.exec(trimmed))) {
      expectNoTrailer(m[1], i + 1, raw, "## Steps");
      section = "steps";
    } else if ((m = CONSTRAINTS.exec(trimmed))) {
      expectNoTrailer(m[1], i + 1, raw, "Constraints:");
      section = "constraints";
    } else if ((m = GOAL.exec(trimmed))) {
      if (goalSeen) throw new PlanParseError(i + 1, raw, "the plan has a second 'Goal:' line");
      goalSeen = true;
      plan.goal = m[1].trim();
      section = "goal";
    } else if (first === 45 /* - */ && section === "constraints") {
      plan.constraints.push(trimmed.slice(1).trim());
    } else if ((m = TITLE.exec(trimmed))) {
      if (titleSeen || goalSeen || section !== "header") {
        throw new PlanParseError(
          i + 1,
          raw,
          "a '# Plan: <title>' line may only appear once, at the top",
        );
      }
      titleSeen = true;
      plan.title = m[1].replace(/^plan\s*:/i, "").trim();
    } else if (first === 45) {
      throw new PlanParseError(i + 1, raw, "a '- ' list item must follow 'Constraints:'");
    } else {
      throw new PlanParseError(
        i + 1,
        raw,
        "unexpected text: expected '# Plan: <title>', 'Goal: <goal>', 'Constraints:', '## Steps' or a step line",
      );
    }
  }
  return plan;
}

/** Section headings may carry a trailing `# annotation` (as in the seed's template), nothing else. */
function expectNoTrailer(trailer: string, lineNo: number, raw: string, heading: string): void {
  const t = trailer.trim();
  if (t !== "" && !t.startsWith("#")) {
    throw new PlanParseError(lineNo, raw, `unexpected text after '${heading}'`);
  }
}

/**
 * Parses step lines (with their `>` body lines) into a list of steps, for example the new children
 * an LLM writes for a container during a subtree `REPLAN`. With `rootId` `"4"` the steps must be
 * numbered `4.1`, `4.2`, …; lines that are neither step nor body lines are ignored (LLM prose).
 *
 * @throws {PlanParseError} for malformed or mis-numbered step lines
 */
export function parseStepLines(text: string, rootId = ""): PlanStep[] {
  const builder = new TreeBuilder(rootId);
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let raw = lines[i];
    if (raw.endsWith("\r")) raw = raw.slice(0, -1);
    const line = raw.trimStart();
    if (line === "") continue;
    const first = line.charCodeAt(0);
    if (isDigit(first) && /^\d+(?:\.\d+)*\.?[\s[]/.test(line)) {
      builder.addStepLine(line, i + 1, raw);
    } else if (first === 62 && builder.last) builder.addBodyLine(line);
  }
  return builder.steps;
}
