import { MAX_PLAN_DEPTH, PlanTooDeepError } from "./depth.ts";
import { PlanParseError } from "./errors.ts";
import { ForwardSearch } from "./forward_search.ts";
import { isIdAt, isWhitespace, readResultSegments } from "./syntax.ts";
import { createPlanSpec, type PlanSpec, PlanStatus, type PlanStep } from "./types.ts";

// The parser works on character positions in the whole text: one pass, one slice per field, no
// intermediate line strings, so a plan of n steps parses in O(n) with few allocations.

/** `text[start, end)` without surrounding whitespace (as `trim()` would), sliced once. */
function trimmedSlice(text: string, start: number, end: number): string {
  while (start < end && isWhitespace(text.charCodeAt(start))) start++;
  while (end > start && isWhitespace(text.charCodeAt(end - 1))) end--;
  return start === end ? "" : text.slice(start, end);
}

/**
 * Names are gathered here, then copied into an array of their exact size: an array grown by `push`
 * from empty reserves 17 slots, which the plan would carry (and the garbage collector copy) for
 * every step's outputs and inputs — most of a parse's time went to collecting.
 */
const gathered: string[] = [];

/** Comma-separated names in `text[start, end)`, trimmed, empty ones dropped. */
function namesIn(text: string, start: number, end: number): string[] {
  let from = start;
  for (let i = start; i <= end; i++) {
    if (i === end || text.charCodeAt(i) === 44) {
      const name = trimmedSlice(text, from, i);
      if (name !== "") gathered.push(name);
      from = i + 1;
    }
  }
  const names = gathered.slice();
  gathered.length = 0;
  return names;
}

function skipBlanks(text: string, pos: number, end: number): number {
  while (pos < end) {
    const c = text.charCodeAt(pos);
    if (c === 32 || c === 9) pos++;
    else break;
  }
  return pos;
}

function statusOfCode(c: number): PlanStatus | undefined {
  switch (c) {
    case 32:
      return PlanStatus.PENDING;
    case 120: // x
    case 88: // X
      return PlanStatus.DONE;
    case 62: // >
      return PlanStatus.ACTIVE;
    case 33: // !
      return PlanStatus.BLOCKED;
    case 126: // ~
      return PlanStatus.SKIPPED;
    default:
      return undefined;
  }
}

const BAD_NUMBER = "a step line must start with a step number like 1. or 2.1.";

/**
 * The searches a parse makes for the characters that end a step's description (`|`) and start its
 * outputs (`→`, `->`): native, and each character scanned once (see {@linkcode ForwardSearch}).
 * Descriptions are most of a plan's text; a `charCodeAt` loop over them was half of reading a step.
 */
class TailSearches {
  readonly pipe: ForwardSearch;
  readonly arrow: ForwardSearch;
  readonly asciiArrow: ForwardSearch;

  constructor(text: string) {
    this.pipe = new ForwardSearch(text, "|");
    this.arrow = new ForwardSearch(text, "→");
    this.asciiArrow = new ForwardSearch(text, "->");
  }
}

/**
 * Reads the summary line `text[start, end)` (start is its first non-blank character, a digit):
 * `N. [status] step_name [type] description → outputs | result | Progress: N/M`. Returns the step
 * (without tree placement) or the reason it is malformed. `search` serves the lines of `text` in
 * order.
 */
