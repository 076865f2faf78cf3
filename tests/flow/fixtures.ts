/**
 * Writes real agent folders to temp dirs for flow tests.
 *
 * @module
 */
import { dirname, join } from "node:path";
import {
  ScriptedBackend,
  type ScriptedEntry,
  type ScriptedScript,
} from "../../src/llm/scripted.ts";
import type { LlmUsage } from "../../src/llm/types.ts";

/** Files of an agent: agent.json, the registry, prompts (by path under prompts/), schemas. */
export interface AgentFiles {
  agent?: Record<string, unknown>;
  registry: Record<string, unknown>;
  prompts: Record<string, string>;
  schemas?: Record<string, unknown>;
  extra?: Record<string, string>;
}

/** Writes `files` as `<root>/.agent/<name>/…` and returns the agent folder. */
export async function writeAgent(root: string, name: string, files: AgentFiles): Promise<string> {
  const dir = join(root, ".agent", name);
  const write = async (rel: string, text: string) => {
    const path = join(dir, rel);
    await Deno.mkdir(dirname(path), { recursive: true });
    await Deno.writeTextFile(path, text);
  };
  await write(
    "agent.json",
    JSON.stringify(files.agent ?? { name, behavior: { completionType: "issue" } }, null, 2),
  );
  await write("steps_registry.json", JSON.stringify(files.registry, null, 2));
  for (const [rel, text] of Object.entries(files.prompts)) await write(join("prompts", rel), text);
  for (const [rel, doc] of Object.entries(files.schemas ?? {})) {
    await write(join("schemas", rel), JSON.stringify(doc, null, 2));
  }
  for (const [rel, text] of Object.entries(files.extra ?? {})) await write(rel, text);
  return dir;
}

/** The seed 001 code-improver flow (analyze → implement → review with checks). */
export function seed001Files(): AgentFiles {
  const check = (c3: string, c2 = "step") => ({ c1: "checks", c2, c3 });
  const fmt = { result: "ok|ng", message: "string" };
  return {
    agent: {
      name: "code-improver",
      behavior: { completionType: "stepFlow", systemPromptPath: "prompts/system.md" },
      parameters: { topic: { type: "string", required: true } },
    },
    registry: {
      version: "2.0.0",
      basePath: "prompts",
      entryStep: "s_a8f3",
      steps: {
        s_a8f3: {
          id: "s_a8f3",
          name: "Code Analysis",
          prompt: { c1: "steps", c2: "phase", c3: "analyze" },
          iterations: { min: 1, max: 1 },
          check: {
            prompt: check("analyze"),
            responseFormat: fmt,
            onPass: { next: "s_b2c1" },
            onFail: { retry: true, maxRetries: 2 },
          },
        },
        s_b2c1: {
          id: "s_b2c1",
          name: "Implementation",
          prompt: { c1: "steps", c2: "phase", c3: "implement" },
          iterations: { min: 1, max: 5 },
          check: {
            prompt: check("implement"),
            responseFormat: fmt,
            onPass: { next: "s_c9d4" },
            onFail: { fallback: "s_a8f3" },
          },
        },
        s_c9d4: {
          id: "s_c9d4",
          name: "Review",
          prompt: { c1: "steps", c2: "phase", c3: "review" },
          iterations: { min: 1, max: 1 },
          check: {
            prompt: check("final", "completion"),
            responseFormat: fmt,
            onPass: { complete: true },
            onFail: { fallback: "s_b2c1" },
          },
        },
      },
    },
    prompts: {
      "system.md": "You improve code carefully. Topic: {uv-topic}",
      "steps/phase/analyze/f_default.md":
        "Analyze {uv-topic} (iteration {iteration}, step {step_id}).",
      "steps/phase/implement/f_default.md": "Implement the plan for {uv-topic}.",
      "steps/phase/review/f_default.md": "Review the changes.",
      "checks/step/analyze/f_default.md":
        'Check the analysis. Reply {"result": "ok"|"ng", "message": "…"}',
      "checks/step/implement/f_default.md": "Check: tests pass, no type errors.",
      "checks/completion/final/f_default.md": "Final check.",
    },
  };
}

