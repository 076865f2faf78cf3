/**
 * `extractJson` on 10 MB of adversarial model text (target ≤ 100 ms each): ten million `{`,
 * `{"a":` nested without end, unterminated strings, `{[` pairs, placeholders in prose before the
 * real answer, unclosed code fences — next to a plain loop over the same 10 MB (the floor) and a
 * typical answer.
 */
import { extractJson } from "../src/llm/structured_output.ts";

const SIZE = 10_000_000;

/** `unit` repeated to `SIZE` characters, flattened (as a model answer read from the network is). */
function tenMegabytes(unit: string, tail = ""): string {
  const text = unit.repeat(Math.ceil((SIZE - tail.length) / unit.length)) + tail;
  return JSON.parse(JSON.stringify(text));
}

const ADVERSARIAL: Record<string, string> = {
  "ten million {": tenMegabytes("{"),
  '{"a": nested, never closed': tenMegabytes('{"a":'),
  'unterminated strings {"x': tenMegabytes('{"x'),
  "{[ pairs": tenMegabytes("{["),
  "prose with {placeholders}, the answer last": tenMegabytes(
    "see {name} and {id}. ",
    '{"verdict":"ok"}',
  ),
  "unclosed ``` fences": tenMegabytes("```json\n{"),
};

for (const [name, text] of Object.entries(ADVERSARIAL)) {
  Deno.bench({
    name,
    group: "extractJson, 10 MB adversarial",
    fn() {
      extractJson(text);
    },
  });
}

const floor = ADVERSARIAL["ten million {"];
Deno.bench({
  name: "a loop over the same 10 MB (floor)",
  group: "extractJson, 10 MB adversarial",
  baseline: true,
  fn() {
    let sum = 0;
    for (let i = 0; i < floor.length; i++) sum += floor.charCodeAt(i);
    if (sum === 0) throw new Error("unreachable");
  },
});

const TYPICAL = `Here is my answer:\n\`\`\`json\n${
  JSON.stringify({ verdict: "ok", reason: "x".repeat(400), items: [1, 2, 3] })
}\n\`\`\`\nLet me know if you need more.`;
Deno.bench({
  name: "a typical answer (fenced, 500 chars)",
  group: "extractJson, typical",
  fn() {
    extractJson(TYPICAL);
  },
});
