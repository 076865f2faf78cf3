/**
 * Seeded PlanSpec texts for differential checks of the parser: well-formed plans of the shape
 * `bench/planspec_bench.ts` generates, then mutated the way hand edits and model answers go wrong —
 * lines taken away, duplicated or swapped, characters swapped or dropped, `|`, `→`, `->`, `←`,
 * `<-`, `[`, `]` and status markers inserted, odd indentation, `\r`, tabs, blank lines.
 *
 * The outcome of parsing one (the plan, or the error with its line and text) is reduced to a
 * canonical string by {@linkcode parseOutcome}, so two parsers can be compared exactly.
 */
import { parsePlan, parseStepLines } from "../../src/planspec/parse.ts";
import { mulberry32 } from "../prng.ts";

const STATUS = ["", " [x]", " [>]", " [!]", " [~]", " [ ]", " [X]"];
const TYPES = ["act", "reason", "subtask", "decide", "act", "reason", "Act", " act ", "wait"];

/** A small well-formed plan (1–40 steps, up to three levels) built from `random`. */
function basePlan(random: () => number): string {
  const lines: string[] = [];
  if (random() < 0.7) lines.push(random() < 0.8 ? "# Plan: Sample plan" : "# Sample");
  if (random() < 0.8) lines.push(random() < 0.5 ? "Goal: Ship the report" : "**Goal**: Ship it");
  if (random() < 0.3) lines.push("> the goal in more words");
  if (random() < 0.5) lines.push("Constraints:", "- stay under budget", "- no network");
  if (random() < 0.8) lines.push(random() < 0.9 ? "## Steps" : "## Steps # annotated");
  const steps = 1 + Math.floor(random() * 40);
  let n = 0;
  const step = (id: string, depth: number) => {
    const status = STATUS[Math.floor(random() * STATUS.length)];
    const type = TYPES[Math.floor(random() * TYPES.length)];
    const name = random() < 0.2 ? ` s${n.toString(16)}` : "";
    const arrow = random() < 0.8
      ? (random() < 0.8 ? ` → out_${n}, more_${n}` : ` -> out_${n}`)
      : "";
    const result = random() < 0.3 ? ` | done in ${n} ms` : "";
    const progress = random() < 0.2
      ? (random() < 0.7 ? ` | Progress: ${n % 5}/5` : ` | Progress: ${n}`)
      : "";
    const pad = "  ".repeat(depth);
    lines.push(
      `${pad}${id}.${status}${name} [${type}] Analyze part ${n} of the table${arrow}${result}${progress}`,
    );
    if (random() < 0.3) lines.push(`${pad}  > ${random() < 0.5 ? "←" : "<-"} out_${n - 1}, raw`);
    if (random() < 0.3) lines.push(`${pad}  > one JSON object per column`);
    if (random() < 0.1) lines.push(`${pad}  >`);
    n++;
  };
  for (let top = 1; n < steps; top++) {
    step(String(top), 0);
    for (let mid = 1; mid <= 3 && n < steps && random() < 0.7; mid++) {
      step(`${top}.${mid}`, 1);
      for (let leaf = 1; leaf <= 3 && n < steps && random() < 0.5; leaf++) {
        step(`${top}.${mid}.${leaf}`, 2);
      }
    }
  }
  return lines.join("\n") + (random() < 0.9 ? "\n" : "");
}

const INSERTS = [
  "|",
  " | ",
  "→",
  " → ",
  "->",
  "-",
  ">",
  "←",
  "<-",
  "[",
  "]",
  "[x]",
  "[ ]",
  "[~]",
  " ",
  "  ",
  "\t",
  ".",
  "1.",
  "2.1. ",
  ",",
  ", ",
  "\r",
  "\n",
  "\n\n",
  "\n  > ",
  "\n> ← a",
  "Progress: 3/4",
  "| Progress: 2",
  "Goal: ",
  "Constraints:",
  "## Steps",
  "# Plan: x",
  "\u00a0",
  "\u3000",
  "0",
  "9",
];

/** One random edit of `text`. */
function mutate(text: string, random: () => number): string {
  const pick = (n: number) => Math.floor(random() * n);
  const at = pick(text.length + 1);
  switch (pick(8)) {
    case 0: // insert a meaningful piece
      return text.slice(0, at) + INSERTS[pick(INSERTS.length)] + text.slice(at);
    case 1: // drop a character
      return text.slice(0, at) + text.slice(at + 1);
    case 2: // swap two neighbouring characters
      return at + 1 < text.length
        ? text.slice(0, at) + text[at + 1] + text[at] + text.slice(at + 2)
        : text;
    case 3: { // drop a line
      const lines = text.split("\n");
      lines.splice(pick(lines.length), 1);
      return lines.join("\n");
    }
    case 4: { // duplicate a line
      const lines = text.split("\n");
      const i = pick(lines.length);
      lines.splice(i, 0, lines[i]);
      return lines.join("\n");
    }
    case 5: { // swap two lines
      const lines = text.split("\n");
      const i = pick(lines.length);
      const j = pick(lines.length);
      [lines[i], lines[j]] = [lines[j], lines[i]];
      return lines.join("\n");
    }
    case 6: { // odd indentation on a line
      const lines = text.split("\n");
      const i = pick(lines.length);
      lines[i] = ["\t", " ", "   ", "\u00a0", ""][pick(5)] + lines[i].trimStart();
      return lines.join("\n");
    }
    default: // a line break style
      return random() < 0.5 ? text.replaceAll("\n", "\r\n") : text.replace(/\n(?=\S)/, "\n\n");
  }
}

/** `count` seeded texts: the first of every five unmutated, the others with 1–4 edits. */
export function mutatedPlans(seed: number, count: number): string[] {
  const random = mulberry32(seed);
  const texts: string[] = [];
  for (let i = 0; i < count; i++) {
    let text = basePlan(random);
    const edits = i % 5 === 0 ? 0 : 1 + Math.floor(random() * 4);
    for (let e = 0; e < edits; e++) text = mutate(text, random);
    texts.push(text);
  }
  return texts;
}

/** A parse function's outcome as one canonical string: the value, or the error's fields. */
export function outcomeOf(parse: () => unknown): string {
  try {
    return "ok " + JSON.stringify(parse());
  } catch (e) {
    // Fields rather than `instanceof`, so that a parser loaded from another copy compares too.
    const error = e as Error & { code?: string; line?: number; text?: string };
    return `error ${error.name} ${error.code ?? ""} ${error.line ?? ""} ${
      JSON.stringify(error.text ?? "")
    } ${error.message}`;
  }
}

/**
 * The outcomes of `parsePlan(text)` and of `parseStepLines(text)` (and, for texts that have one,
 * under root id `2`) as one string.
 */
export function parseOutcome(
  text: string,
  parser: { parsePlan: typeof parsePlan; parseStepLines: typeof parseStepLines } = {
    parsePlan,
    parseStepLines,
  },
): string {
  const under2 = text.replaceAll(/^(\s*)(\d)/gm, "$12.$2");
  return outcomeOf(() => parser.parsePlan(text)) + "\n" +
    outcomeOf(() => parser.parseStepLines(text)) + "\n" +
    outcomeOf(() => parser.parseStepLines(under2, "2"));
}

/** FNV-1a 32-bit hash of `text`, as 8 hex digits: a compact fingerprint of an outcome. */
export function fingerprint(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}
