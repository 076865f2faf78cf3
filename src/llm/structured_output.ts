/**
 * Extracts a JSON value from model text, for backends (or servers) that cannot return structured
 * output natively. The order is fixed: the whole text as JSON, then the first fenced ```json block
 * (or any fenced block that parses), then the first `{…}` object in the text that is valid JSON.
 *
 * Model text is untrusted, so the work is bounded: one linear pass of a strict JSON recognizer
 * decides every candidate before `JSON.parse` sees it (never a rescan from each `{`), text longer
 * than {@linkcode MAX_JSON_TEXT_CHARS} is not scanned, JSON nested deeper than
 * {@linkcode MAX_JSON_DEPTH} is refused, and only the first {@linkcode MAX_FENCED_BLOCKS} fenced
 * blocks are tried.
 *
 * @module
 */

/** The outcome of {@linkcode extractJson}. */
export type JsonExtraction =
  | { ok: true; value: unknown; source: "whole" | "fenced" | "balanced" }
  | {
    ok: false;
    reason: string;
    /** Set when a bound ended the search: the text's length or the JSON's nesting depth. */
    limit?: "size" | "depth";
  };

/**
 * The longest text {@linkcode extractJson} scans, in UTF-16 code units (16 Mi, ~16 MB of ASCII).
 * A longer answer is not scanned at all: the extraction fails with a reason that gives both
 * lengths, which the re-ask passes on to the model.
 */
export const MAX_JSON_TEXT_CHARS = 16 * 1024 * 1024;

/**
 * The deepest nesting of arrays and objects {@linkcode extractJson} accepts. Deeper JSON is refused
 * with a reason saying so: `JSON.parse` of a few million levels takes seconds.
 */
export const MAX_JSON_DEPTH = 10_000;

/** The fenced blocks {@linkcode extractJson} tries, from the first one on. */
export const MAX_FENCED_BLOCKS = 100;

const FENCE = /```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n?([\s\S]*?)```/g;

const TOO_DEEP: JsonExtraction = {
  ok: false,
  limit: "depth",
  reason: `the JSON is nested more than ${
    MAX_JSON_DEPTH.toLocaleString("en-US")
  } levels deep; answer with a flatter object`,
};

const NO_JSON =
  "no JSON found: the response is not JSON, has no ```json block and no balanced {…} object";

/**
 * Finds the JSON value in `text`: the whole text, else the first fenced block that is JSON (a
 * block labelled `json` first), else the first `{…}` object that is valid JSON (see
 * {@linkcode firstBalancedObject}). Linear in the length of `text`; text longer than
 * {@linkcode MAX_JSON_TEXT_CHARS} is refused without scanning, and so is JSON nested deeper
 * than {@linkcode MAX_JSON_DEPTH}.
 *
 * @example
 * ```ts
 * import { extractJson } from "./structured_output.ts";
 * const fence = "`".repeat(3); // a fenced block, written so that it does not end this example
 * const r = extractJson(`Sure!\n${fence}json\n{"result":"ok"}\n${fence}`);
 * console.log(r.ok && r.value); // { result: "ok" }
 * ```
 */
