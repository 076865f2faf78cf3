/**
 * `loadAgentDefinition` of a generated 1,000-step registry: 500 check-gated and 500 gate-routed
 * steps in one chain ending in a closing step, each with its own prompt file (1,501 prompt files in
 * all, check prompts included) and one schema file holding every gate step's definition. Covers
 * JSON parsing, zod, normalisation, every flow rule, reachability, and the file checks.
 * Target: ≤ 250 ms.
 */
import { dirname, join } from "node:path";
import { loadAgentDefinition } from "../src/definition/load.ts";
import { validateFlow } from "../src/definition/validate.ts";

const STEPS = 1_000;
const root = await Deno.makeTempDir({ prefix: "stepflow-bench-def-" });
const dir = join(root, ".agent", "big");

async function write(rel: string, text: string): Promise<void> {
  await Deno.mkdir(dirname(join(dir, rel)), { recursive: true });
  await Deno.writeTextFile(join(dir, rel), text);
}

const id = (i: number) => (i % 2 === 0 ? `s_${(0x1000 + i).toString(16)}` : `phase${i}.task`);
const steps: Record<string, unknown> = {};
const definitions: Record<string, unknown> = {};
const files: Array<Promise<void>> = [];
for (let i = 0; i < STEPS; i++) {
  const stepId = id(i);
  const next = i + 1 < STEPS ? id(i + 1) : undefined;
  files.push(write(`prompts/steps/p${i}/work/f_default.md`, `Step ${i}: {uv-topic}`));
  if (i % 2 === 0) {
    files.push(write(`prompts/checks/p${i}/work/f_default.md`, `Check ${i}: {"result": "ok"}`));
    steps[stepId] = {
      id: stepId,
      name: `Step ${i}`,
      prompt: { c1: "steps", c2: `p${i}`, c3: "work" },
      iterations: { min: 1, max: 2 },
      check: {
        prompt: { c1: "checks", c2: `p${i}`, c3: "work" },
        onPass: next ? { next } : { complete: true },
        onFail: i > 0 ? { fallback: id(i - 1) } : { retry: true, maxRetries: 2 },
      },
    };
  } else {
    definitions[stepId] = {
      type: "object",
      required: ["stepId", "next_action"],
      properties: { stepId: { const: stepId }, next_action: { $ref: "#/definitions/action" } },
    };
    steps[stepId] = {
      stepId,
      c2: `p${i}`,
      c3: "work",
      outputSchemaRef: { file: "flow.schema.json", schema: `#/definitions/${stepId}` },
      structuredGate: {
        allowedIntents: ["next", "repeat", "complete"],
        intentField: "next_action.action",
        handoffFields: ["summary"],
      },
      transitions: {
        ...(next ? { next: { target: next } } : {}),
        repeat: { target: stepId },
        complete: { target: "complete.task" },
      },
      onError: "retry=2",
    };
    if (!next) {
      (steps[stepId] as { structuredGate: { allowedIntents: string[] } }).structuredGate
        .allowedIntents = ["repeat", "complete"];
    }
  }
}
steps["complete.task"] = {
  stepId: "complete.task",
  c2: "complete",
  c3: "task",
  outputSchemaRef: { file: "flow.schema.json", schema: "#/definitions/complete.task" },
};
definitions["complete.task"] = { type: "object" };
definitions.action = { type: "object", properties: { action: { type: "string" } } };
files.push(write("prompts/steps/complete/task/f_default.md", "Report on {uv-topic}"));
files.push(write("prompts/system.md", "You are a test agent."));
files.push(write("schemas/flow.schema.json", JSON.stringify({ definitions }, null, 2)));
files.push(write(
  "agent.json",
  JSON.stringify({
    name: "big",
    behavior: { completionType: "task", systemPromptPath: "prompts/system.md" },
    parameters: { topic: { type: "string", required: true } },
  }),
));
files.push(write(
  "steps_registry.json",
  JSON.stringify({ version: "1", entryStep: id(0), steps }, null, 2),
));
await Promise.all(files);

// Sanity: the generated agent is valid and warning-free, so the bench measures the happy path.
const loaded = await loadAgentDefinition("big", { cwd: root });
if (Object.keys(loaded.steps).length !== STEPS + 1 || loaded.warnings.length > 0) {
  throw new Error(`bench fixture is wrong: ${loaded.warnings.join("\n")}`);
}

Deno.bench({
  name: "loadAgentDefinition: 1,000 steps, 1,501 prompt files, one shared schema file",
  group: "definition",
  baseline: true,
  async fn() {
    await loadAgentDefinition("big", { cwd: root });
  },
});

Deno.bench({
  name: "validateFlow: the same registry, flow rules only (checkFiles: false)",
  group: "definition",
  async fn() {
    await validateFlow(
      { dir, registry: loaded.registry, agent: loaded.agent },
      { checkFiles: false },
    );
  },
});
