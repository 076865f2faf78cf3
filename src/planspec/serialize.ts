import { assertPlanDepth } from "./depth.ts";
import { PlanSerializeError } from "./errors.ts";
import { hasProgressSegment, inputsDeclaration, isIdAt, isWhitespace } from "./syntax.ts";
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
  assertPlanDepth(plan.steps);
  const fold = options.fold === true;
  let head = "";
  if (plan.title !== "") head += "# Plan: " + checkLine(plan.title, "the title") + "\n";
  if (plan.goal !== "" || plan.goalDetail.length > 0) {
    head += plan.goal === "" ? "Goal:\n" : "Goal: " + checkLine(plan.goal, "the goal") + "\n";
  }
  for (const line of plan.goalDetail) {
    if (hasBreak(line)) throw new PlanSerializeError("a goal detail line contains a line break");
    head += line === "" ? ">\n" : "> " + line + "\n";
  }
  if (plan.constraints.length > 0) {
    head += "Constraints:\n";
    for (const c of plan.constraints) {
      head += c === "" ? "-\n" : "- " + checkLine(c, "a constraint") + "\n";
    }
  }
  const out = new TextChunks(head + "## Steps\n");
  writeSteps(out, plan.steps, "", 0, fold);
  return out.text();
}

/**
 * The serialized text, built in flat chunks. Concatenating line by line is the cheapest way to
 * build text in V8, but the result is a rope of one node per piece (~15 per step), all alive until
 * the text is read: at 100,000 steps the collector copied and promoted millions of nodes, and
 * serializing took 33× the time of 10,000 steps. A chunk is flattened once it holds
 * {@linkcode CHUNK_LENGTH} characters (its rope nodes die young), and the chunks are joined once at
 * the end, so the cost per step stays the same at any size and the text returned is flat.
 */
class TextChunks {
  readonly #chunks: string[] = [];
  /** The chunk being built (a rope until it is flattened). */
  current: string;

  constructor(start: string) {
    this.current = start;
  }

  /** Ends the current chunk once it is long enough. */
  cut(): void {
    if (this.current.length >= CHUNK_LENGTH) {
      // Reading a character flattens the rope: its nodes become garbage while still young.
      this.current.charCodeAt(0);
      this.#chunks.push(this.current);
      this.current = "";
    }
  }

  /** The whole text, flat. */
  text(): string {
    if (this.#chunks.length === 0) return this.current;
    this.#chunks.push(this.current);
    return this.#chunks.join("");
  }
}

/**
 * Characters in a chunk (~800 lines): once flat, a chunk is at least 128 KB, which V8 places in its
 * large-object space, where the young-generation collector never copies it (chunks of 16 K
 * characters were copied and promoted like the rope and bought nothing at 100,000 steps).
 */
const CHUNK_LENGTH = 131_072;

/** Writes the lines of `steps` (children of `prefix`, at `depth`), their bodies and children. */
function writeSteps(
  out: TextChunks,
  steps: PlanStep[],
  prefix: string,
  depth: number,
  fold: boolean,
): void {
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (!isIdAt(step.stepId, prefix, i + 1)) {
      const expectedId = prefix === "" ? String(i + 1) : prefix + "." + (i + 1);
      throw new PlanSerializeError(
        `step ${step.stepId} is at position ${expectedId}: step ids must match the tree position (call renumberSteps(plan) after moving steps)`,
        step.stepId,
      );
    }
    let showBody = true;
    let showChildren = true;
    if (fold) {
      if (step.expanded === false) showBody = showChildren = false;
      else if (step.expanded !== true) {
        showBody = step.status === PlanStatus.ACTIVE || step.status === PlanStatus.BLOCKED;
      }
    }
    if (showBody && (step.inputs.length > 0 || step.detail.length > 0)) {
      out.current += summaryLine(step, depth) + bodyLines(step, depth + 1);
    } else out.current += summaryLine(step, depth);
    out.cut();
    if (showChildren && step.children.length > 0) {
      writeSteps(out, step.children, step.stepId, depth + 1, fold);
    }
  }
}