export function extractJson(text: string): JsonExtraction {
  if (text.length > MAX_JSON_TEXT_CHARS) {
    return {
      ok: false,
      limit: "size",
      reason: `the response is ${count(text.length)} characters long, more than the ${
        count(MAX_JSON_TEXT_CHARS)
      } searched for JSON; answer with the JSON object alone`,
    };
  }
  const trimmed = text.trim();
  if (trimmed === "") return { ok: false, reason: "the response is empty" };
  const whole = parseValueAt(trimmed, 0, trimmed.length);
  if (whole.ok) return { ok: true, value: whole.value, source: "whole" };
  // Past the depth bound the search stops: a fragment of a too-deep answer is not its answer.
  if (whole.tooDeep) return { ...TOO_DEEP };

  if (trimmed.includes("```")) {
    const fences: RegExpExecArray[] = [];
    for (const fence of trimmed.matchAll(FENCE)) {
      if (fences.push(fence) === MAX_FENCED_BLOCKS) break;
    }
    // A block labelled json wins over unlabelled ones (the sort is stable).
    fences.sort((a, b) => rank(a[1]) - rank(b[1]));
    for (const fence of fences) {
      const body = fence[2].trim();
      const parsed = parseValueAt(body, 0, body.length);
      if (parsed.ok) return { ok: true, value: parsed.value, source: "fenced" };
      if (parsed.tooDeep) return { ...TOO_DEEP };
    }
  }

  const balanced = findObject(trimmed);
  if (balanced.tooDeep) return { ...TOO_DEEP };
  if (balanced.object !== undefined) {
    const parsed = tryParse(balanced.object);
    if (parsed.ok) return { ok: true, value: parsed.value, source: "balanced" };
  }
  return { ok: false, reason: NO_JSON };
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

function rank(label: string | undefined): number {
  return label?.toLowerCase() === "json" ? 0 : 1;
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** `text[from, to)` parsed when the recognizer says it is one JSON value and nothing else. */
function parseValueAt(
  text: string,
  from: number,
  to: number,
): { ok: true; value: unknown } | { ok: false; tooDeep: boolean } {
  scan(text, from, to);
  if (SCAN.failedAt >= 0 || SCAN.end !== to) return { ok: false, tooDeep: SCAN.tooDeep };
  const parsed = tryParse(text.slice(from, to));
  return parsed.ok ? parsed : { ok: false, tooDeep: false };
}

/**
 * Returns the first `{…}` substring of `text` that is a valid JSON object, in one pass.
 *
 * A strict JSON recognizer (an explicit stack, no recursion) starts at the first `{`. When the
 * object it began closes, that object is the answer. When the text stops being JSON at some
 * position, every object still open there is invalid too (an object's validity does not depend
 * on what surrounds it), so the answer is the earliest-starting object that was completed inside
 * the failed one, if any; otherwise the scan resumes at the next `{` from the failure on. No
 * character is read twice, so the scan is linear however many `{` the text holds.
 *
 * Two differences from trying every `{` in turn: a `{` inside a JSON string of an object that
 * later proves invalid is not tried as a start, and an object nested deeper than
 * {@linkcode MAX_JSON_DEPTH} ends the search.
 *
 * @example
 * ```ts
 * import { firstBalancedObject } from "./structured_output.ts";
 * firstBalancedObject('Use {name} here. Answer: {"a": {"b": 1}} done'); // '{"a": {"b": 1}}'
 * ```
 */
export function firstBalancedObject(text: string): string | undefined {
  return findObject(text).object;
}

function findObject(text: string): { object?: string; tooDeep: boolean } {
  const from = text.indexOf("{");
  if (from < 0) return { tooDeep: false };
  scan(text, from, text.length, true);
  if (SCAN.failedAt < 0) return { object: text.slice(SCAN.start, SCAN.end), tooDeep: false };
  if (SCAN.innerStart >= 0) {
    return { object: text.slice(SCAN.innerStart, SCAN.innerEnd), tooDeep: false };
  }
  return { tooDeep: SCAN.tooDeep };
}

// Character codes the recognizer tests.
const QUOTE = 0x22, BACKSLASH = 0x5c, OPEN_BRACE = 0x7b, CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b, CLOSE_BRACKET = 0x5d, COMMA = 0x2c, COLON = 0x3a, MINUS = 0x2d;
const ZERO = 0x30, NINE = 0x39, DOT = 0x2e, PLUS = 0x2b, LOWER_E = 0x65, UPPER_E = 0x45;

// What the recognizer expects next.
/** A value (at the start, after `:`, after `,` in an array). */
const VALUE = 0;
/** A key or `}` (right after `{`). */
const KEY_OR_END = 1;
/** A key (after `,` in an object). */
const KEY = 2;
/** `:` (after a key). */
const COLON_NEXT = 3;
/** A value or `]` (right after `[`). */
const VALUE_OR_END = 4;
/** `,` or the container's end (after a value). */
const NEXT = 5;

/**
 * The result of the last {@linkcode scan}, in one reused record: the recognizer runs once per
 * candidate start, and a text of ten million `{` has ten million of them.
 */
const SCAN = {
  /** Where the value (in search mode: the candidate) starts. */
  start: -1,
  /** Offset after the value, when it ended. */
  end: -1,
  /** Offset where the text stopped being JSON (or the limit, when it ended inside the value). */
  failedAt: -1,
  /** Whether the failure is nesting deeper than MAX_JSON_DEPTH. */
  tooDeep: false,
  /** The earliest-starting object completed inside a failed value, as [innerStart, innerEnd). */
  innerStart: -1,
  innerEnd: -1,
};
// Open containers: start offsets, and 1 for an object, 0 for an array. Grown on demand.
let starts = new Int32Array(64);
let objects = new Uint8Array(64);

/**
 * Recognizes one JSON value starting at `from` (leading whitespace allowed) within `[from, to)`,
 * strictly as `JSON.parse` would, and leaves the outcome in {@linkcode SCAN}.
 *
 * In `search` mode (`from` is a `{`), a candidate that fails with no object completed inside it
 * is followed, in the same loop, by the next candidate: the `{` at the failure, else the next `{`
 * after it. The loop never moves backwards, so the whole search is one pass.
 */
function scan(text: string, from: number, to: number, search = false): void {
  let start = from;
  // Locals, not the module bindings, in the hot loop.
  let stack = starts;
  let kinds = objects;
  let innerStart = -1;
  let innerEnd = -1;
  let depth = 0;
  let expect = VALUE;
  let i = from;
  let failAt = -1;
  let tooDeep = false;
  while (i < to) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      i++;
      continue;
    }
    if (expect === NEXT && c === COMMA) {
      i++;
      expect = kinds[depth - 1] === 1 ? KEY : VALUE;
      continue;
    } else if (expect === KEY || expect === KEY_OR_END) {
      if (c === QUOTE) {
        const end = stringEnd(text, i, to);
        if (end >= 0) {
          i = end;
          expect = COLON_NEXT;
          continue;
        }
        failAt = -end - 1;
      } else if (c !== CLOSE_BRACE || expect === KEY) failAt = i;
    } else if (expect === COLON_NEXT) {
      if (c === COLON) {
        i++;
        expect = VALUE;
        continue;
      }
      failAt = i;
    } else if (expect !== NEXT && (c !== CLOSE_BRACKET || expect === VALUE)) {
      // A value (VALUE, or VALUE_OR_END but not the `]` of an empty array).
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (depth === MAX_JSON_DEPTH) {
          failAt = i;
          tooDeep = true;
        } else {
          if (depth === stack.length) {
            stack = starts = grow(stack, new Int32Array(depth * 2));
            kinds = objects = grow(kinds, new Uint8Array(depth * 2));
          }
          stack[depth] = i;
          kinds[depth] = c === OPEN_BRACE ? 1 : 0;
          depth++;
          expect = c === OPEN_BRACE ? KEY_OR_END : VALUE_OR_END;
          i++;
          continue;
        }
      } else {
        const end = scalarEnd(text, i, to, c);
        if (end >= 0) {
          i = end;
          if (depth === 0) return done(start, i);
          expect = NEXT;
          continue;
        }
        failAt = -end - 1;
      }
    }
    if (failAt < 0) {
      // A container closes here.
      const object = kinds[depth - 1] === 1;
      if (c === (object ? CLOSE_BRACE : CLOSE_BRACKET)) {
        depth--;
        i++;
        if (depth === 0) return done(start, i);
        const opened = stack[depth];
        if (object && (innerStart < 0 || opened < innerStart)) {
          innerStart = opened;
          innerEnd = i;
        }
        expect = NEXT;
        continue;
      }
      failAt = i;
    }
    // The text stopped being JSON at failAt: every container still open is invalid.
    if (!search || tooDeep || innerStart >= 0 || failAt >= to) {
      return fail(start, failAt, tooDeep, innerStart, innerEnd);
    }
    // The character that broke the parse may itself start the next candidate.
    const next = text.charCodeAt(failAt) === OPEN_BRACE ? failAt : nextBrace(text, failAt + 1, to);
    if (next < 0 || next >= to) return fail(start, to, false, -1, -1);
    // The new candidate's `{` is opened here rather than read again (its stack entry, an
    // object, is already there: in search mode the bottom of the stack is always a `{`).
    start = next;
    depth = 1;
    expect = KEY_OR_END;
    i = next + 1;
    failAt = -1;
  }
  fail(start, to, false, innerStart, innerEnd);
}

