/** The import-circle check of tools/import_cycles.ts. */
import assert from "node:assert/strict";
import { cycles, folderGraph, withoutComments } from "../tools/import_cycles.ts";

Deno.test("cycles: file circles and self-imports are found, a one-way chain is not", () => {
  const graph = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", ["a.ts"]],
    ["e.ts", ["e.ts"]],
  ]);
  assert.deepEqual(cycles(graph), [["a.ts", "b.ts", "c.ts"], ["e.ts"]]);
  assert.deepEqual(cycles(new Map([["x.ts", ["y.ts"]], ["y.ts", []]])), []);
});

Deno.test("folderGraph: files in folders that import each other make a folder circle", () => {
  const files = new Map([
    ["llm/retry.ts", ["backoff.ts"]],
    ["llm/types.ts", ["definition/schema.ts"]],
    ["definition/normalize.ts", ["engine/on_error.ts"]],
    ["engine/on_error.ts", ["llm/types.ts"]],
    ["backoff.ts", []],
  ]);
  assert.deepEqual(cycles(folderGraph(files)), [["definition", "engine", "llm"]]);
});

Deno.test("withoutComments: imports in JSDoc examples and quotes in regexes are not read", () => {
  const text = withoutComments(
    [
      "/**",
      ' * import { x } from "./self.ts";',
      " */",
      'const quote = /["\']/g; // a comment with from "./no.ts"',
      'import { y } from "./real.ts";',
    ].join("\n"),
  );
  assert.ok(!text.includes("self.ts"));
  assert.ok(!text.includes("no.ts"));
  assert.ok(text.includes('from "./real.ts"'));
});
