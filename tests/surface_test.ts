/**
 * The package's public surface stays deliberate: every `mod.ts` names what it exports (no
 * `export *`, which would publish whatever a file happens to export), the root entry point keeps
 * the runner's and the engines' internals out, and source comments say why rather than which
 * issue or item a line came from.
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

async function tsFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(join(ROOT, dir), { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".ts")) {
      found.push(relative(ROOT, join(entry.parentPath, entry.name)));
    }
  }
  return found.sort();
}

Deno.test("every mod.ts names its exports", async () => {
  const mods = ["mod.ts", ...(await tsFiles("src")).filter((f) => f.endsWith("/mod.ts"))];
  assert.ok(mods.length > 5, `found the mod.ts files: ${mods.join(", ")}`);
  const offenders: string[] = [];
  for (const file of mods) {
    const text = await readFile(join(ROOT, file), "utf8");
    text.split("\n").forEach((line, i) => {
      if (/^\s*export\s+(type\s+)?\*/.test(line)) {
        offenders.push(`${file}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  assert.deepEqual(offenders, [], "name the exports instead of `export *`");
});

Deno.test("the root entry point exports what programs need, not the engines' internals", async () => {
  const root = await import("../mod.ts");
  const needed = [
    "loadAgentDefinition",
    "StepFlowRunner",
    "ScriptedBackend",
    "FileRunStore",
    "readJsonAnswer",
  ];
  for (const name of needed) {
    assert.ok(Object.hasOwn(root, name), `mod.ts exports ${name}`);
  }
  const internals = [
    "readPath",
    "mapIntent",
    "routeTransition",
    "interpretGate",
    "interpretCheck",
    "askStructured",
    "extractJson",
    "sleep",
    "newRunId",
    "normalizeStep",
    "parseRunLog",
  ];
  assert.deepEqual(internals.filter((name) => Object.hasOwn(root, name)), []);
});

Deno.test("source comments carry no development markers", async () => {
  const files = [
    ...(await tsFiles("src")),
    ...(await tsFiles("tests")),
    ...(await tsFiles("bench")),
    ...(await tsFiles("tools")),
  ].filter((f) => !f.includes("/fixtures/"));
  const marker = /\b(issue|item) \d+\b|\(#\d+\)/i;
  const offenders: string[] = [];
  for (const file of files) {
    const lines = (await readFile(join(ROOT, file), "utf8")).split("\n");
    lines.forEach((line, i) => {
      const comment = /^\s*(\/\/|\/\*|\*)/.test(line) ? line : line.split(/\s\/\/\s/)[1];
      if (comment !== undefined && marker.test(comment)) {
        offenders.push(`${file}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  assert.deepEqual(offenders, [], "say why, not which issue a line came from");
});

Deno.test("source text names concepts and docs pages, never the design documents", async () => {
  // Users have docs/ and the messages; they have no seed documents and no STEPFLOW.md.
  const files = (await tsFiles("src")).filter((f) => !f.includes("/fixtures/"));
  const design = /\bseeds? ?0\d\d\b|\bseed-0\d\d\b|STEPFLOW\.md|ARCHITECTURE\.md/i;
  const offenders: string[] = [];
  for (const file of files) {
    const lines = (await readFile(join(ROOT, file), "utf8")).split("\n");
    lines.forEach((line, i) => {
      if (design.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(offenders, [], "name the concept (check-gated, gate-routed) and a docs/ page");
});
