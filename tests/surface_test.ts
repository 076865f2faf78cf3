/**
 * The package's public surface stays deliberate: every `mod.ts` names what it exports (no
 * `export *`, which would publish whatever a file happens to export), the root entry point exports
 * the agreed list and keeps the runner's and the engines' internals out, every name moved off the
 * root is where the CHANGELOG says, and source comments say why rather than which issue or item a
 * line came from.
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

/**
 * The root entry point's names, agreed: loading, the runner with its options and result, the common
 * events, the errors and their next steps as data, the backend contract. A name added to mod.ts must be added here on purpose
 * (and most belong in a subpath entry point instead: `./llm`, `./store`, `./definition`, `./runner`,
 * `./events`, `./ui`).
 */
const ROOT_NAMES = {
  loading: [
    "AgentDefinition",
    "AgentSummary",
    "listAgents",
    "loadAgentDefinition",
    "LoadAgentOptions",
  ],
  runner: [
    "AnswerOptions",
    "CompletionReason",
    "PendingInput",
    "RunHandle",
    "RunOptions",
    "RunUsage",
    "StepFlowResult",
    "StepFlowRunner",
    "StepFlowRunnerOptions",
  ],
  events: ["EVENT_NAMES", "EventName", "ExecutorEvents", "RunContext", "StepInfo", "ToolCallEvent"],
  backendContract: [
    "AnswerReading",
    "AnswerRejection",
    "LlmBackend",
    "LlmCallOptions",
    "LlmRequest",
    "LlmResponse",
    "LlmUsage",
    "readJsonAnswer",
  ],
  errors: [
    "AgentDefinitionError",
    "AgentNotFoundError",
    "BackendError",
    "ERROR_CODES",
    "ErrorCodeOf",
    "errorMessage",
    "ErrorModule",
    "JsonParseError",
    "KnownCode",
    "MissingVariablesError",
    "PromptNotFoundError",
    "PromptPathError",
    "SchemaResolutionError",
    "StepflowError",
    "StepflowErrorCode",
    "UsageError",
  ],
  nextStep: ["CommandRenderer", "NextStep", "StepflowAction"],
};

/** The names a re-export file exports, read from its `export { … } from` statements. */
function exportedNames(text: string): { names: string[]; types: Set<string> } {
  const names: string[] = [];
  const types = new Set<string>();
  for (const match of text.matchAll(/^export\s+(type\s+)?\{([^}]*)\}/gm)) {
    for (const item of match[2].split(",").map((part) => part.trim()).filter(Boolean)) {
      const typeOnly = match[1] !== undefined || item.startsWith("type ");
      const name = item.replace(/^type\s+/, "").split(/\s+as\s+/).at(-1)!;
      names.push(name);
      if (typeOnly) types.add(name);
    }
  }
  return { names, types };
}

/** The files of the package's entry points, from deno.json `exports`. */
async function entryPoints(): Promise<Record<string, string>> {
  const config = JSON.parse(await readFile(join(ROOT, "deno.json"), "utf8"));
  return config.exports;
}

Deno.test("the root entry point exports the agreed names and nothing else", async () => {
  const text = await readFile(join(ROOT, "mod.ts"), "utf8");
  const code = text.replace(/\/\*\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, "").trim();
  const statements = code.split(/;\s*/).filter(Boolean);
  assert.deepEqual(
    statements.filter((s) => !/^export\s+(type\s+)?\{[^}]*\}\s+from\s+"[^"]+"$/.test(s)),
    [],
    "mod.ts only re-exports named things",
  );
  const { names, types } = exportedNames(text);
  const agreed = Object.values(ROOT_NAMES).flat();
  assert.equal(new Set(agreed).size, agreed.length, "each agreed name once");
  assert.deepEqual([...names].sort(), [...agreed].sort(), "mod.ts exports exactly ROOT_NAMES");
  // The values the module really has are the agreed names that are not types: the text above was
  // read right.
  const root = await import("../mod.ts");
  assert.deepEqual(
    Object.keys(root).sort(),
    agreed.filter((name) => !types.has(name)).sort(),
  );
  assert.ok(agreed.length <= 50, `the root stays narrow (${agreed.length} names)`);
});

Deno.test("the root entry point keeps the engines' internals out", async () => {
  const root = await import("../mod.ts");
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

Deno.test("every name the CHANGELOG moved off the root is exported by the entry point it names", async () => {
  const changelog = await readFile(join(ROOT, "CHANGELOG.md"), "utf8");
  const start = changelog.search(/Moved from the root, by new entry\s+point:/);
  assert.ok(start > 0, "the CHANGELOG lists the names moved off the root");
  const section = changelog.slice(start, changelog.indexOf("\n- ", start));
  const exports = await entryPoints();
  const root = exportedNames(await readFile(join(ROOT, "mod.ts"), "utf8")).names;
  const seen = new Set<string>();
  let moved = 0;
  for (const item of section.split(/\n\s+- /).slice(1)) {
    const entry = /^`@stepflow\/core\/(\w+)`/.exec(item)?.[1];
    assert.ok(entry && exports[`./${entry}`], `a listed entry point is in deno.json: ${item}`);
    const file = exports[`./${entry}`];
    const offered = new Set(exportedNames(await readFile(join(ROOT, file), "utf8")).names);
    const listed = [...item.slice(item.indexOf(":")).matchAll(/`(\w+)`/g)].map((m) => m[1]);
    for (const name of listed) {
      assert.ok(offered.has(name), `${name} is exported by @stepflow/core/${entry} (${file})`);
      assert.ok(!root.includes(name), `${name} moved, so mod.ts no longer exports it`);
      assert.ok(!seen.has(name), `${name} is listed once`);
      seen.add(name);
      moved++;
    }
  }
  assert.ok(moved > 100, `the list names every moved name (${moved})`);
});

Deno.test("every entry point has a module doc with an example", async () => {
  for (const [entry, file] of Object.entries(await entryPoints())) {
    const text = await readFile(join(ROOT, file), "utf8");
    const doc = /^\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? "";
    assert.match(doc, /@module/, `${entry} (${file}) starts with a module doc`);
    assert.match(doc, /```ts/, `${entry} (${file}) shows an example`);
  }
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