const intentSchema = (stepId: string, extra: Record<string, unknown> = {}) => ({
  type: "object",
  required: ["stepId", "next_action"],
  properties: {
    stepId: { const: stepId },
    next_action: {
      type: "object",
      required: ["action"],
      properties: { action: { type: "string" }, details: { type: "object" } },
    },
    ...extra,
  },
});

/** The seed 004 issue flow (initial → continuation → complete) with its schema file. */
export function seed004Files(): AgentFiles {
  return {
    agent: {
      name: "issue-solver",
      behavior: { completionType: "issue" },
      parameters: { topic: { type: "string", required: true } },
    },
    registry: {
      version: "1.0.0",
      entryStepMapping: { issue: "initial.issue" },
      steps: {
        "initial.issue": {
          stepId: "initial.issue",
          name: "Issue Initial Prompt",
          c2: "initial",
          c3: "issue",
          edition: "default",
          outputSchemaRef: { file: "issue.schema.json", schema: "#/definitions/initial.issue" },
          structuredGate: {
            allowedIntents: ["next", "repeat", "complete"],
            intentField: "next_action.action",
            targetField: "next_action.details.target",
            fallbackIntent: "next",
            handoffFields: ["analysis.understanding", "analysis.approach", "issue"],
          },
          transitions: {
            next: { target: "continuation.issue" },
            repeat: { target: "initial.issue" },
            complete: { target: "complete.issue" },
          },
        },
        "continuation.issue": {
          stepId: "continuation.issue",
          name: "Issue Continuation Prompt",
          c2: "continuation",
          c3: "issue",
          outputSchemaRef: {
            file: "issue.schema.json",
            schema: "#/definitions/continuation.issue",
          },
          structuredGate: {
            allowedIntents: ["next", "repeat", "complete"],
            intentField: "next_action.action",
            fallbackIntent: "next",
            handoffFields: ["progress.completed_files", "progress.pending_tasks"],
          },
          transitions: {
            next: { target: "continuation.issue" },
            repeat: { target: "continuation.issue" },
            complete: { target: "complete.issue" },
          },
        },
        "complete.issue": {
          stepId: "complete.issue",
          name: "Issue Completion Report",
          c2: "complete",
          c3: "issue",
          outputSchemaRef: { file: "issue.schema.json", schema: "#/definitions/complete.issue" },
        },
      },
    },
    prompts: {
      "steps/initial/issue/f_default.md":
        '---\ntitle: initial\n---\nUnderstand {uv-topic}. Answer like {"next_action": {"action": "next"}}.',
      "steps/continuation/issue/f_default.md": "Continue (iteration {iteration}).",
      "steps/complete/issue/f_default.md": "Report on {uv-topic}.",
    },
    schemas: {
      "issue.schema.json": {
        $schema: "http://json-schema.org/draft-07/schema#",
        definitions: {
          "initial.issue": intentSchema("initial.issue", {
            analysis: { type: "object" },
            issue: { type: "string" },
          }),
          "continuation.issue": intentSchema("continuation.issue", {
            progress: { type: "object" },
          }),
          "complete.issue": {
            type: "object",
            required: ["stepId", "summary"],
            properties: { stepId: { const: "complete.issue" }, summary: { type: "string" } },
          },
        },
      },
    },
  };
}

/** A structured output for the seed 004 flow. */
export function out(stepId: string, action?: string, extra: Record<string, unknown> = {}) {
  return {
    output: { stepId, ...(action === undefined ? {} : { next_action: { action } }), ...extra },
  };
}

/** A gate-routed step's output schema whose `next_action.action` is one of `intents`. */
export const gateSchema = (intents: string[]) => ({
  type: "object",
  required: ["next_action"],
  properties: {
    summary: { type: "string" },
    next_action: {
      type: "object",
      required: ["action"],
      properties: { action: { enum: intents } },
    },
  },
});

/**
 * The "fixer" agent: work.fix (answers complete) → complete.fix, whose answer the validator
 * `marker` (`ls done.txt`, pattern "missing") checks, retried with `f_failed_<pattern>.md`.
 */
