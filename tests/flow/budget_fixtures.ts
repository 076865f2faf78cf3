/**
 * Agents for the budget tests, written as real folders: "looper" (a gate-routed step that repeats
 * until it answers complete, optionally with tools, then a closing step) and "boss", whose agent
 * step runs "worker" (three model steps) as a child run. Every model step names `gpt-4o`, priced in
 * the built-in table at $2.50 per million input tokens and $10 per million output tokens, so a call
 * reporting 100,000 input and 10,000 output tokens costs $0.35.
 *
 * @module
 */
import type { ScriptedEntry } from "../../src/llm/scripted.ts";
import { type AgentFiles, gateSchema, writeAgent } from "./fixtures.ts";

/** The model of every step: priced in the built-in table. */
export const MODEL = "gpt-4o";

/** The usage of one scripted call: $0.35 at gpt-4o's prices. */
export const CALL_USAGE = { inputTokens: 100_000, outputTokens: 10_000 };

/** The cost of one call of {@linkcode CALL_USAGE} at gpt-4o's built-in prices. */
export const CALL_USD = (100_000 * 2.5 + 10_000 * 10) / 1_000_000;

/** An answer of the looper's work step: `repeat` or `complete`, with the call usage. */
export function loopAnswer(action: "repeat" | "complete"): ScriptedEntry {
  return { output: { summary: action, next_action: { action } }, usage: CALL_USAGE };
}

/** The looper's closing answer. */
export const closingAnswer: ScriptedEntry = {
  output: { summary: "done", next_action: { action: "complete" } },
  usage: CALL_USAGE,
};

/** The looper agent; `agent` is merged into its agent.json, `work` into its work step. */
export function looperFiles(
  agent: Record<string, unknown> = {},
  work: Record<string, unknown> = {},
): AgentFiles {
  return {
    agent: { name: "looper", behavior: { completionType: "loop", model: MODEL }, ...agent },
    registry: {
      version: "1.0.0",
      entryStepMapping: { loop: "work.loop" },
      steps: {
        "work.loop": {
          prompt: { c1: "steps", c2: "work", c3: "loop" },
          structuredGate: {
            allowedIntents: ["repeat", "complete"],
            intentField: "next_action.action",
          },
          transitions: { repeat: { target: "work.loop" }, complete: { target: "complete.loop" } },
          outputSchemaRef: { file: "loop.schema.json", schema: "#/definitions/work" },
          ...work,
        },
        "complete.loop": {
          prompt: { c1: "steps", c2: "complete", c3: "loop" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "loop.schema.json", schema: "#/definitions/done" },
        },
      },
    },
    prompts: {
      "steps/work/loop/f_default.md": "Do the next piece of work (iteration {iteration}).",
      "steps/complete/loop/f_default.md": "Report.",
    },
    schemas: {
      "loop.schema.json": {
        definitions: { work: gateSchema(["repeat", "complete"]), done: gateSchema(["complete"]) },
      },
    },
  };
}

/** The worker agent: a.work → b.work → complete.work (closing), three model calls. */
export function workerFiles(agent: Record<string, unknown> = {}): AgentFiles {
  const step = (id: string, next?: string) => ({
    prompt: { c1: "steps", c2: id.split(".")[0], c3: "work" },
    structuredGate: {
      allowedIntents: [next ? "next" : "complete"],
      intentField: "next_action.action",
    },
    ...(next ? { transitions: { next: { target: next } } } : {}),
    outputSchemaRef: {
      file: "work.schema.json",
      schema: next ? "#/definitions/step" : "#/definitions/last",
    },
  });
  return {
    agent: { name: "worker", behavior: { completionType: "work", model: MODEL }, ...agent },
    registry: {
      version: "1.0.0",
      entryStepMapping: { work: "a.work" },
      steps: {
        "a.work": step("a.work", "b.work"),
        "b.work": step("b.work", "complete.work"),
        "complete.work": step("complete.work"),
      },
    },
    prompts: {
      "steps/a/work/f_default.md": "First part.",
      "steps/b/work/f_default.md": "Second part.",
      "steps/complete/work/f_default.md": "Last part.",
    },
    schemas: {
      "work.schema.json": {
        definitions: { step: gateSchema(["next"]), last: gateSchema(["complete"]) },
      },
    },
  };
}

/** The boss agent: plan.boss → delegate.boss (agent step: worker) → complete.boss. */
export function bossFiles(agent: Record<string, unknown> = {}): AgentFiles {
  return {
    agent: { name: "boss", behavior: { completionType: "boss", model: MODEL }, ...agent },
    registry: {
      version: "1.0.0",
      entryStepMapping: { boss: "plan.boss" },
      steps: {
        "plan.boss": {
          prompt: { c1: "steps", c2: "plan", c3: "boss" },
          structuredGate: { allowedIntents: ["next"], intentField: "next_action.action" },
          transitions: { next: { target: "delegate.boss" } },
          outputSchemaRef: { file: "boss.schema.json", schema: "#/definitions/step" },
        },
        "delegate.boss": {
          kind: "agent",
          agent: "worker",
          transitions: { next: { target: "complete.boss" } },
        },
        "complete.boss": {
          prompt: { c1: "steps", c2: "complete", c3: "boss" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          outputSchemaRef: { file: "boss.schema.json", schema: "#/definitions/last" },
        },
      },
    },
    prompts: {
      "steps/plan/boss/f_default.md": "Plan.",
      "steps/complete/boss/f_default.md": "Report.",
    },
    schemas: {
      "boss.schema.json": {
        definitions: { step: gateSchema(["next"]), last: gateSchema(["complete"]) },
      },
    },
  };
}

/** A scripted answer that routes `next` or `complete`, with the call usage. */
export function routed(action: "next" | "complete"): ScriptedEntry {
  return { output: { summary: action, next_action: { action } }, usage: CALL_USAGE };
}

/** Writes the boss and worker agents under `<root>/.agent/`. */
export async function writeBossAgents(
  root: string,
  boss: Record<string, unknown> = {},
  worker: Record<string, unknown> = {},
): Promise<void> {
  await writeAgent(root, "worker", workerFiles(worker));
  await writeAgent(root, "boss", bossFiles(boss));
}
