import assert from "node:assert/strict";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020";
import { parse as parseYaml } from "yaml";
import {
  AGENT_SCHEMA_FILE,
  generateSchemas,
  REGISTRY_SCHEMA_FILE,
} from "../../src/definition/json_schemas.ts";
import { writeSchemas } from "../../src/definition/write_schemas.ts";
import { type Json, REPO_ROOT } from "./fixtures.ts";

const SCHEMAS = join(REPO_ROOT, "agents", "schemas");

Deno.test("agents/schemas/ matches the zod schemas (run `deno task schemas` after changing them)", async () => {
  for (const [name, text] of Object.entries(generateSchemas())) {
    const committed = await Deno.readTextFile(join(SCHEMAS, name)).catch(() => "<missing>");
    assert.equal(
      committed,
      text,
      `agents/schemas/${name} is out of date with src/definition/schema.ts: run \`deno task schemas\` and commit the result.`,
    );
  }
});

Deno.test("generated schemas are stable, formatted, newline-terminated 2020-12 JSON Schemas", () => {
  const first = generateSchemas();
  assert.deepEqual(Object.keys(first), [AGENT_SCHEMA_FILE, REGISTRY_SCHEMA_FILE]);
  assert.deepEqual(generateSchemas(), first);
  for (const text of Object.values(first)) {
    assert.ok(text.endsWith("}\n"));
    const schema = JSON.parse(text);
    assert.equal(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
    assert.equal(schema.additionalProperties, false, "unknown keys are errors");
    assert.equal(text, `${JSON.stringify(schema, null, 2)}\n`);
  }
});

Deno.test("writeSchemas writes both files atomically and skips unchanged ones", async () => {
  const dir = await Deno.makeTempDir();
  const written = await writeSchemas(dir);
  assert.deepEqual(written.map((f) => f.slice(dir.length + 1)).sort(), [
    AGENT_SCHEMA_FILE,
    REGISTRY_SCHEMA_FILE,
  ]);
  assert.deepEqual(await writeSchemas(dir), []);
  const names = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();
  assert.deepEqual(names, [AGENT_SCHEMA_FILE, REGISTRY_SCHEMA_FILE], "no temp files left");
});

Deno.test("the example agents and the template validate against the generated JSON Schemas", async () => {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const schemas = generateSchemas();
  const agentSchema = ajv.compile(JSON.parse(schemas[AGENT_SCHEMA_FILE]));
  const registrySchema = ajv.compile(JSON.parse(schemas[REGISTRY_SCHEMA_FILE]));
  const folders = [
    join(REPO_ROOT, ".agent", "code-improver"),
    join(REPO_ROOT, ".agent", "issue-solver"),
    join(REPO_ROOT, "agents", "templates", "gate-routed"),
  ];
  for (const dir of folders) {
    const agent: Json = JSON.parse(await Deno.readTextFile(join(dir, "agent.json")));
    const registry: Json = JSON.parse(await Deno.readTextFile(join(dir, "steps_registry.json")));
    if (dir.endsWith("gate-routed")) {
      agent.name = agent.name.replaceAll("__AGENT_NAME__", "x");
    }
    assert.equal(agent.$schema, "../../agents/schemas/agent.schema.json");
    assert.equal(registry.$schema, "../../agents/schemas/steps_registry.schema.json");
    assert.ok(agentSchema(agent), `${dir}/agent.json: ${JSON.stringify(agentSchema.errors)}`);
    assert.ok(registrySchema(registry), `${dir}: ${JSON.stringify(registrySchema.errors)}`);
  }
  // …and reject what zod rejects: an unknown key.
  assert.equal(registrySchema({ version: "1", steps: {}, stepz: 1 }), false);
  // the demo scripts are maps from step id to lists
  for (const dir of folders) {
    const script = parseYaml(await Deno.readTextFile(join(dir, "demo.script.yaml")));
    for (const [key, list] of Object.entries(script)) assert.ok(Array.isArray(list), key);
  }
});