export function validatedFixerFiles(
  maxRetries: number,
  commands?: Record<string, unknown>,
): AgentFiles {
  return {
    agent: {
      name: "fixer",
      behavior: { completionType: "fix" },
      commands: commands ?? { marker: { argv: ["ls", "done.txt"] } },
    },
    registry: {
      version: "1",
      entryStep: "work.fix",
      steps: {
        "work.fix": {
          c2: "work",
          c3: "fix",
          outputSchemaRef: { file: "fix.json", schema: "#/definitions/work.fix" },
          structuredGate: { allowedIntents: ["complete"], intentField: "next_action.action" },
          transitions: { complete: { target: "complete.fix" } },
        },
        "complete.fix": {
          c2: "complete",
          c3: "fix",
          outputSchemaRef: { file: "fix.json", schema: "#/definitions/complete.fix" },
          validation: {
            validators: [{ command: "marker", pattern: "missing" }],
            retryPrompt: { c1: "steps", c2: "retry", c3: "fix" },
            maxRetries,
          },
        },
      },
    },
    prompts: {
      "steps/work/fix/f_default.md": "Fix it.",
      "steps/complete/fix/f_default.md": "Report the fix.",
      "steps/retry/fix/f_failed_missing.md":
        "RETRY ({validation.pattern} via {validation.command}): {validation.output}",
      "steps/retry/fix/f_failed.md": "RETRY: {validation.output}",
    },
    schemas: {
      "fix.json": {
        $schema: "http://json-schema.org/draft-07/schema#",
        definitions: {
          "work.fix": gateSchema(["complete"]),
          "complete.fix": { type: "object", required: ["summary"] },
        },
      },
    },
  };
}

/**
 * A scripted backend for the {@linkcode seed004Files} agent whose run takes exactly `iterations`
 * iterations: the first step repeats, then completes, then the closing step answers. The answers are
 * built once, so the backend costs the runner nothing per call (the benches measure the runner).
 */
export function seed004LoopBackend(
  iterations: number,
  options: { usage?: LlmUsage } = {},
): ScriptedBackend {
  let n = 0;
  const repeat = {
    text: "",
    structuredOutput: { stepId: "initial.issue", next_action: { action: "repeat" } },
    ...(options.usage ? { usage: options.usage } : {}),
  };
  const complete = {
    text: "",
    structuredOutput: { stepId: "initial.issue", next_action: { action: "complete" } },
  };
  const closing = { text: "", structuredOutput: { stepId: "complete.issue", summary: "done" } };
  return new ScriptedBackend((req) => {
    if (req.stepId === "complete.issue") return closing;
    return ++n < iterations - 1 ? repeat : complete;
  });
}

/**
 * A run's history entries with what differs between two runs of the same script left out: the
 * times, and of each recorded tool call its decision time, duration and the id the scripted
 * backend makes up (which counts the turns its process answered).
 */
export function comparableHistory(entries: readonly unknown[]): Record<string, unknown>[] {
  return entries.map((e) => {
    const { startedAt: _at, durationMs: _ms, ...rest } = e as Record<string, unknown>;
    if (Array.isArray(rest.toolCalls)) {
      rest.toolCalls = rest.toolCalls.map((c: Record<string, unknown>) => {
        const { decidedAt: _d, durationMs: _t, callId: _id, ...call } = c;
        return call;
      });
    }
    return rest;
  });
}

/** The scripted answer of a check that passes. */
const PASSING_CHECK = { output: { result: "ok", message: "fine" } };

/**
 * A script for the seed001 agent ({@linkcode seed001Files}): the given entries of its three steps
 * (a step not given answers "Done."), and every check passing.
 */
export function seed001Script(
  steps: { s_a8f3?: ScriptedEntry[]; s_b2c1?: ScriptedEntry[]; s_c9d4?: ScriptedEntry[] },
): ScriptedScript {
  return {
    s_a8f3: steps.s_a8f3 ?? ["Done."],
    "s_a8f3#check": [PASSING_CHECK],
    s_b2c1: steps.s_b2c1 ?? ["Done."],
    "s_b2c1#check": [PASSING_CHECK],
    s_c9d4: steps.s_c9d4 ?? ["Done."],
    "s_c9d4#check": [PASSING_CHECK],
  };
}