function readStep(
  text: string,
  start: number,
  end: number,
  search: TailSearches,
): PlanStep | string {
  let pos = start;
  while (pos < end) {
    const c = text.charCodeAt(pos);
    if ((c >= 48 && c <= 57) || c === 46) pos++;
    else break;
  }
  // Digit groups separated by single dots, optionally followed by one dot.
  const idEnd = text.charCodeAt(pos - 1) === 46 ? pos - 1 : pos;
  if (idEnd === start) return BAD_NUMBER;
  for (let i = start; i < idEnd; i++) {
    if (
      text.charCodeAt(i) === 46 &&
      (i === start || text.charCodeAt(i - 1) === 46 || i === idEnd - 1)
    ) return BAD_NUMBER;
  }
  const stepId = text.slice(start, idEnd);
  const after = text.charCodeAt(pos);
  if (pos < end && after !== 32 && after !== 9 && after !== 91) {
    return `expected a space after the step number ${stepId}.`;
  }
  pos = skipBlanks(text, pos, end);
  let status: PlanStatus = PlanStatus.PENDING;
  if (pos + 2 < end && text.charCodeAt(pos) === 91 && text.charCodeAt(pos + 2) === 93) {
    const marked = statusOfCode(text.charCodeAt(pos + 1));
    if (marked !== undefined) {
      status = marked;
      pos = skipBlanks(text, pos + 3, end);
    }
  }
  let stepName = "";
  if (pos < end && text.charCodeAt(pos) !== 91) {
    const nameStart = pos;
    while (pos < end) {
      const c = text.charCodeAt(pos);
      if (c === 32 || c === 9) break;
      pos++;
    }
    stepName = text.slice(nameStart, pos);
    pos = skipBlanks(text, pos, end);
  }
  if (pos >= end || text.charCodeAt(pos) !== 91) {
    return `step ${stepId} has no [type]; write it as "${stepId}. [reason|act|decide|subtask] description"`;
  }
  let close = pos + 1;
  while (close < end && text.charCodeAt(close) !== 93) close++;
  if (close >= end) return `step ${stepId} has an unclosed [type] bracket`;
  const stepType = typeName(text, pos + 1, close);
  // The first `|` ends the description; the last arrow before it (`→`, or `->` whose `-` follows
  // the `]`) starts the outputs.
  const from = close + 1;
  const pipe = search.pipe.at(from);
  const headEnd = pipe < end ? pipe : end;
  let arrow = -1;
  for (let i = search.arrow.at(from); i < headEnd; i = search.arrow.at(i + 1)) arrow = i;
  let asciiArrow = -1;
  for (let i = search.asciiArrow.at(from); i + 1 < headEnd; i = search.asciiArrow.at(i + 1)) {
    asciiArrow = i;
  }
  let arrowLength = 1;
  if (asciiArrow > arrow) {
    arrow = asciiArrow;
    arrowLength = 2;
  }
  const step: PlanStep = {
    stepId,
    stepName,
    stepType,
    description: trimmedSlice(text, close + 1, arrow < 0 ? headEnd : arrow),
    inputs: [],
    outputs: arrow < 0 ? [] : namesIn(text, arrow + arrowLength, headEnd),
    detail: [],
    result: "",
    status,
    doneCount: 0,
    totalCount: null,
    children: [],
  };
  if (pipe < end) readResultSegments(trimmedSlice(text, pipe + 1, end), step);
  return step;
}

const TYPE_NAMES = ["reason", "act", "decide", "subtask"];

/** The type inside `[ ]`; the four valid names are shared constants rather than new slices. */
function typeName(text: string, start: number, end: number): string {
  const length = end - start;
  for (const name of TYPE_NAMES) {
    if (name.length === length && text.startsWith(name, start)) return name;
  }
  return trimmedSlice(text, start, end);
}

/** True when `id` is a direct child id of `parent` (`2.1` of `2`; any top-level id of `""`). */
function isChildId(id: string, parent: string): boolean {
  if (parent === "") return id.indexOf(".") < 0;
  return id.length > parent.length + 1 && id.charCodeAt(parent.length) === 46 &&
    id.startsWith(parent) && id.indexOf(".", parent.length + 1) < 0;
}

/**
 * Builds the step tree from summary and body lines. Step ids encode the tree: the parent of `2.1.3`
 * is `2.1`, which must be an ancestor of the current position, and the k-th child of `P` must be
 * numbered `P.k` (top-level steps `1`, `2`, …, or `<root>.1`, … under a non-empty root id).
 */
class TreeBuilder {
  readonly steps: PlanStep[] = [];
  readonly #rootId: string;
  readonly #search: TailSearches;
  /** The path from the top-level step to the last step read. */
  readonly #stack: PlanStep[] = [];
  #last: PlanStep | undefined;

  /** How deep `rootId` is itself (0 for the plan's top level). */
  readonly #rootDepth: number;

  /** A builder for the step lines of `text`, read in order. */
  constructor(text: string, rootId = "") {
    this.#rootId = rootId;
    this.#search = new TailSearches(text);
    this.#rootDepth = rootId === "" ? 0 : rootId.split(".").length;
  }

  get last(): PlanStep | undefined {
    return this.#last;
  }

