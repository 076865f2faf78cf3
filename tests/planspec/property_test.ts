import assert from "node:assert/strict";
import {
  createPlanSpec,
  parsePlan,
  type PlanSpec,
  type PlanStatus,
  type PlanStep,
  serializePlan,
} from "../../src/planspec/mod.ts";
import { mulberry32 } from "../prng.ts";

const PIECES = [
  "a",
  "b",
  "z",
  "Q",
  "0",
  "7",
  " ",
  " ",
  "  ",
  "\t",
  "_",
  "-",
  ".",
  ":",
  ";",
  "!",
  "?",
  "#",
  "*",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  "<",
  ">",
  "=",
  "≥",
  "%",
  "/",
  "'",
  '"',
  "`",
  "\\",
  "→",
  "->",
  "<-",
  "←",
  "|",
  ",",
  "é",
  "ß",
  "日本語",
  "データ",
  "中文",
  "🚀",
  "👩‍💻",
  "Ω",
  "\u00a0",
  "Progress:",
  "Progress: 3/4",
  "[x]",
  "[ ]",
  "Goal:",
  "## Steps",
  "PLAN_CMD:",
  "1.",
  "2.1.",
];
const STATUSES: PlanStatus[] = ["pending", "active", "done", "blocked", "skipped"];
const TYPES = ["reason", "act", "decide", "subtask"];

class Gen {
  constructor(readonly next: () => number) {}
  int(max: number): number {
    return Math.floor(this.next() * max);
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  raw(maxPieces: number): string {
    let s = "";
    const n = this.int(maxPieces + 1);
    for (let i = 0; i < n; i++) s += this.pick(PIECES);
    return s;
  }
  /** A one-line field: trimmed, no line break, without the given forbidden substrings. */
  field(maxPieces: number, forbidden: string[] = []): string {
    let s = this.raw(maxPieces);
    for (const f of forbidden) s = s.split(f).join("");
    return s.trim();
  }
  /** A variable name: non-empty, no whitespace, no list or line separators. */
  name(allowArrows: boolean): string {
    const forbidden = [",", "|", " ", "\t", "\u00a0"];
    if (!allowArrows) forbidden.push("→", "->");
    for (;;) {
      const s = this.field(4, forbidden);
      if (s !== "" && !/\s/.test(s) && (allowArrows || !/→|->/.test(s))) return s;
    }
  }
  detailLine(): string {
    for (;;) {
      const s = this.raw(6).replace(/[\r\n]/g, "");
      if (!/^(←|<-)(\s|$)/.test(s)) return s;
    }
  }
}

function genStep(g: Gen, id: string, depth: number, budget: { steps: number }): PlanStep {
  budget.steps--;
  const stepType = g.chance(0.05)
    ? g.field(2, ["]"]) // an invalid type: still text the format must carry
    : g.pick(TYPES);
  let stepName = g.chance(0.3) ? g.name(true) : "";
  if (stepName.startsWith("[")) stepName = "n" + stepName;
  const step: PlanStep = {
    stepId: id,
    stepName,
    stepType,
    description: g.field(8, ["|"]),
    inputs: Array.from({ length: g.int(3) }, () => g.name(true)),
    outputs: Array.from({ length: g.int(3) }, () => g.name(false)),
    detail: Array.from({ length: g.int(3) }, () => g.detailLine()),
    result: g.chance(0.5) ? g.field(6) : "",
    status: g.pick(STATUSES),
    doneCount: g.chance(0.3) ? g.int(20) : 0,
    totalCount: g.chance(0.3) ? g.int(30) : null,
    children: [],
  };
  const childCount = depth < 9 && budget.steps > 0 && g.chance(0.45) ? 1 + g.int(4) : 0;
  for (let i = 1; i <= childCount && budget.steps > 0; i++) {
    step.children.push(genStep(g, `${id}.${i}`, depth + 1, budget));
  }
  return step;
}

function genPlan(g: Gen): PlanSpec {
  const budget = { steps: 1 + g.int(60) };
  const plan = createPlanSpec({
    title: g.chance(0.7) ? g.field(6) : "",
    goal: g.chance(0.9) ? g.field(8) : "",
    goalDetail: g.chance(0.4) ? Array.from({ length: 1 + g.int(3) }, () => g.detailLine()) : [],
    constraints: Array.from({ length: g.int(4) }, () => g.field(6)),
  });
  for (let i = 1; budget.steps > 0 && i <= 12; i++) {
    plan.steps.push(genStep(g, String(i), 0, budget));
  }
  return plan;
}

Deno.test("property: random plans round-trip through serializePlan and parsePlan", () => {
  let steps = 0;
  let maxDepth = 0;
  const seen = new Set<PlanStatus>();
  for (let seed = 1; seed <= 600; seed++) {
    const plan = genPlan(new Gen(mulberry32(seed)));
    const text = serializePlan(plan);
    let back: PlanSpec;
    try {
      back = parsePlan(text);
    } catch (error) {
      throw new Error(`seed ${seed}: ${(error as Error).message}\n${text}`);
    }
    assert.deepStrictEqual(back, plan, `seed ${seed}:\n${text}`);
    assert.equal(serializePlan(back), text, `seed ${seed}: text is stable`);
    const walk = (list: PlanStep[], depth: number) => {
      for (const s of list) {
        steps++;
        seen.add(s.status);
        maxDepth = Math.max(maxDepth, depth);
        walk(s.children, depth + 1);
      }
    };
    walk(plan.steps, 1);
  }
  // The generator really exercised what the property claims.
  assert.ok(steps > 5000, `only ${steps} steps generated`);
  assert.ok(maxDepth >= 6, `max depth ${maxDepth}`);
  assert.equal(seen.size, 5);
});

Deno.test("property: folded output of random plans parses and keeps every summary line it shows", () => {
  for (let seed = 1000; seed <= 1200; seed++) {
    const g = new Gen(mulberry32(seed));
    const plan = genPlan(g);
    const folded = serializePlan(plan, { fold: true });
    const back = parsePlan(folded);
    // Folding drops bodies only (children are always shown without explicit flags).
    const ids = (list: PlanStep[]): string[] => list.flatMap((s) => [s.stepId, ...ids(s.children)]);
    assert.deepEqual(ids(back.steps), ids(plan.steps), `seed ${seed}`);
  }
});
