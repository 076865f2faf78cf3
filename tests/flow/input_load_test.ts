import assert from "node:assert/strict";
import { flowToMermaid } from "../../src/definition/graph.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { flowGraph } from "../../src/ui/flow_graph.ts";
import { StepflowError } from "../../src/errors.ts";
import { writeAgent } from "./fixtures.ts";
import { approveSchema, releaseFiles } from "./input_fixtures.ts";

/** Loads the release agent with the input step changed; the load error's message. */
async function loadError(
  approve: Record<string, unknown>,
  schema: unknown = approveSchema,
): Promise<string> {
  const root = await Deno.makeTempDir();
  const files = releaseFiles(approve);
  const doc = files.schemas!["release.schema.json"] as { definitions: Record<string, unknown> };
  doc.definitions.approve = schema;
  await writeAgent(root, "release", files);
  const error = await loadAgentDefinition("release", { cwd: root }).then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, "the agent loaded but should not have");
  assert.equal(error.code, "AGENT_DEFINITION_INVALID");
  return error.message;
}

Deno.test("an input step loads and keeps its kind and waitTimeout", async () => {
  const root = await Deno.makeTempDir();
  await writeAgent(root, "release", releaseFiles({ waitTimeout: { ms: 60_000, intent: "abort" } }));
  const definition = await loadAgentDefinition("release", { cwd: root });
  const step = definition.steps["approve.release"];
  assert.equal(step.kind, "input");
  assert.deepEqual(step.waitTimeout, { ms: 60_000, intent: "abort" });
});

Deno.test("an input step's answer schema must be a form a person can fill in", async () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ type: "array", items: { type: "string" } }, /must be an object with "properties"/],
    [
      { oneOf: [{ type: "object" }, { type: "string" }] },
      /uses "oneOf", which a form cannot lay out/,
    ],
    [
      { type: "object", properties: { note: { type: "string" } } },
      /intentField "decision" is not a field of the answer schema \(fields: note\)/,
    ],
    [
      { type: "object", properties: { decision: { type: "boolean" } } },
      /intentField "decision" is asked as boolean/,
    ],
  ];
  for (const [schema, expected] of cases) {
    const message = await loadError({}, schema);
    assert.match(
      message,
      /step "approve\.release": outputSchemaRef: schema #\/definitions\/approve/,
    );
    assert.match(message, /cannot be an answer form/);
    assert.match(message, expected);
  }
});

Deno.test("an input step's intents, waitTimeout and model fields are checked at load", async () => {
  assert.match(
    await loadError({
      structuredGate: { allowedIntents: ["next", "jump"], intentField: "decision" },
    }),
    /allowedIntents includes "jump" but transitions.jump is missing: a person's answer needs a step to go to/,
  );
  assert.match(
    await loadError({ waitTimeout: { ms: 1000, intent: "repeat" } }),
    /waitTimeout.intent "repeat" is not in structuredGate.allowedIntents \(next, abort\)/,
  );
  assert.match(
    await loadError({ model: "big", validation: { validators: [{ command: "x" }] } }),
    /is an input step: a person answers it, not a model, so it takes no model, validation/,
  );
  assert.match(
    await loadError({ waitTimeout: { ms: 0, intent: "abort" } }),
    /waitTimeout/,
  );
});

Deno.test("waitTimeout on a step that does not wait is refused", async () => {
  const root = await Deno.makeTempDir();
  const files = releaseFiles();
  const steps = files.registry.steps as Record<string, Record<string, unknown>>;
  steps["draft.release"].waitTimeout = { ms: 1000, intent: "next" };
  await writeAgent(root, "release", files);
  const error = await loadAgentDefinition("release", { cwd: root }).then(() => undefined, (e) => e);
  assert.match(String(error?.message), /sets "waitTimeout" but is not an input step/);
});

Deno.test("--graph and the dashboard graph draw an input step distinctly, with its wait timeout", async () => {
  const root = await Deno.makeTempDir();
  await writeAgent(root, "release", releaseFiles({ waitTimeout: { ms: 1000, intent: "abort" } }));
  const definition = await loadAgentDefinition("release", { cwd: root });
  const mermaid = flowToMermaid(definition);
  assert.match(mermaid, /\[\/"approve\.release"\/\]/);
  assert.match(mermaid, /classDef input /);
  assert.match(
    mermaid,
    /class approve_release input|class approve\.release input|class \S*approve\S* input/,
  );
  assert.match(mermaid, /-\.->\|"wait timeout \(abort\)"\| aborted/);
  const graph = flowGraph(definition);
  const node = graph.nodes.find((n) => n.id === "approve.release")!;
  assert.ok(node.classes?.includes("input"));
  assert.ok(
    graph.edges.some((e) =>
      e.from === "approve.release" && e.to === "#aborted" && e.label === "wait timeout (abort)"
    ),
  );
});
