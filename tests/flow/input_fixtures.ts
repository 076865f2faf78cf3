/**
 * The "release" agent with an input step: draft.release (model) hands off a plan →
 * approve.release (a person answers `decision` next/abort, with a `note`) → complete.release.
 *
 * @module
 */
import { ScriptedBackend } from "../../src/llm/scripted.ts";
import { type AgentFiles, gateSchema } from "./fixtures.ts";

/** The approval step's answer schema. */
export const approveSchema = {
  type: "object",
  required: ["decision"],
  additionalProperties: false,
  properties: {
    decision: { enum: ["next", "abort"], description: "next ships it, abort stops the release" },
    note: { type: "string" },
  },
};

/** The release agent; `approve` overrides fields of the input step. */
export function releaseFiles(approve: Record<string, unknown> = {}): AgentFiles {
  return {
    agent: {
      name: "release",
      behavior: { completionType: "release" },
      parameters: { version: { type: "string", required: true } },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { release: "draft.release" },
      steps: {
        "draft.release": {
          prompt: { c1: "steps", c2: "draft", c3: "release" },
          structuredGate: {
            allowedIntents: ["next"],
            intentField: "next_action.action",
            handoffFields: ["plan"],
          },
          transitions: { next: { target: "approve.release" } },
          outputSchemaRef: { file: "release.schema.json", schema: "#/definitions/draft" },
        },
        "approve.release": {
          kind: "input",
          prompt: { c1: "steps", c2: "approve", c3: "release" },
          structuredGate: {
            allowedIntents: ["next", "abort"],
            intentField: "decision",
            handoffFields: ["note"],
          },
          transitions: { next: { target: "complete.release" } },
          outputSchemaRef: { file: "release.schema.json", schema: "#/definitions/approve" },
          ...approve,
        },
        "complete.release": {
          prompt: { c1: "steps", c2: "complete", c3: "release" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "release.schema.json", schema: "#/definitions/complete" },
        },
      },
    },
    prompts: {
      "steps/draft/release/f_default.md": "Draft the release plan of {uv-version}.",
      "steps/approve/release/f_default.md": "Ship {uv-version}? The plan: {handoff.plan}",
      "steps/complete/release/f_default.md": "Report the release ({handoff.note?=no note}).",
    },
    schemas: {
      "release.schema.json": {
        definitions: {
          draft: {
            ...gateSchema(["next"]),
            properties: { ...gateSchema(["next"]).properties, plan: { type: "string" } },
          },
          approve: approveSchema,
          complete: gateSchema(["complete"]),
        },
      },
    },
  };
}

/** A scripted model for the release agent's two model steps. */
export function releaseBackend(): ScriptedBackend {
  return new ScriptedBackend({
    "draft.release": [{ output: { plan: "tag, build, publish", next_action: { action: "next" } } }],
    "complete.release": [{ output: { summary: "shipped", next_action: { action: "complete" } } }],
  });
}
