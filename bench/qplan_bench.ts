/**
 * QPlan benchmarks.
 *
 * - `each` over 1,000,000 numbers calling `math add` (target: ≤ 1 µs per iteration, i.e. ≤ 1 s
 *   per run), with the argument fast path and without it (zod on every call).
 * - Parsing (and validating) a 10,000-line script.
 *
 * Run: `deno bench -A bench/qplan_bench.ts`
 */
import {
  createQPlanRegistry,
  parseScript,
  runScript,
  tokenize,
  validateScript,
} from "../src/qplan/mod.ts";

const N = 1_000_000;
const nums = Array.from({ length: N }, (_, i) => i % 100);
const expected = nums.reduce((s, v) => s + v, 0);
const loop = parseScript(`@params "nums"
var 0 -> total
each n in nums {
  math add a=total b=n -> total
}`);
const registry = createQPlanRegistry({ print: () => {} });

async function runLoop(fastPath: boolean) {
  const result = await runScript(loop, { registry, params: { nums }, fastPath });
  if (result.status !== "completed" || result.vars.total !== expected) {
    throw new Error(
      `unexpected result: ${result.status} ${result.error?.message} ${result.vars.total}`,
    );
  }
}

Deno.bench({
  name: "each over 1,000,000 numbers with math add (time per run ÷ 1e6 = per iteration)",
  group: "loop",
  baseline: true,
  n: 5,
  warmup: 1,
  async fn() {
    await runLoop(true);
  },
});

Deno.bench({
  name: "same, without the argument fast path (zod on every call)",
  group: "loop",
  n: 5,
  warmup: 1,
  async fn() {
    await runLoop(false);
  },
});

/** A 10,000-line script: steps with actions, conditions, loops, returns and comments. */
function bigScript(lines: number): string {
  const out: string[] = ['@title "Generated"', '@params "seed"', "var 0 -> acc"];
  let k = 0;
  while (out.length < lines - 12) {
    k++;
    out.push(
      `step id="s${k}" desc="Step ${k}" onError="retry=1" {`,
      `  var [1, 2, 3, ${k}] -> list${k}`,
      `  math sum arr=list${k} -> sum${k}  # a comment`,
      `  if sum${k} > 10 and acc EXISTS {`,
      `    set acc = acc + sum${k} * 2`,
      `  } else {`,
      `    print "small", sum${k}`,
      `  }`,
      `  each (v, i) in list${k} { set acc = acc + v }`,
      `  return total=sum${k} items=list${k}.count`,
      `}`,
    );
  }
  while (out.length < lines) out.push("// filler comment");
  return out.join("\n");
}

const BIG = bigScript(10_000);
if (BIG.split("\n").length !== 10_000) {
  throw new Error("the generated script must have 10,000 lines");
}

Deno.bench({ name: "tokenize a 10,000-line script", group: "parse", fn: () => void tokenize(BIG) });
Deno.bench({
  name: "parse a 10,000-line script",
  group: "parse",
  baseline: true,
  fn: () => void parseScript(BIG),
});
Deno.bench({
  name: "parse + validate a 10,000-line script",
  group: "parse",
  fn: () => {
    const v = validateScript(BIG, { params: ["seed"] });
    if (!v.ok) throw new Error(v.issues[0].message);
  },
});
