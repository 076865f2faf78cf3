import assert from "node:assert/strict";
import { interpretCheck } from "../../src/flow/check.ts";
import { readJsonAnswer } from "../../src/engine/ask_structured.ts";

Deno.test("a check verdict is read by the engine's one reader: its reasons, its depth limit", () => {
  for (
    const text of ["", "Looks fine to me.", '{"result": "ok",', "[".repeat(100) + "]".repeat(100)]
  ) {
    const read = readJsonAnswer({ text });
    assert.equal(read.ok, false, text.slice(0, 20));
    if (read.ok) continue;
    assert.deepEqual(interpretCheck({ text }), {
      result: "ng",
      message: `Check response could not be parsed: ${read.rejection.reason}.`,
    });
  }
  const fence = "`".repeat(3);
  assert.deepEqual(
    interpretCheck({
      text: `Verdict:\n${fence}json\n{"result": "pass", "message": "green"}\n${fence}`,
    }),
    { result: "ok", message: "green" },
  );
  assert.deepEqual(
    interpretCheck({ text: "not JSON", structuredOutput: { result: false, message: "red" } }),
    { result: "ng", message: "red" },
  );
});
