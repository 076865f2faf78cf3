/**
 * A fan-out pair of agents: "fleet" lists files (list.files hands off `files`), fans the
 * "reviewer" agent out over them (review.each, an agent step with `forEach`), and reports
 * (complete.fleet). The reviewer reviews one path (`{uv-path}`) and completes with a `verdict` —
 * or, in its `confirm` form, asks a person first (an input step), or, in its `tools` form, runs a
 * Bash command for its file first.
 *
 * @module
 */
import type { LlmRequest, LlmUsage } from "../../src/llm/types.ts";
import type { ScriptedEntry } from "../../src/llm/scripted.ts";
import { type AgentFiles, gateSchema, writeAgent } from "./fixtures.ts";

/** How the reviewer reviews: answers at once, asks a person first, or runs a tool first. */
export type ReviewerForm = "plain" | "confirm" | "tools";

/** The reviewer agent. */
export function reviewerFiles(form: ReviewerForm = "plain"): AgentFiles {
  const reviewSchema = {
    ...gateSchema(["complete", "next"]),
    properties: {
      ...gateSchema(["complete", "next"]).properties,
      verdict: { type: "string" },
      lines: { type: "number" },
    },
  };
  // The plain and tools forms answer once: their entry is the closing step.
  const first = form === "confirm" ? "review.file" : "complete.review";
  const steps: Record<string, unknown> = {
    [first]: {
      prompt: { c1: "steps", c2: "review", c3: "file" },
      structuredGate: {
        allowedIntents: form === "confirm" ? ["next"] : ["complete"],
        intentField: "next_action.action",
        handoffFields: ["verdict"],
      },
      ...(form === "confirm" ? { transitions: { next: { target: "confirm.file" } } } : {}),
      ...(form === "tools" ? { allowedTools: ["Bash"] } : {}),
      outputSchemaRef: { file: "review.schema.json", schema: "#/definitions/review" },
    },
  };
  if (form === "confirm") {
    steps["confirm.file"] = {
      kind: "input",
      prompt: { c1: "steps", c2: "confirm", c3: "file" },
      structuredGate: {
        allowedIntents: ["next"],
        intentField: "decision",
        handoffFields: ["note"],
      },
      transitions: { next: { target: "complete.file" } },
      outputSchemaRef: { file: "review.schema.json", schema: "#/definitions/confirm" },
    };
    steps["complete.file"] = {
      prompt: { c1: "steps", c2: "complete", c3: "file" },
      structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
      outputSchemaRef: { file: "review.schema.json", schema: "#/definitions/review" },
    };
  }
  return {
    agent: {
      name: "reviewer",
      behavior: {
        completionType: "review",
        ...(form === "tools"
          ? { allowedTools: ["Bash"], permissionMode: "bypassPermissions" }
          : {}),
      },
      parameters: { path: { type: "string", required: true } },
    },
    registry: { version: "1.0.0", entryStepMapping: { review: first }, steps },
    prompts: {
      "steps/review/file/f_default.md": "Review the file {uv-path}.",
      "steps/confirm/file/f_default.md": "Publish the review of {uv-path}: {handoff.verdict}?",
      "steps/complete/file/f_default.md": "Close the review of {uv-path} ({handoff.note?}).",
    },
    schemas: {
      "review.schema.json": {
        definitions: {
          review: reviewSchema,
          confirm: {
            type: "object",
            required: ["decision"],
            additionalProperties: false,
            properties: { decision: { enum: ["next"] }, note: { type: "string" } },
          },
        },
      },
    },
  };
}

/** The fleet agent; `step` overrides fields of its fan-out step. */
export function fleetFiles(step: Record<string, unknown> = {}): AgentFiles {
  return {
    agent: {
      name: "fleet",
      behavior: { completionType: "fleet" },
      parameters: { paths: { type: "array", description: "files to review" } },
      limits: { maxTotalIterations: 20 },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { fleet: "list.files" },
      steps: {
        "list.files": {
          prompt: { c1: "steps", c2: "list", c3: "files" },
          structuredGate: {
            allowedIntents: ["next"],
            intentField: "next_action.action",
            handoffFields: ["files"],
          },
          transitions: { next: { target: "review.each" } },
          outputSchemaRef: { file: "fleet.schema.json", schema: "#/definitions/list" },
        },
        "review.each": {
          kind: "agent",
          agent: "reviewer",
          forEach: "{handoff.files}",
          args: { path: "{item}" },
          concurrency: 4,
          onItemError: "continue",
          handoffFields: ["verdict"],
          transitions: { next: { target: "complete.fleet" } },
          ...step,
        },
        "complete.fleet": {
          prompt: { c1: "steps", c2: "complete", c3: "fleet" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "fleet.schema.json", schema: "#/definitions/complete" },
        },
      },
    },
    prompts: {
      "steps/list/files/f_default.md": "Which files need a review?",
      "steps/complete/fleet/f_default.md": "Report: {handoff.counts}",
    },
    schemas: {
      "fleet.schema.json": {
        definitions: {
          list: {
            ...gateSchema(["next"]),
            properties: { ...gateSchema(["next"]).properties, files: { type: "array" } },
          },
          complete: gateSchema(["complete"]),
        },
      },
    },
  };
}

/** Writes the fleet and reviewer agents under `<root>/.agent/`. */
export async function writeFleetAgents(
  root: string,
  step: Record<string, unknown> = {},
  form: ReviewerForm = "plain",
): Promise<void> {
  await writeAgent(root, "reviewer", reviewerFiles(form));
  await writeAgent(root, "fleet", fleetFiles(step));
}

/** The path a reviewer's prompt names. */
export function reviewedPath(request: LlmRequest): string {
  return /\{?file (\S+?)\.?$/m.exec(request.prompt)?.[1] ??
    /review of (\S+?)[:( ]/.exec(request.prompt)?.[1] ?? "?";
}

/** Each call reports 10 input and 5 output tokens. */
export const USAGE: LlmUsage = { inputTokens: 10, outputTokens: 5 };

/** Options of {@linkcode fleetResponder}. */
export interface FleetModel {
  /** What list.files hands off. */
  files: unknown[];
  /** How long a reviewer's call takes (ms), per path; default 0. */
  delayMs?: (path: string) => number;
  /** Paths whose review call fails (a backend error). */
  failing?: (path: string) => boolean;
}

/**
 * A model for both agents that answers by the request, so children running at once each get their
 * own answer: list.files hands off `files`, a review says `ok <path>`, the report completes.
 */
export function fleetResponder(model: FleetModel): (req: LlmRequest) => ScriptedEntry {
  return (req) => {
    if (req.stepId === "list.files") {
      return { output: { files: model.files, next_action: { action: "next" } }, usage: USAGE };
    }
    if (req.stepId === "review.file" || req.stepId === "complete.review") {
      const path = reviewedPath(req);
      if (model.failing?.(path)) {
        return { error: `cannot review ${path}`, delayMs: model.delayMs?.(path) };
      }
      // review.file is the confirm form's first step (it goes on to ask a person).
      const action = req.stepId === "review.file" ? "next" : "complete";
      return {
        output: { verdict: `ok ${path}`, next_action: { action } },
        usage: USAGE,
        delayMs: model.delayMs?.(path) ?? 0,
      };
    }
    if (req.stepId === "complete.file") {
      return {
        output: { verdict: `published ${reviewedPath(req)}`, next_action: { action: "complete" } },
        usage: USAGE,
      };
    }
    return { output: { summary: "reported", next_action: { action: "complete" } }, usage: USAGE };
  };
}
