import assert from "node:assert/strict";
import { join } from "node:path";
import { flowToMermaid } from "../../src/definition/graph.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { flowGraph } from "../../src/ui/flow_graph.ts";
import { shipFiles, writeShipAgents } from "./agent_step_fixtures.ts";
import { writeAgent } from "./fixtures.ts";
import { releaseFiles } from "./input_fixtures.ts";

/** Loads the ship agent with its agent step changed; the load error's message. */
async function loadError(step: Record<string, unknown>, root?: string): Promise<string> {
  root ??= await Deno.makeTempDir();
  await writeShipAgents(root, step);
  const error = await loadAgentDefinition("ship", { cwd: root }).then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, "the agent loaded but should not have");
  assert.equal(error.code, "AGENT_DEFINITION_INVALID");
  return error.message;
}

Deno.test("an agent step loads with its child agent", async () => {
  const root = await Deno.makeTempDir();
  await writeShipAgents(root);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const step = definition.steps["release.ship"];
  assert.equal(step.kind, "agent");
  assert.equal(step.child?.name, "release");
  assert.deepEqual(step.args, { version: "{handoff.version}" });
  // A path works too (from the parent's folder).
  const byPath = await Deno.makeTempDir();
  await writeShipAgents(byPath, { agent: "../release" });
  const loaded = await loadAgentDefinition("ship", { cwd: byPath });
  assert.equal(loaded.steps["release.ship"].child?.dir, join(byPath, ".agent", "release"));
  assert.equal(loaded.steps["release.ship"].child?.name, "release");
});

Deno.test("args are checked against the child's declared parameters at load", async () => {
  assert.match(
    await loadError({ args: { version: "{handoff.version}", verison: "x" } }),
    /args\.verison is not a parameter of agent "release" \(it declares version\); did you mean "version"\?/,
  );
  assert.match(
    await loadError({ args: {} }),
    /agent "release" requires the parameter "version", which args does not set/,
  );
  assert.match(
    await loadError({ args: { version: 3 } }),
    /args\.version is a number, but the child's parameter is of type "string"/,
  );
  assert.match(
    await loadError({ args: { version: "{uv-vesion}" } }),
    /args\.version: \{uv-vesion\} is not a parameter of this agent/,
  );
});

Deno.test("an agent step names a loadable agent and takes no model fields", async () => {
  assert.match(
    await loadError({ agent: "relase" }),
    /step "release\.ship": its agent "relase" is not found \(no agent\.json in .*relase\); did you mean "release"\?/,
  );
  assert.match(await loadError({ agent: undefined }), /names no agent: add "agent"/);
  assert.match(
    await loadError({ structuredGate: { allowedIntents: ["next"], intentField: "a" } }),
    /is an agent step: the child agent's own steps call the model, so it takes no structuredGate/,
  );
  assert.match(
    await loadError({ transitions: { complete: { target: "complete.ship" } } }),
    /transitions\.complete: an agent step routes only with "next"/,
  );
  const root = await Deno.makeTempDir();
  const files = shipFiles();
  const steps = files.registry.steps as Record<string, Record<string, unknown>>;
  steps["plan.ship"].agent = "release";
  await writeAgent(root, "release", releaseFiles());
  await writeAgent(root, "ship", files);
  const error = await loadAgentDefinition("ship", { cwd: root }).catch((e) => e);
  assert.match(error.message, /sets "agent" but is not an agent step: add "kind": "agent"/);
});

Deno.test("cycles of agent steps (A → B → A, A → A) are refused at load", async () => {
  const root = await Deno.makeTempDir();
  // release gets an agent step back to ship: ship → release → ship.
  const release = releaseFiles();
  const steps = release.registry.steps as Record<string, Record<string, unknown>>;
  steps["back.release"] = { kind: "agent", agent: "ship" };
  steps["draft.release"].transitions = { next: { target: "back.release" } };
  await writeAgent(root, "release", release);
  await writeAgent(root, "ship", shipFiles());
  const error = await loadAgentDefinition("ship", { cwd: root }).catch((e) => e);
  assert.ok(error instanceof StepflowError);
  assert.match(
    error.message,
    /runs agent "ship", which is already on the way \(ship → release → ship\)/,
  );

  const self = await Deno.makeTempDir();
  await writeShipAgents(self, { agent: "ship", args: {} });
  const selfError = await loadAgentDefinition("ship", { cwd: self }).catch((e) => e);
  assert.match(selfError.message, /runs agent "ship", which is already on the way \(ship → ship\)/);
});

Deno.test("--graph and the dashboard graph draw an agent step distinctly, naming its agent", async () => {
  const root = await Deno.makeTempDir();
  await writeShipAgents(root);
  const definition = await loadAgentDefinition("ship", { cwd: root });
  const mermaid = flowToMermaid(definition);
  assert.match(mermaid, /\{\{"release\.ship<br\/><small>agent release<\/small>"\}\}/);
  assert.match(mermaid, /classDef agent /);
  assert.match(mermaid, /-->\|"child completed"\| complete_ship|"child completed"/);
  const node = flowGraph(definition).nodes.find((n) => n.id === "release.ship")!;
  assert.ok(node.classes?.includes("agent"), JSON.stringify(node));
});