  addStep(text: string, start: number, end: number, lineNo: number): void {
    const step = readStep(text, start, end, this.#search);
    if (typeof step === "string") throw lineError(text, start, end, lineNo, step);
    const id = step.stepId;
    const stack = this.#stack;
    let siblings: PlanStep[];
    let parentId: string;
    if (isChildId(id, this.#rootId)) {
      stack.length = 0;
      siblings = this.steps;
      parentId = this.#rootId;
    } else {
      while (stack.length > 0 && !isChildId(id, stack[stack.length - 1].stepId)) stack.pop();
      if (stack.length === 0) {
        const dot = id.lastIndexOf(".");
        throw lineError(
          text,
          start,
          end,
          lineNo,
          dot < 0
            ? `step ${id} is not under step ${this.#rootId}: number these steps ${this.#rootId}.1, ${this.#rootId}.2, …`
            : `step ${id} has no parent step ${
              id.slice(0, dot)
            } above it (a step's parent must come first, e.g. 2 before 2.1)`,
        );
      }
      const parent = stack[stack.length - 1];
      siblings = parent.children;
      parentId = parent.stepId;
    }
    if (!isIdAt(id, parentId, siblings.length + 1)) {
      const expected = parentId === ""
        ? String(siblings.length + 1)
        : `${parentId}.${siblings.length + 1}`;
      throw lineError(
        text,
        start,
        end,
        lineNo,
        `step ${id} is out of sequence: expected ${expected} (the k-th child of step P is numbered P.k)`,
      );
    }
    if (this.#rootDepth + stack.length >= MAX_PLAN_DEPTH) throw new PlanTooDeepError(id, lineNo);
    siblings.push(step);
    stack.push(step);
    this.#last = step;
  }

  /** Adds the `>` line `text[start, end)` to the last step; false when there is no step yet. */
  addBody(text: string, start: number, end: number): boolean {
    const step = this.#last;
    if (!step) return false;
    const content = contentStart(text, start, end);
    const inputs = inputsStart(text, content, end);
    // Assigned rather than pushed while empty: arrays of their exact size (see `gathered`).
    if (inputs >= 0) {
      const names = namesIn(text, inputs, end);
      if (step.inputs.length === 0) step.inputs = names;
      else step.inputs.push(...names);
    } else if (step.detail.length === 0) step.detail = [text.slice(content, end)];
    else step.detail.push(text.slice(content, end));
    return true;
  }
}

/** Where the content of a `>` line starts: after the `>` and one space. */
function contentStart(text: string, start: number, end: number): number {
  return start + 1 < end && text.charCodeAt(start + 1) === 32 ? start + 2 : start + 1;
}

/**
 * When the body content at `pos` declares inputs (`← a, b` or `<- a, b`), where the names start;
 * otherwise -1.
 */
function inputsStart(text: string, pos: number, end: number): number {
  let arrowEnd: number;
  if (pos < end && text.charCodeAt(pos) === 0x2190) arrowEnd = pos + 1;
  else if (pos + 1 < end && text.charCodeAt(pos) === 60 && text.charCodeAt(pos + 1) === 45) {
    arrowEnd = pos + 2;
  } else return -1;
  if (arrowEnd === end) return end;
  const c = text.charCodeAt(arrowEnd);
  return c === 32 || c === 9 ? arrowEnd : -1;
}

function lineError(
  text: string,
  start: number,
  end: number,
  lineNo: number,
  reason: string,
): PlanParseError {
  return new PlanParseError(lineNo, text.slice(start, end), reason);
}

type Section = "header" | "goal" | "constraints" | "steps";

const TITLE = /^#(?!#)\s*(.*)$/;
const GOAL = /^(?:\*\*goal\*\*\s*:|\*\*goal:\*\*|goal\s*:)(.*)$/i;
const CONSTRAINTS = /^(?:constraints\s*:|##\s*constraints\b)(.*)$/i;
const STEPS = /^##\s*steps\b(.*)$/i;

/**
 * Calls `visit(start, end, lineNo)` for every non-blank line of `text`: `start` is its first
 * non-blank character, `end` excludes the line break (and a `\r` before it).
 */
function forEachLine(
  text: string,
  visit: (start: number, end: number, lineNo: number) => void,
): void {
  const len = text.length;
  let pos = 0;
  let lineNo = 0;
  while (pos <= len) {
    let end = text.indexOf("\n", pos);
    if (end < 0) end = len;
    lineNo++;
    let stop = end;
    if (stop > pos && text.charCodeAt(stop - 1) === 13) stop--;
    let start = pos;
    while (start < stop && isWhitespace(text.charCodeAt(start))) start++;
    pos = end + 1;
    if (start < stop) visit(start, stop, lineNo);
  }
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * Parses PlanSpec text into a {@linkcode PlanSpec}, in one linear pass.
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
 * const plan = parsePlan(
 *   "Goal: Ship\n1. [x] [act] Build -> artifact | built in 2 min\n" +
 *     "2. [subtask] Release → release\n  2.1. [act] Tag the commit\n    > ← artifact\n",
 * );
 * console.log(plan.steps[1].children[0].inputs); // ["artifact"]
 * ```
 */
export function parsePlan(text: string): PlanSpec {
  const plan = createPlanSpec();
  const builder = new TreeBuilder(text);
  plan.steps = builder.steps;
  let section: Section = "header";
  let titleSeen = false;
  let goalSeen = false;
  forEachLine(text, (start, end, lineNo) => {
    const first = text.charCodeAt(start);
    if (isDigit(first)) {
      builder.addStep(text, start, end, lineNo);
      section = "steps";
      return;
    }
    if (first === 62 /* > */) {
      if (section === "steps") {
        if (!builder.addBody(text, start, end)) {
          throw lineError(text, start, end, lineNo, "a '>' body line must follow a step line");
        }
      } else if (section === "goal") {
        plan.goalDetail.push(text.slice(contentStart(text, start, end), end));
      } else {
        throw lineError(
          text,
          start,
          end,
          lineNo,
          "a '>' line must follow 'Goal:' (goal explanation) or a step line (node body)",
        );
      }
      return;
    }
    const line = trimmedSlice(text, start, end);
    const fail = (reason: string) => new PlanParseError(lineNo, line, reason);
    if (section === "steps") {
      throw fail(
        "unexpected text among the steps: expected a step line like '1. [act] description' or a '>' body line",
      );
    }
    let m: RegExpExecArray | null;
    if ((m = STEPS.exec(line))) {
      expectNoTrailer(m[1], fail, "## Steps");
      section = "steps";
    } else if ((m = CONSTRAINTS.exec(line))) {
      expectNoTrailer(m[1], fail, "Constraints:");
      section = "constraints";
    } else if ((m = GOAL.exec(line))) {
      if (goalSeen) throw fail("the plan has a second 'Goal:' line");
      goalSeen = true;
      plan.goal = m[1].trim();
      section = "goal";
    } else if (first === 45 /* - */ && section === "constraints") {
      plan.constraints.push(line.slice(1).trim());
    } else if ((m = TITLE.exec(line))) {
      if (titleSeen || goalSeen || section !== "header") {
        throw fail("a '# Plan: <title>' line may only appear once, at the top");
      }
      titleSeen = true;
      plan.title = m[1].replace(/^plan\s*:/i, "").trim();
    } else if (first === 45) {
      throw fail("a '- ' list item must follow 'Constraints:'");
    } else {
      throw fail(
        "unexpected text: expected '# Plan: <title>', 'Goal: <goal>', 'Constraints:', '## Steps' or a step line",
      );
    }
  });
  return plan;
}

/** Section headings may carry a trailing `# annotation` (as PlanSpec templates do), nothing else. */
function expectNoTrailer(
  trailer: string,
  fail: (reason: string) => PlanParseError,
  heading: string,
): void {
  const t = trailer.trim();
  if (t !== "" && !t.startsWith("#")) throw fail(`unexpected text after '${heading}'`);
}

/**
 * Parses step lines (with their `>` body lines) into a list of steps, for example the new children
 * an LLM writes for a container during a subtree `REPLAN`. With `rootId` `"4"` the steps must be
 * numbered `4.1`, `4.2`, …; lines that are neither step nor body lines are ignored (LLM prose).
 *
 * @throws {PlanParseError} for malformed or mis-numbered step lines
 *
 * @example
 * ```ts
 * import { parseStepLines } from "./parse.ts";
 * const steps = parseStepLines("New steps:\n4.1. [act] Retry with backoff → data\n  > ← url\n", "4");
 * console.log(steps[0].stepId, steps[0].inputs); // "4.1" ["url"]
 * ```
 */
export function parseStepLines(text: string, rootId = ""): PlanStep[] {
  const builder = new TreeBuilder(text, rootId);
  forEachLine(text, (start, end, lineNo) => {
    const first = text.charCodeAt(start);
    if (isDigit(first) && looksLikeStepLine(text, start, end)) {
      builder.addStep(text, start, end, lineNo);
    } else if (first === 62 && builder.last) builder.addBody(text, start, end);
  });
  return builder.steps;
}

/** `N.`/`N.N.` followed by a blank or `[`: a numbered line that is meant as a step. */
function looksLikeStepLine(text: string, start: number, end: number): boolean {
  let pos = start;
  while (pos < end) {
    const c = text.charCodeAt(pos);
    if ((c >= 48 && c <= 57) || c === 46) pos++;
    else break;
  }
  if (pos >= end) return false;
  const c = text.charCodeAt(pos);
  return c === 32 || c === 9 || c === 91;
}
