/**
 * Real runs for the dashboard tests: the seed 004 agent in a temp project, driven by the real
 * runner with a scripted backend into the agent's real file store.
 *
 * @module
 */
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { AgentDefinition } from "../../src/definition/types.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { StepFlowResult } from "../../src/flow/types.ts";
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import type { FileRunStore } from "../../src/store/file.ts";
import { runStoreFor } from "../../src/store/location.ts";
import type { RunStore } from "../../src/store/types.ts";
import { out, seed004Files, writeAgent } from "../flow/fixtures.ts";

/** A temp project with the seed 004 `issue-solver` agent and its file store. */
export interface DemoProject {
  /** The project folder (holds `.agent/` and `tmp/logs/agents/`). */
  root: string;
  /** The agent. */
  def: AgentDefinition;
  /** Its run store. */
  store: FileRunStore;
}

/** Writes the project. */
export async function demoProject(root?: string): Promise<DemoProject> {
  root ??= await Deno.makeTempDir({ prefix: "stepflow-ui-" });
  const files = seed004Files();
  files.agent = { ...files.agent, limits: { maxTotalIterations: 5000 } };
  await writeAgent(root, "issue-solver", files);
  const def = await loadAgentDefinition("issue-solver", { cwd: root });
  return { root, def, store: runStoreFor(def, { cwd: root, durability: "process" }) };
}

/** How a scripted run goes. */
export interface FlowScript {
  /** Iterations of `continuation.issue` before it completes (default 2). */
  continuations?: number;
  /** Each backend call waits this long (a slow model, for the live view). */
  delayMs?: number;
  /** The `issue` handoff value of the first step (untrusted model output). */
  issue?: string;
  /** Run id. */
  runId?: string;
  /** The topic. */
  topic?: string;
  /** The n-th `continuation.issue` call fails (a backend error: the run ends failed). */
  failAt?: number;
}

/** Runs the agent to completion through the real runner; the run is recorded in the store. */
export function runFlow(
  project: Pick<DemoProject, "root" | "def"> & { store: RunStore },
  script: FlowScript = {},
): Promise<StepFlowResult> {
  const continuations = script.continuations ?? 2;
  let seen = 0;
  const usage = { inputTokens: 1200, outputTokens: 310 };
  const backend = new ScriptedBackend((req): ScriptedEntry => {
    const delay = script.delayMs ? { delayMs: script.delayMs } : {};
    if (req.stepId === "initial.issue") {
      return {
        ...out("initial.issue", "next", {
          analysis: {
            understanding: "the login test races the session clock",
            approach: "inject a clock",
          },
          issue: script.issue ?? "#42 flaky login",
        }),
        usage,
        costUsd: 0.0042,
        ...delay,
      };
    }
    if (req.stepId === "continuation.issue") {
      seen++;
      if (seen === script.failAt) return { error: "the model endpoint answered 529 overloaded" };
      const done = seen >= continuations;
      return {
        ...out("continuation.issue", done ? "complete" : "next", {
          progress: {
            completed_files: [`src/file_${seen}.ts`],
            pending_tasks: done ? [] : ["more"],
          },
        }),
        usage,
        costUsd: 0.0042,
        ...delay,
      };
    }
    return {
      output: { stepId: "complete.issue", summary: "Fixed the flaky login test." },
      usage,
      costUsd: 0.0042,
      ...delay,
    };
  });
  return new StepFlowRunner(project.def, { backend, store: project.store }).run({
    args: { topic: script.topic ?? "Fix the flaky login test" },
    cwd: project.root,
    ...(script.runId ? { runId: script.runId } : {}),
  });
}

/** The rest of the demo run, as a `--script` file: from the first step to the summary. */
export const FINISH = {
  "initial.issue": [{
    output: {
      stepId: "initial.issue",
      next_action: { action: "next" },
      analysis: { understanding: "u", approach: "a" },
      issue: "#42",
    },
  }],
  "continuation.issue": [{
    output: {
      stepId: "continuation.issue",
      next_action: { action: "complete" },
      progress: { completed_files: ["src/last.ts"], pending_tasks: [] },
    },
  }],
  "complete.issue": [{ output: { stepId: "complete.issue", summary: "Finished from the page." } }],
};
