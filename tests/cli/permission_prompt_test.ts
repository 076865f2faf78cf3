/**
 * The terminal's permission question: bounded, escape sequences a model wrote made visible, and
 * the answer when the terminal's input ends (refused, saying so).
 */
import assert from "node:assert/strict";
import { askPermission, permissionQuestion } from "../../src/cli/permission_prompt.ts";
import { lineReader } from "../../src/cli/kit/line_reader.ts";
import type { RunPermissionAsk } from "../../src/flow/types.ts";

const ask = (args: Record<string, unknown>): RunPermissionAsk => ({
  stepId: "fix",
  callId: "c1",
  tool: "Write",
  args,
  reason: "Write needs permission in default mode.",
  suggestion: "Edit(src/app.ts)",
  runId: "r1",
  agent: "demo",
  iteration: 3,
  signal: new AbortController().signal,
});

Deno.test("the permission question shows bounded arguments with control characters made visible", () => {
  const content = Array.from({ length: 40 }, (_, i) => `line ${i} ${"x".repeat(300)}`).join("\n");
  const many = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i]));
  const text = permissionQuestion(
    ask({ file_path: "src/app.ts\u001b[2J", content, ...many }),
  );
  assert.ok(!text.includes("\u001b"), text);
  assert.match(text, /file_path: src\/app\.ts\\x1b\[2J\n/);
  assert.match(text, /… 34 more lines/);
  assert.match(text, /… 10 more arguments/);
  assert.ok(text.split("\n").every((line) => line.length <= 220), text);
  assert.match(text, /^Step "fix" \(iteration 3\) asks to run Write:$/m);
  assert.match(text, /Allowed without asking by: "Edit\(src\/app\.ts\)" in allowedTools/);
});

Deno.test("askPermission: yes, no, always; the terminal's input ending refuses the call", async () => {
  const lines = lineReader(ReadableStream.from([new TextEncoder().encode("yes\nN\nalways\n")]));
  const written: string[] = [];
  let held = 0;
  const io = {
    lines,
    write: (t: string) => void written.push(t),
    who: "terminal (erin)",
    hold: () => {
      held++;
      return () => void held--;
    },
  };
  assert.deepEqual(await askPermission(ask({}), io), { allow: true, by: "terminal (erin)" });
  assert.deepEqual(await askPermission(ask({}), io), { allow: false, by: "terminal (erin)" });
  assert.deepEqual(await askPermission(ask({}), io), {
    allow: true,
    always: true,
    by: "terminal (erin)",
  });
  const ended = await askPermission(ask({}), io);
  assert.equal(ended.allow, false);
  assert.equal(ended.by, "terminal (erin), input ended");
  assert.equal(held, 0); // the live line is back after every question
});

Deno.test("askPermission stops waiting when the call stops, and says the question is withdrawn", async () => {
  const stop = new AbortController();
  const written: string[] = [];
  let held = 0;
  // A terminal that never answers.
  const lines = lineReader(new ReadableStream<Uint8Array>());
  const asked = askPermission({ ...ask({}), signal: stop.signal }, {
    lines,
    write: (t) => {
      written.push(t);
      if (t.endsWith("[y/n/a]: ")) stop.abort(new Error("step timed out"));
    },
    who: "terminal",
    hold: () => {
      held++;
      return () => void held--;
    },
  });
  await assert.rejects(asked, /step timed out/);
  assert.match(written.join(""), /no answer needed any more: the step stopped/);
  assert.equal(held, 0);
});
