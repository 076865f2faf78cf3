/**
 * The "ship" agent, whose agent step runs the "release" agent (tests/flow/input_fixtures.ts) as a
 * child run: plan.ship (model) hands off `version` → release.ship (agent step: release, with
 * `version` from the handoff; hands off the child's `summary`) → complete.ship.
 *
 * @module
 */
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import { type AgentFiles, gateSchema, writeAgent } from "./fixtures.ts";
import { releaseFiles } from "./input_fixtures.ts";

/** The ship agent; `step` overrides fields of its agent step. */
export function shipFiles(step: Record<string, unknown> = {}): AgentFiles {
  return {
    agent: { name: "ship", behavior: { completionType: "ship" } },
    registry: {
      version: "1.0.0",
      entryStepMapping: { ship: "plan.ship" },
      steps: {
        "plan.ship": {
          prompt: { c1: "steps", c2: "plan", c3: "ship" },
          structuredGate: {
            allowedIntents: ["next"],
            intentField: "next_action.action",
            handoffFields: ["version"],
          },
          transitions: { next: { target: "release.ship" } },
          outputSchemaRef: { file: "ship.schema.json", schema: "#/definitions/plan" },
        },
        "release.ship": {
          kind: "agent",
          agent: "release",
          args: { version: "{handoff.version}" },
          handoffFields: ["summary"],
          transitions: { next: { target: "complete.ship" } },
          ...step,
        },
        "complete.ship": {
          prompt: { c1: "steps", c2: "complete", c3: "ship" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "ship.schema.json", schema: "#/definitions/complete" },
        },
      },
    },
    prompts: {
      "steps/plan/ship/f_default.md": "Which version ships next?",
      "steps/complete/ship/f_default.md": "Report: {handoff.summary?=nothing shipped}",
    },
    schemas: {
      "ship.schema.json": {
        definitions: {
          plan: {
            ...gateSchema(["next"]),
            properties: { ...gateSchema(["next"]).properties, version: { type: "string" } },
          },
          complete: gateSchema(["complete"]),
        },
      },
    },
  };
}

/** Writes the ship and release agents under `<root>/.agent/`. */
export async function writeShipAgents(
  root: string,
  step: Record<string, unknown> = {},
): Promise<void> {
  await writeAgent(root, "release", releaseFiles());
  await writeAgent(root, "ship", shipFiles(step));
}

/** A scripted model for both agents (each call reports 10 input and 5 output tokens). */
export function shipBackend(extra: Record<string, ScriptedEntry[]> = {}): ScriptedBackend {
  const usage = { inputTokens: 10, outputTokens: 5 };
  return new ScriptedBackend({
    "plan.ship": [{ output: { version: "2.0.0", next_action: { action: "next" } }, usage }],
    "draft.release": [{ output: { plan: "tag, publish", next_action: { action: "next" } }, usage }],
    "complete.release": [{
      output: { summary: "2.0.0 shipped", next_action: { action: "complete" } },
      usage,
    }],
    "complete.ship": [{ output: { summary: "done", next_action: { action: "complete" } }, usage }],
    ...extra,
  });
}
