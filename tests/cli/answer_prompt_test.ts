import assert from "node:assert/strict";
import { answerForm } from "../../src/definition/answer_form.ts";
import { askAnswer } from "../../src/cli/answer_prompt.ts";
import { lineReader } from "../../src/cli/kit/line_reader.ts";
import { StepflowError } from "../../src/errors.ts";

const form = answerForm({
  type: "object",
  required: ["decision", "approved"],
  properties: {
    decision: { enum: ["next", "abort"], description: "What to do" },
    approved: { type: "boolean" },
    retries: { type: "integer", default: 2 },
    note: { type: "string" },
    labels: { type: "array", items: { type: "string" } },
  },
});

function typed(text: string) {
  const out: string[] = [];
  const lines = lineReader(ReadableStream.from([new TextEncoder().encode(text)]));
  return { io: { lines, write: (t: string) => void out.push(t) }, out };
}

Deno.test("terminal answer: a prompt per field, re-asked until the line fits", async () => {
  const { io, out } = typed(
    ["maybe", "abort", "", "sure", "y", "2.5", "", "", '["a", "b"'].join("\n") +
      '\n["a","b"]\n',
  );
  const answer = await askAnswer(form, io);
  assert.deepEqual(answer, { decision: "abort", approved: true, retries: 2, labels: ["a", "b"] });
  const text = out.join("");
  assert.match(text, / {2}What to do\n {2}1\) next\n {2}2\) abort\n/);
  assert.match(text, /Pick 1-2 or one of: next, abort\./);
  assert.match(text, /"approved" is required\./);
  assert.match(text, /Answer y or n\./);
  assert.match(text, /"2\.5" is not an integer\./);
  assert.match(text, /retries \[integer, default 2\]: /);
  assert.match(text, /note \[empty to skip\]: /);
  assert.match(text, /Not JSON/);
});

Deno.test("terminal answer: input that ends early records nothing and says how to answer", async () => {
  const { io } = typed("1\n");
  await assert.rejects(askAnswer(form, io), (error: unknown) => {
    assert.ok(error instanceof StepflowError);
    assert.equal(error.code, "USAGE");
    assert.match(error.message, /ended before "approved" was answered; nothing was recorded/);
    return true;
  });
});
