/**
 * PlanSpec parse + serialize on generated plans of 1k, 10k and 100k steps (target: ≤ 20 ms for
 * 10k, and linear growth). Each plan has three nesting levels, ~100-character descriptions,
 * outputs on every step, inputs and detail lines on a third of them, results on done steps and
 * progress on subtasks, and mixed statuses.
 *
 * Run with `deno bench -A bench/planspec_bench.ts`.
 *
 * @module
 */
import { parsePlan, serializePlan } from "../src/planspec/mod.ts";

const STATUS = ["", " [x]", " [>]", " [!]", " [~]"];

/** A realistic PlanSpec document with exactly `steps` steps. */
export function generatePlanText(steps: number): string {
  const lines = [
    `# Plan: Generated plan of ${steps} steps`,
    "Goal: Exercise the parser and serializer on a large, realistic plan tree",
    "> Every step has outputs; a third have inputs and detail lines",
    "Constraints:",
    "- keep parse + serialize linear",
    "## Steps",
  ];
  let n = 0;
  const step = (id: string, depth: number, type: string) => {
    const status = STATUS[n % STATUS.length];
    const result = status === " [x]" ? ` | finished in ${n % 97} ms with ${n % 13} warnings` : "";
    const progress = type === "subtask" ? ` | Progress: ${n % 5}/5` : "";
    const indent = "  ".repeat(depth);
    lines.push(
      `${indent}${id}.${status} [${type}] Analyze partition ${n} of the customer table, compute null rates and outliers per column → profile_${n}, stats_${n}${result}${progress}`,
    );
    if (n % 3 === 0) {
      lines.push(`${indent}  > ← profile_${n - 1}, raw_data`);
      lines.push(
        `${indent}  > Output a JSON object per column with null_rate, outlier_share, dtype`,
      );
    }
    n++;
  };
  for (let top = 1; n < steps; top++) {
    step(String(top), 0, "subtask");
    for (let mid = 1; mid <= 9 && n < steps; mid++) {
      step(`${top}.${mid}`, 1, "subtask");
      for (let leaf = 1; leaf <= 9 && n < steps; leaf++) {
        step(`${top}.${mid}.${leaf}`, 2, leaf % 2 === 0 ? "act" : "reason");
      }
    }
  }
  return lines.join("\n") + "\n";
}

for (const size of [1_000, 10_000, 100_000]) {
  const text = generatePlanText(size);
  const plan = parsePlan(text);
  if (serializePlan(plan) !== text) {
    throw new Error(`generated ${size}-step plan does not round-trip`);
  }
  const label = `${size / 1000}k steps`;
  // The written text is read once (`charCodeAt` flattens a rope), as saving it would: a serializer
  // that returned an unread rope would otherwise leave part of its cost out of the figure.
  Deno.bench({
    name: `parse + serialize ${label}`,
    group: "parse+serialize",
    baseline: size === 1_000,
    fn: () => void serializePlan(parsePlan(text)).charCodeAt(0),
  });
  Deno.bench({ name: `parse ${label}`, group: "parse", fn: () => void parsePlan(text) });
  Deno.bench({
    name: `serialize ${label}`,
    group: "serialize",
    fn: () => void serializePlan(plan).charCodeAt(0),
  });
}
