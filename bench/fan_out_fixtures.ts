/**
 * Agents of the fan-out benches, written into a temp folder: "echo" (a child that answers once: its
 * closing step), "chain" (ten plain agent steps in a row, each running echo once) and "fan" (one
 * fan-out step running echo once per item of its `items` parameter), and a zero-latency model that
 * answers every call at once.
 *
 * @module
 */
import { loadAgentDefinition } from "../src/definition/load.ts";
import type { AgentDefinition } from "../src/definition/types.ts";
import { ScriptedBackend } from "../src/llm/scripted.ts";
import { gateSchema, writeAgent } from "../tests/flow/fixtures.ts";

/** The agent steps of the chain agent. */
export const CHAIN = 10;

/** Writes the three agents under `root` and loads the two parents. */
export async function benchAgents(
  root: string,
  concurrency: number,
): Promise<{ chain: AgentDefinition; fan: AgentDefinition }> {
  await writeAgent(root, "echo", {
    agent: {
      name: "echo",
      behavior: { completionType: "echo" },
      parameters: { word: { type: "string", required: true } },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { echo: "complete.echo" },
      steps: {
        "complete.echo": {
          prompt: { c1: "steps", c2: "complete", c3: "echo" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "echo.schema.json", schema: "#/definitions/echo" },
        },
      },
    },
    prompts: { "steps/complete/echo/f_default.md": "Echo {uv-word}." },
    schemas: { "echo.schema.json": { definitions: { echo: gateSchema(["complete"]) } } },
  });
  const steps: Record<string, unknown> = {};
  for (let i = 1; i <= CHAIN; i++) {
    steps[`run.e${i}`] = {
      kind: "agent",
      agent: "echo",
      args: { word: `v${i}` },
      ...(i < CHAIN ? { transitions: { next: { target: `run.e${i + 1}` } } } : {}),
    };
  }
  await writeAgent(root, "chain", {
    agent: { name: "chain", behavior: { completionType: "chain" } },
    registry: { version: "1.0.0", entryStepMapping: { chain: "run.e1" }, steps },
    prompts: {},
  });
  await writeAgent(root, "fan", {
    agent: {
      name: "fan",
      behavior: { completionType: "fan" },
      parameters: { items: { type: "array" } },
      limits: { maxTotalIterations: 10 },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { fan: "run.each" },
      steps: {
        "run.each": {
          kind: "agent",
          agent: "echo",
          forEach: "{uv-items}",
          args: { word: "{item}" },
          concurrency,
          maxItems: 100_000,
        },
      },
    },
    prompts: {},
  });
  return {
    chain: await loadAgentDefinition("chain", { cwd: root }),
    fan: await loadAgentDefinition("fan", { cwd: root }),
  };
}

/** A model that answers every call at once. */
export function instantModel(): ScriptedBackend {
  const answer = { output: { summary: "echoed", next_action: { action: "complete" } } };
  return new ScriptedBackend(() => answer);
}

/** `n` items. */
export const items = (n: number): string[] => Array.from({ length: n }, (_, i) => `item ${i}`);
