/**
 * Output schemas that `$ref` other files of the agent's `schemas/` folder, and
 * output schemas compiled at load time exactly as at run time.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { AgentDefinitionError } from "../../src/definition/errors.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { resolveOutputSchema } from "../../src/definition/output_schema.ts";
import { createSchemaCompiler } from "../../src/definition/schema_compiler.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { out, seed004Files, writeAgent } from "../flow/fixtures.ts";

type Files = ReturnType<typeof seed004Files>;
type Json = Record<string, unknown>;

const COMMON = {
  $schema: "http://json-schema.org/draft-07/schema#",
  $defs: {
    report: {
      type: "object",
      required: ["stepId", "summary"],
      properties: { stepId: { const: "complete.issue" }, summary: { $ref: "#/$defs/text" } },
      additionalProperties: false,
    },
    text: { type: "string", minLength: 1 },
  },
};

async function agentWith(mutate: (files: Files, schema: Json) => void) {
  const root = await Deno.makeTempDir({ prefix: "stepflow_refs_" });
  const files = seed004Files();
  const schema = files.schemas!["issue.schema.json"] as Json;
  mutate(files, schema);
  const dir = await writeAgent(root, "issue-solver", files);
  return { root, dir };
}

async function loadProblems(root: string): Promise<string[]> {
  try {
    await loadAgentDefinition("issue-solver", { cwd: root });
  } catch (error) {
    assert.ok(error instanceof AgentDefinitionError, String(error));
    return [...error.problems];
  }
  throw new Error("the agent loaded");
}

function defs(schema: Json): Json {
  return schema.definitions as Json;
}

Deno.test("$ref to another schemas/ file: loads, bundles, validates at run time", async () => {
  const { root } = await agentWith((files, schema) => {
    defs(schema)["complete.issue"] = { $ref: "common.schema.json#/$defs/report" };
    files.schemas!["common.schema.json"] = COMMON;
  });
  const def = await loadAgentDefinition("issue-solver", { cwd: root });
  const backend = new ScriptedBackend({
    "initial.issue": [out("initial.issue", "complete", { analysis: {}, issue: "#1" })],
    // The first report breaks the shared definition (minLength 1): re-asked, then accepted.
    "complete.issue": [
      { output: { stepId: "complete.issue", summary: "" } },
      { output: { stepId: "complete.issue", summary: "fixed" } },
    ],
  });
  const result = await new StepFlowRunner(def, { backend }).run({
    args: { topic: "t" },
    cwd: root,
  });
  assert.equal(result.success, true, JSON.stringify(result.error));
  assert.deepEqual(result.output, { stepId: "complete.issue", summary: "fixed" });
  const reask = backend.calls.find((c) => c.stepId === "complete.issue" && c.kind === "reask");
  assert.ok(reask, "the empty summary was re-asked");
  // What the backend receives is self-contained: no reference leaves the schema.
  const sent = JSON.stringify(
    backend.calls.find((c) => c.stepId === "complete.issue")!.outputSchema,
  );
  assert.doesNotMatch(sent, /common\.schema\.json/);
  // Bundled under $defs; other steps' definitions are not sent.
  assert.match(sent, /"#\/\$defs\/common\.report"/);
  assert.match(sent, /"#\/\$defs\/common\.text"/);
  assert.doesNotMatch(sent, /initial\.issue/);
});

Deno.test("$ref bundling: transitive, cyclic and sub-folder references resolve", async () => {
  const { dir } = await agentWith((files, schema) => {
    defs(schema)["complete.issue"] = {
      type: "object",
      properties: { tree: { $ref: "shared/tree.schema.json#/$defs/node" } },
      required: ["tree"],
    };
    files.schemas!["shared/tree.schema.json"] = {
      $defs: {
        node: {
          type: "object",
          properties: {
            label: { $ref: "../common.schema.json#/$defs/text" },
            children: { type: "array", items: { $ref: "#/$defs/node" } },
          },
        },
      },
    };
    files.schemas!["common.schema.json"] = COMMON;
  });
  // ".." is refused even when it stays inside schemas/.
  await assert.rejects(
    resolveOutputSchema(dir, { file: "issue.schema.json", schema: "#/definitions/complete.issue" }),
    /\$ref "\.\.\/common\.schema\.json#\/\$defs\/text" in .*tree\.schema\.json is refused: it holds "\.\."/,
  );
  const tree = join(dir, "schemas", "shared", "tree.schema.json");
  const text = await Deno.readTextFile(tree);
  await Deno.writeTextFile(tree, text.replace("../common.schema.json", "leaf.schema.json"));
  await Deno.writeTextFile(
    join(dir, "schemas", "shared", "leaf.schema.json"),
    JSON.stringify({ $defs: { text: { type: "string", minLength: 1 } } }),
  );
  const resolved = await resolveOutputSchema(dir, {
    file: "issue.schema.json",
    schema: "#/definitions/complete.issue",
  });
  assert.deepEqual(resolved.files.map((f) => f.file.slice(dir.length)), [
    "/schemas/issue.schema.json",
    "/schemas/shared/tree.schema.json",
    "/schemas/shared/leaf.schema.json",
  ]);
  const validate = createSchemaCompiler()(resolved.schema);
  assert.equal(validate({ tree: { label: "a", children: [{ label: "b", children: [] }] } }), true);
  assert.equal(validate({ tree: { label: "a", children: [{ label: "" }] } }), false);
});

Deno.test("$ref confinement: URLs, absolute paths, '..' and links out of schemas/ are refused at load", async () => {
  const outside = await Deno.makeTempDir({ prefix: "stepflow_outside_" });
  await Deno.writeTextFile(join(outside, "evil.schema.json"), JSON.stringify(COMMON));
  const cases: Array<[string, RegExp]> = [
    ["https://example.com/s.json#/$defs/x", /is refused: it is a URL/],
    [`${join(outside, "evil.schema.json")}#/$defs/report`, /is refused: it is an absolute path/],
    ["../../escape.schema.json#/$defs/report", /is refused: it holds "\.\."/],
    ["link.schema.json#/$defs/report", /is a link to .*outside the schemas folder/],
    [
      "common.schema.json#/$defs/nope",
      /does not resolve: Schema pointer #\/\$defs\/nope not found/,
    ],
    ["missing.schema.json#/$defs/x", /Schema file not found: .*missing\.schema\.json/],
  ];
  for (const [ref, expected] of cases) {
    const { root, dir } = await agentWith((files, schema) => {
      defs(schema)["complete.issue"] = { $ref: ref };
      files.schemas!["common.schema.json"] = COMMON;
    });
    await Deno.symlink(join(outside, "evil.schema.json"), join(dir, "schemas", "link.schema.json"));
    const problems = await loadProblems(root);
    assert.equal(problems.length, 1, problems.join("\n"));
    assert.match(problems[0], /^steps_registry\.json: step "complete\.issue": outputSchemaRef: /);
    assert.match(problems[0], expected, ref);
  }
});

Deno.test("load compiles every output schema: a typo in a type or a dangling $ref names file, pointer and step", async () => {
  const { root } = await agentWith((_files, schema) => {
    const initial = defs(schema)["initial.issue"] as Json;
    (initial.properties as Json).issue = { type: "strnig" };
    defs(schema)["complete.issue"] = {
      type: "objcet",
      properties: { summary: { $ref: "#/definitions/summary" } },
    };
  });
  const problems = await loadProblems(root);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(
    problems[0],
    /^steps_registry\.json: step "initial\.issue": outputSchemaRef: schema #\/definitions\/initial\.issue in .*issue\.schema\.json does not compile: schema is invalid: \/properties\/issue\/type must be equal to one of the allowed values; "strnig" is not a JSON Schema type \(did you mean "string"\?\)\. Fix the schema/,
  );
  assert.match(
    problems[1],
    /^steps_registry\.json: step "complete\.issue": outputSchemaRef: schema #\/definitions\/complete\.issue in .*issue\.schema\.json does not compile: /,
  );
  assert.match(
    problems[1],
    /(\/type must be equal to one of the allowed values|can't resolve reference)/,
  );
});

Deno.test("load: an unresolvable local $ref is a load-time error", async () => {
  const { root } = await agentWith((_files, schema) => {
    defs(schema)["complete.issue"] = {
      type: "object",
      properties: { summary: { $ref: "#/definitions/summary" } },
    };
  });
  const problems = await loadProblems(root);
  assert.equal(problems.length, 1, problems.join("\n"));
  assert.match(
    problems[0],
    /step "complete\.issue": outputSchemaRef: schema #\/definitions\/complete\.issue in .*issue\.schema\.json does not compile: can't resolve reference #\/definitions\/summary/,
  );
});

Deno.test("the load-time schema check and the full compile agree", async () => {
  const { createSchemaChecker } = await import("../../src/definition/schema_compiler.ts");
  const check = createSchemaChecker();
  const compile = createSchemaCompiler();
  const draft2020 = "https://json-schema.org/draft/2020-12/schema";
  const bad: Json[] = [
    { type: "objcet" },
    { type: "object", properties: { a: { $ref: "#/definitions/missing" } } },
    { type: "string", pattern: "(" },
    { type: "object", required: "a" },
    { $schema: draft2020, $defs: { a: { type: "strng" } }, $ref: "#/$defs/a" },
    { $ref: "#nope" },
  ];
  const good: Json[] = [
    { type: "object", properties: { a: { $ref: "#/definitions/x" } }, definitions: { x: {} } },
    { $schema: draft2020, $defs: { a: { $anchor: "foo", type: "string" } }, $ref: "#foo" },
    { enum: [{ $ref: "#/not/a/reference" }] },
    { type: "array", items: { $ref: "#" } },
  ];
  for (const schema of bad) {
    assert.throws(() => compile(schema), JSON.stringify(schema));
    assert.throws(() => check(schema), JSON.stringify(schema));
  }
  for (const schema of good) {
    compile(schema);
    check(schema);
  }
});
