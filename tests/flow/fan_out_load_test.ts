import assert from "node:assert/strict";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import { StepflowError } from "../../src/errors.ts";
import { parseParameterText } from "../../src/definition/parameters.ts";
import { fleetFiles, reviewerFiles } from "./fan_out_fixtures.ts";
import { writeAgent } from "./fixtures.ts";

/** Writes the fleet agent with its fan-out step (and more steps) changed. */
async function write(
  step: Record<string, unknown>,
  change: (files: ReturnType<typeof fleetFiles>) => void = () => {},
): Promise<string> {
  const root = await Deno.makeTempDir();
  await writeAgent(root, "reviewer", reviewerFiles());
  const files = fleetFiles(step);
  change(files);
  await writeAgent(root, "fleet", files);
  return root;
}

async function loadError(
  step: Record<string, unknown>,
  change?: (files: ReturnType<typeof fleetFiles>) => void,
): Promise<string> {
  const root = await write(step, change);
  const error = await loadAgentDefinition("fleet", { cwd: root }).then(() => undefined, (e) => e);
  assert.ok(error instanceof StepflowError, "the agent loaded but should not have");
  assert.equal(error.code, "AGENT_DEFINITION_INVALID");
  return error.message;
}

function steps(files: ReturnType<typeof fleetFiles>): Record<string, Record<string, unknown>> {
  return (files.registry as { steps: Record<string, Record<string, unknown>> }).steps;
}

Deno.test("a fan-out step loads: forEach, concurrency, onItemError, maxItems, {item.<path>} args", async () => {
  const root = await write({
    args: { path: "{item.path}" },
    concurrency: 8,
    onItemError: "retry=2",
    maxItems: 50,
  });
  const definition = await loadAgentDefinition("fleet", { cwd: root });
  const step = definition.steps["review.each"];
  assert.equal(step.forEach, "{handoff.files}");
  assert.equal(step.concurrency, 8);
  assert.deepEqual(step.onItemError, { kind: "retry", count: 2 });
  assert.equal(step.maxItems, 50);
  // complete.fleet's {handoff.counts} is handed off by the fan-out: no warning about it.
  assert.deepEqual(definition.warnings.filter((w) => w.includes("counts")), []);
});

Deno.test("forEach names a handoff value handed off on some path to the step, or an array parameter", async () => {
  assert.match(
    await loadError({ forEach: "{handoff.paths}" }),
    /step "review\.each": forEach \{handoff\.paths\}, but no path from the entry step "list\.files" passes a step that hands "paths" off/,
  );
  assert.match(await loadError({ forEach: "files" }), /forEach "files" is not a reference/);
  assert.match(
    await loadError({ forEach: "{uv-pahts}" }),
    /forEach: \{uv-pahts\} is not a parameter of this agent \(did you mean \{uv-paths\}\?\)/,
  );
  assert.match(
    await loadError({ forEach: "{uv-paths}" }, (f) => {
      (f.agent!.parameters as Record<string, unknown>).paths = { type: "string" };
    }),
    /forEach: the parameter "paths" is of type "string", not "array"/,
  );
  // A parameter of type array is fine; so is a key only some paths hand off (a warning).
  const root = await write({ forEach: "{uv-paths}" });
  await loadAgentDefinition("fleet", { cwd: root });
  const some = await write({}, (f) => {
    const registry = f.registry as { entryStepMapping: Record<string, string> };
    registry.entryStepMapping.fleet = "skip.list";
    steps(f)["skip.list"] = {
      prompt: { c1: "steps", c2: "list", c3: "files" },
      structuredGate: { allowedIntents: ["next", "jump"], intentField: "next_action.action" },
      transitions: { next: { target: "list.files" }, jump: { target: "review.each" } },
      outputSchemaRef: { file: "fleet.schema.json", schema: "#/definitions/list" },
    };
  });
  const loaded = await loadAgentDefinition("fleet", { cwd: some });
  assert.ok(
    loaded.warnings.some((w) =>
      /forEach \{handoff\.files\}, but some path .*: skip\.list → review\.each/.test(w)
    ),
    loaded.warnings.join("\n"),
  );
});

Deno.test("{item} only in a fan-out step; fan-out fields only with forEach; bounds", async () => {
  assert.match(
    await loadError({ forEach: undefined }),
    /args\.path: \{item\} binds an element of "forEach", but the step has no "forEach"/,
  );
  assert.match(
    await loadError({ forEach: undefined, args: { path: "x" } }),
    /sets "concurrency", "onItemError" but has no "forEach"/,
  );
  assert.match(
    await loadError({}, (f) => {
      steps(f)["list.files"].forEach = "{handoff.files}";
    }),
    /step "list\.files": sets "forEach" but is not an agent step/,
  );
  assert.match(await loadError({ concurrency: 0 }), /concurrency/);
  assert.match(await loadError({ concurrency: 257 }), /concurrency/);
  assert.match(await loadError({ concurrency: 1.5 }), /concurrency/);
  assert.match(await loadError({ maxItems: 0 }), /maxItems/);
  assert.match(await loadError({ maxItems: 100_001 }), /maxItems/);
  assert.match(await loadError({ onItemError: "jump=x" }), /onItemError/);
  assert.match(
    await loadError({ onItemError: "retry=0" }),
    /retry=0: an item may be retried 1 to 100 times/,
  );
  assert.match(await loadError({ onItemError: "retry=101" }), /retry=101/);
});

Deno.test("an array parameter takes a JSON array on the command line", () => {
  assert.deepEqual(parseParameterText("files", { type: "array" }, ['["a, b.ts", "c.ts"]']), {
    value: ["a, b.ts", "c.ts"],
  });
  assert.deepEqual(parseParameterText("n", { type: "array", items: "number" }, ["[1, 2]", "3"]), {
    value: [1, 2, 3],
  });
  assert.match(
    parseParameterText("files", { type: "array" }, ["[1]"]).error!,
    /holds 1, which is not a string/,
  );
  assert.match(
    parseParameterText("files", { type: "array" }, ["[oops"]).error!,
    /not a JSON array/,
  );
});
