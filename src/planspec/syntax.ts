/**
 * The lexical pieces of the PlanSpec line format shared by the parser, the serializer and the
 * command protocol: status markers, the summary tail (`description → outputs | result | Progress`),
 * and node-body lines.
 *
 * @module
 */
import { type PlanStatus, PlanStatus as S } from "./types.ts";

/** Marker character → status (`[ ]`, `[x]`, `[>]`, `[!]`, `[~]`; `[X]` is read as done). */
export function statusOfMarker(ch: string): PlanStatus | undefined {
  switch (ch) {
    case " ":
      return S.PENDING;
    case "x":
    case "X":
      return S.DONE;
    case ">":
      return S.ACTIVE;
    case "!":
      return S.BLOCKED;
    case "~":
      return S.SKIPPED;
    default:
      return undefined;
  }
}

/** Status → its `[.]` marker. */
export const STATUS_MARKERS: Readonly<Record<PlanStatus, string>> = {
  pending: "[ ]",
  done: "[x]",
  active: "[>]",
  blocked: "[!]",
  skipped: "[~]",
};

/** The parsed tail of a summary line. */
export interface SummaryTail {
  /** Text before the last arrow. */
  description: string;
  /** Comma-separated names after the last arrow. */
  outputs: string[];
  /** Non-progress `|` segments. */
  result: string;
  /** Progress done count (0 when absent). */
  doneCount: number;
  /** Progress total (null when absent or `| Progress: N`). */
  totalCount: number | null;
}

const PROGRESS = /^\s*Progress:\s*(\d+)(?:\s*\/\s*(\d+))?\s*$/;

/** Parses `| Progress: N/M` or `| Progress: N` segments; undefined when `segment` is not one. */
export function parseProgressSegment(
  segment: string,
): { done: number; total: number | null } | undefined {
  if (segment.indexOf("Progress:") < 0) return undefined;
  const m = PROGRESS.exec(segment);
  if (!m) return undefined;
  return { done: Number(m[1]), total: m[2] === undefined ? null : Number(m[2]) };
}

/** True when some `|`-separated segment of `text` would be read back as a progress segment. */
export function hasProgressSegment(text: string): boolean {
  if (text.indexOf("Progress:") < 0) return false;
  return text.split("|").some((s) => PROGRESS.test(s));
}

/** Index and length of the last `→` or `->` in `text`, or index -1. */
export function lastArrow(text: string): { index: number; length: number } {
  const u = text.lastIndexOf("→");
  const a = text.lastIndexOf("->");
  if (u < 0 && a < 0) return { index: -1, length: 0 };
  return u > a ? { index: u, length: 1 } : { index: a, length: 2 };
}

/** True when `text` contains an output arrow (`→` or `->`). */
export function hasArrow(text: string): boolean {
  return text.indexOf("→") >= 0 || text.indexOf("->") >= 0;
}

/** Splits a comma-separated name list, trimming items and dropping empty ones. */
export function splitNames(text: string): string[] {
  const out: string[] = [];
  if (text.indexOf(",") < 0) {
    const t = text.trim();
    if (t !== "") out.push(t);
    return out;
  }
  for (const part of text.split(",")) {
    const t = part.trim();
    if (t !== "") out.push(t);
  }
  return out;
}

/**
 * Parses what follows `[type]` on a summary line: `description → outputs | result | Progress: N/M`.
 * The description ends at the first `|`; outputs follow the last arrow before it; of the `|`
 * segments, the last `Progress:` one is the progress and the others, joined back, the result.
 */
export function parseSummaryTail(rest: string): SummaryTail {
  const pipe = rest.indexOf("|");
  const head = pipe < 0 ? rest : rest.slice(0, pipe);
  const arrow = lastArrow(head);
  const tail: SummaryTail = {
    description: (arrow.index < 0 ? head : head.slice(0, arrow.index)).trim(),
    outputs: arrow.index < 0 ? [] : splitNames(head.slice(arrow.index + arrow.length)),
    result: "",
    doneCount: 0,
    totalCount: null,
  };
  if (pipe < 0) return tail;
  readResultSegments(rest.slice(pipe + 1), tail);
  return tail;
}

/**
 * Reads the `|` segments after a step's description into `into`: the last `Progress: N/M` (or
 * `Progress: N`) one is the progress; the others, joined back and trimmed, are the result.
 */
export function readResultSegments(
  after: string,
  into: { result: string; doneCount: number; totalCount: number | null },
): void {
  if (after.indexOf("Progress:") < 0) {
    into.result = after.trim();
    return;
  }
  const segments = after.split("|");
  for (let i = segments.length - 1; i >= 0; i--) {
    const progress = parseProgressSegment(segments[i]);
    if (progress) {
      into.doneCount = progress.done;
      into.totalCount = progress.total;
      segments.splice(i, 1);
      break;
    }
  }
  into.result = segments.join("|").trim();
}

/** The content of a `>` line: the `>` and one following space removed. */
export function bodyContent(trimmedLine: string): string {
  return trimmedLine.charCodeAt(1) === 32 ? trimmedLine.slice(2) : trimmedLine.slice(1);
}

/**
 * When a body line's content declares inputs (`← a, b` or `<- a, b`), returns the text after the
 * arrow; otherwise undefined.
 */
export function inputsDeclaration(content: string): string | undefined {
  let len = 0;
  if (content.startsWith("←")) len = 1;
  else if (content.startsWith("<-")) len = 2;
  else return undefined;
  if (content.length > len) {
    const c = content.charCodeAt(len);
    if (c !== 32 && c !== 9) return undefined;
  }
  return content.slice(len);
}

/** True for a step id of the form `1`, `2.1`, `2.1.3`. */
export function isStepId(text: string): boolean {
  return /^\d+(?:\.\d+)*$/.test(text);
}

/** The id of the parent step (`""` for a top-level step). */
export function parentIdOf(stepId: string): string {
  const dot = stepId.lastIndexOf(".");
  return dot < 0 ? "" : stepId.slice(0, dot);
}

/** The characters `String.prototype.trim` removes. */
export function isWhitespace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 160 || c === 5760 || (c >= 8192 && c <= 8202) ||
    c === 8232 || c === 8233 || c === 8239 || c === 8287 || c === 12288 || c === 65279;
}

/** `stepId === parent + "." + position` (or `String(position)` at the top), without building it. */
export function isIdAt(stepId: string, parent: string, position: number): boolean {
  const number = String(position);
  const head = parent === "" ? 0 : parent.length + 1;
  return stepId.length === head + number.length &&
    (head === 0 || (stepId.charCodeAt(parent.length) === 46 && stepId.startsWith(parent))) &&
    stepId.endsWith(number);
}
