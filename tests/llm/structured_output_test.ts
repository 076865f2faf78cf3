/**
 * `extractJson`: the order (whole text → fenced block → first valid `{…}` object) is kept, the
 * scan is one linear pass on adversarial text, and the documented bounds (text length, nesting
 * depth, fenced blocks) end the work with a reason a model can act on.
 */
import assert from "node:assert/strict";
import {
  extractJson,
  firstBalancedObject,
  MAX_JSON_DEPTH,
  MAX_JSON_TEXT_CHARS,
} from "../../src/llm/structured_output.ts";

Deno.test("extractJson: the whole text, then a fenced block, then the first balanced object", () => {
  assert.deepEqual(extractJson('  {"a":1}\n'), { ok: true, value: { a: 1 }, source: "whole" });
  assert.deepEqual(extractJson("[1,2]"), { ok: true, value: [1, 2], source: "whole" });
  assert.deepEqual(extractJson('"text"'), { ok: true, value: "text", source: "whole" });
  assert.deepEqual(
    extractJson('Sure:\n```\n{"x":0}\n```\nand\n```json\n{"a":1}\n```'),
    { ok: true, value: { a: 1 }, source: "fenced" },
    "a block labelled json wins over an earlier unlabelled one",
  );
  assert.deepEqual(
    extractJson("```js\nnot json\n```\n```\n[3]\n```"),
    { ok: true, value: [3], source: "fenced" },
  );
  assert.deepEqual(
    extractJson('Use {name} here. Answer: {"a": {"b": [1, "}"]}} done {"c":2}'),
    { ok: true, value: { a: { b: [1, "}"] } }, source: "balanced" },
  );
  assert.deepEqual(extractJson(" \n"), { ok: false, reason: "the response is empty" });
  const none = extractJson("no json {here} at all");
  assert.equal(none.ok, false);
  assert.match(!none.ok ? none.reason : "", /no JSON found/);
});

Deno.test("firstBalancedObject: an invalid object yields the first valid one inside or after it", () => {
  const cases: [string, string | undefined][] = [
    ['{"x": {"a":1}, oops}', '{"a":1}'],
    ['{"a": {"b": 1}', '{"b": 1}'],
    ['{ oops {"a":1}}', '{"a":1}'],
    ['{"a" {"b":1}}', '{"b":1}'],
    ['{"outer": {"mid": {"in": 1}}, bad}', '{"mid": {"in": 1}}'],
    ['{"s":"\\u00e9"} tail', '{"s":"\\u00e9"}'],
    ['{"n": 01}', undefined],
    ['{"a":"unterminated', undefined],
    ['{"a":1,}', undefined],
    ['{"t":true,"f":false,"z":null,"e":-1.5e+3}', '{"t":true,"f":false,"z":null,"e":-1.5e+3}'],
    ["a {} b", "{}"],
  ];
  for (const [text, expected] of cases) {
    assert.equal(firstBalancedObject(text), expected, text);
  }
});

/** The extraction before this change (quadratic), as the reference on small texts. */
function referenceBalanced(text: string): string | undefined {
  let start = text.indexOf("{");
  while (start >= 0) {
    let depth = 0;
    let inString = false;
    let escaped = false;
    for (let i = start; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (ch === "\\") escaped = true;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === "{") depth++;
      else if (ch === "}") {
        depth--;
        if (depth === 0) {
          const candidate = text.slice(start, i + 1);
          try {
            JSON.parse(candidate);
            return candidate;
          } catch {
            break;
          }
        }
      }
    }
    start = text.indexOf("{", start + 1);
  }
  return undefined;
}

Deno.test("firstBalancedObject: agrees with the former scan on 20,000 random texts", () => {
  // Without quotes, the one documented difference (a `{` inside a string of an invalid object)
  // cannot arise, so the answers must be identical.
  const alphabet = ["{", "}", "[", "]", ":", ",", "1", " ", "x", "{}", "[]", "0", "-", ".", "e"];
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let n = 0; n < 20_000; n++) {
    let text = "";
    const length = 1 + Math.floor(random() * 24);
    for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)];
    assert.equal(firstBalancedObject(text), referenceBalanced(text), JSON.stringify(text));
  }
});

Deno.test("extractJson: 100,000 `{` and other adversarial texts end in one pass", () => {
  // The former scan restarted at every `{`: 100,000 of them took 33 s.
  const started = performance.now();
  const texts = [
    "{".repeat(100_000),
    '{"a":'.repeat(100_000),
    '{"x'.repeat(100_000),
    "{[".repeat(100_000),
    "see {name}. ".repeat(100_000) + '{"verdict":"ok"}',
    "```json\n{".repeat(100_000),
  ];
  const results = texts.map((text) => extractJson(text));
  const elapsed = performance.now() - started;
  assert.deepEqual(results.map((r) => r.ok), [false, false, false, false, true, false]);
  assert.deepEqual(results[4], { ok: true, value: { verdict: "ok" }, source: "balanced" });
  assert.ok(elapsed < 5_000, `took ${elapsed} ms`);
});

Deno.test("extractJson: text past the size bound is refused without scanning, with both lengths", () => {
  const text = " ".repeat(MAX_JSON_TEXT_CHARS) + '{"a":1}';
  const result = extractJson(text);
  assert.equal(result.ok, false);
  assert.match(
    !result.ok ? result.reason : "",
    /^the response is 16,777,223 characters long, more than the 16,777,216 searched for JSON; answer with the JSON object alone$/,
  );
  assert.equal(extractJson(" ".repeat(MAX_JSON_TEXT_CHARS - 7) + '{"a":1}').ok, true);
});

Deno.test("extractJson: JSON nested past the depth bound is refused, saying so", () => {
  const at = (depth: number) => "[".repeat(depth - 1) + '{"a":1}' + "]".repeat(depth - 1);
  assert.equal(extractJson(at(MAX_JSON_DEPTH)).ok, true);
  for (
    const text of [
      at(MAX_JSON_DEPTH + 1),
      `Answer: ${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${"}".repeat(MAX_JSON_DEPTH + 1)}`,
      '{"a":'.repeat(1_000_000),
      "```json\n" + "[".repeat(MAX_JSON_DEPTH + 1) + "\n```",
    ]
  ) {
    const result = extractJson(text);
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.reason : "", /nested more than 10,000 levels deep/);
  }
});