/** A step's summary line (with its line break). */
function summaryLine(step: PlanStep, depth: number): string {
  const id = step.stepId;
  const type = step.stepType;
  let line = indent(depth) + id + ".";
  if (step.status !== PlanStatus.PENDING) {
    line += marker(step);
  } else if (type.length === 1 && " xX>!~".indexOf(type) >= 0 && step.stepName === "") {
    // `[x]` right after the number would read as a status marker, so spell out pending.
    line += " [ ]";
  }
  const name = step.stepName;
  if (name !== "") {
    if (scanFlags(name) & BLANK || name.charCodeAt(0) === 91) {
      fail(id, `name ${JSON.stringify(name)} must be one word not starting with '['`);
    }
    line += " " + name;
  }
  if (scanFlags(type) & (BRACKET | BREAK) || !isTrimmed(type)) {
    fail(id, `type ${JSON.stringify(type)} cannot be written inside [ ]`);
  }
  line += " [" + type + "]";
  const description = step.description;
  let descriptionFlags = 0;
  if (description !== "") {
    descriptionFlags = scanFlags(description, DESCRIPTION_SPECIAL);
    if (descriptionFlags & PIPE) {
      fail(id, "description contains '|', which separates the result on a summary line");
    }
    if (descriptionFlags & BREAK) fail(id, "description contains a line break");
    if (!isTrimmed(description)) fail(id, "description has leading or trailing whitespace");
    line += " " + description;
  }
  const outputs = step.outputs;
  if (outputs.length > 0) {
    for (let i = 0; i < outputs.length; i++) {
      checkName(outputs[i], id, "outputs", BREAK | PIPE | COMMA | ARROW);
      line += (i === 0 ? " → " : ", ") + outputs[i];
    }
  } else if (descriptionFlags & ARROW) {
    // An arrow inside the description would read as the outputs arrow: close it with an empty one.
    line += " →";
  }
  const result = step.result;
  let withProgress = step.doneCount !== 0 || step.totalCount !== null;
  if (result !== "") {
    line += " | " + checkField(result, id, "result");
    if (!withProgress) withProgress = hasProgressSegment(result);
  }
  if (withProgress) {
    line += " | Progress: " + checkCount(step.doneCount, id);
    if (step.totalCount !== null) line += "/" + checkCount(step.totalCount, id);
  }
  return line + "\n";
}

/** The status marker of a step that is not pending, with the space before it. */
function marker(step: PlanStep): string {
  switch (step.status) {
    case "done":
      return " [x]";
    case "active":
      return " [>]";
    case "blocked":
      return " [!]";
    case "skipped":
      return " [~]";
    case "pending":
      return " [ ]";
    default:
      return fail(step.stepId, `has an unknown status ${JSON.stringify(step.status)}`);
  }
}

/** A step's body lines: its inputs, then its detail lines. */
function bodyLines(step: PlanStep, depth: number): string {
  const pad = indent(depth);
  let text = "";
  const inputs = step.inputs;
  if (inputs.length > 0) {
    text += pad + "> ←";
    for (let i = 0; i < inputs.length; i++) {
      checkName(inputs[i], step.stepId, "inputs", BREAK | PIPE | COMMA);
      text += (i === 0 ? " " : ", ") + inputs[i];
    }
    text += "\n";
  }
  for (const line of step.detail) {
    if (line === "") {
      text += pad + ">\n";
      continue;
    }
    if (hasBreak(line)) fail(step.stepId, "has a detail line with a line break");
    if (inputsDeclaration(line) !== undefined) {
      fail(step.stepId, `has a detail line starting with an inputs arrow: ${JSON.stringify(line)}`);
    }
    text += pad + "> " + line + "\n";
  }
  return text;
}

function checkName(name: string, id: string, what: string, forbidden: number): void {
  if (name === "" || !isTrimmed(name) || scanFlags(name) & forbidden) {
    fail(id, `has ${what} name ${JSON.stringify(name)} that the comma-separated list cannot hold`);
  }
}

const BREAK = 1;
const PIPE = 2;
const ARROW = 4;
const COMMA = 8;
const BRACKET = 16;
const BLANK = 32;

// One native regex scan per field finds the rare values that need a closer look.
const DESCRIPTION_SPECIAL = /[|\r\n→]|->/;
const NAME_SPECIAL = /[\s,|\]→]|->/;

/** Which meaningful characters `text` holds (BREAK, PIPE, ARROW, COMMA, BRACKET, BLANK). */
function scanFlags(text: string, special: RegExp = NAME_SPECIAL): number {
  if (!special.test(text)) return 0;
  let flags = 0;
  if (text.indexOf("|") >= 0) flags |= PIPE;
  if (text.indexOf(",") >= 0) flags |= COMMA;
  if (text.indexOf("]") >= 0) flags |= BRACKET;
  if (text.indexOf("→") >= 0 || text.indexOf("->") >= 0) flags |= ARROW;
  if (hasBreak(text)) flags |= BREAK | BLANK;
  else if (/\s/.test(text)) flags |= BLANK;
  return flags;
}

function checkField(text: string, id: string, what: string): string {
  if (hasBreak(text)) fail(id, `${what} contains a line break`);
  if (!isTrimmed(text)) fail(id, `${what} has leading or trailing whitespace`);
  return text;
}

function checkCount(n: number, id: string): number {
  if (!Number.isSafeInteger(n) || n < 0) fail(id, `progress count ${n} is not a whole number ≥ 0`);
  return n;
}

function checkLine(text: string, what: string): string {
  if (hasBreak(text)) throw new PlanSerializeError(`${what} contains a line break`);
  if (!isTrimmed(text)) throw new PlanSerializeError(`${what} has leading or trailing whitespace`);
  return text;
}

/** True when `text.trim() === text`, without allocating. */
function isTrimmed(text: string): boolean {
  return text.length === 0 ||
    (!isWhitespace(text.charCodeAt(0)) && !isWhitespace(text.charCodeAt(text.length - 1)));
}

function hasBreak(text: string): boolean {
  return text.indexOf("\n") >= 0 || text.indexOf("\r") >= 0;
}

function fail(stepId: string, message: string): never {
  throw new PlanSerializeError(`step ${stepId} ${message}`, stepId);
}