/** The first `{` at or after `from`, or -1: a few characters by hand, then `indexOf`. */
function nextBrace(text: string, from: number, to: number): number {
  // Adversarial text puts the next `{` close by; a builtin call per candidate costs more.
  const near = Math.min(from + 8, to);
  for (let j = from; j < near; j++) if (text.charCodeAt(j) === OPEN_BRACE) return j;
  return near >= to ? -1 : text.indexOf("{", near);
}

function done(start: number, end: number): void {
  SCAN.start = start;
  SCAN.end = end;
  SCAN.failedAt = -1;
  SCAN.tooDeep = false;
  SCAN.innerStart = -1;
  SCAN.innerEnd = -1;
}

function fail(
  start: number,
  at: number,
  tooDeep: boolean,
  innerStart: number,
  innerEnd: number,
): void {
  SCAN.start = start;
  SCAN.end = -1;
  SCAN.failedAt = at;
  SCAN.tooDeep = tooDeep;
  // An object inside a value that is too deep may be too deep itself; it is not offered.
  SCAN.innerStart = tooDeep ? -1 : innerStart;
  SCAN.innerEnd = tooDeep ? -1 : innerEnd;
}

function grow<T extends Int32Array | Uint8Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

/**
 * The offset after the JSON string opening at `i`, or `-(failure offset) - 1`.
 */
function stringEnd(text: string, i: number, length: number): number {
  for (let j = i + 1; j < length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) return j + 1;
    if (c < 0x20) return -j - 1;
    if (c === BACKSLASH) {
      const next = text.charCodeAt(j + 1);
      if (next === 0x75 /* u */) {
        for (let k = j + 2; k < j + 6; k++) {
          if (!isHex(text.charCodeAt(k))) return -Math.min(k, length) - 1;
        }
        j += 5;
      } else if (
        next === QUOTE || next === BACKSLASH || next === 0x2f || next === 0x62 ||
        next === 0x66 || next === 0x6e || next === 0x72 || next === 0x74
      ) {
        j++;
      } else {
        return -Math.min(j + 1, length) - 1;
      }
    }
  }
  return -length - 1;
}

function isHex(c: number): boolean {
  return (c >= ZERO && c <= NINE) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

/**
 * The offset after the string, number or literal starting at `i` (first code `c`), or
 * `-(failure offset) - 1`.
 */
function scalarEnd(text: string, i: number, length: number, c: number): number {
  if (c === QUOTE) return stringEnd(text, i, length);
  if (c === 0x74 /* t */) return text.startsWith("true", i) ? i + 4 : -i - 1;
  if (c === 0x66 /* f */) return text.startsWith("false", i) ? i + 5 : -i - 1;
  if (c === 0x6e /* n */) return text.startsWith("null", i) ? i + 4 : -i - 1;
  // A number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  let j = i;
  if (c === MINUS) j++;
  if (text.charCodeAt(j) === ZERO) j++;
  else if (isDigit(text.charCodeAt(j))) { while (isDigit(text.charCodeAt(j))) j++; }
  else return -j - 1;
  if (text.charCodeAt(j) === DOT) {
    j++;
    if (!isDigit(text.charCodeAt(j))) return -j - 1;
    while (isDigit(text.charCodeAt(j))) j++;
  }
  const e = text.charCodeAt(j);
  if (e === LOWER_E || e === UPPER_E) {
    j++;
    const sign = text.charCodeAt(j);
    if (sign === PLUS || sign === MINUS) j++;
    if (!isDigit(text.charCodeAt(j))) return -j - 1;
    while (isDigit(text.charCodeAt(j))) j++;
  }
  return j;
}
