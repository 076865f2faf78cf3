/**
 * Tool-using runs for the dashboard tests: the `tool-fixer` example agent copied into a temp
 * project, driven by the real runner with a scripted model that calls the real tools (its
 * `demo.script.yaml`, or a script of the test's own) into a real store.
 *
 * @module
 */
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { parse } from "yaml";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { AgentDefinition } from "../../src/definition/types.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { StepFlowResult } from "../../src/flow/types.ts";
import {
  ScriptedBackend,
  type ScriptedEntry,
  type ScriptedScript,
} from "../../src/llm/scripted.ts";
import { runStoreFor } from "../../src/store/location.ts";
import type { RunStore } from "../../src/store/types.ts";
import { REPO_ROOT } from "../definition/fixtures.ts";

/** The example agent's own script: Write, Grep, Read; then Edit, a refused `rm`, a grep; Read. */
export const DEMO_SCRIPT = parse(
  await Deno.readTextFile(join(REPO_ROOT, ".agent", "tool-fixer", "demo.script.yaml")),
) as ScriptedScript;

/** A temp project holding the `tool-fixer` agent and its file store. */
export interface ToolProject {
  /** The project folder (the runs' `cwd`). */
  root: string;
  /** The agent. */
  def: AgentDefinition;
  /** Its file store (`tmp/logs/agents/tool-fixer`). */
  store: RunStore;
}

/** Copies the agent into a fresh temp project. */
export async function toolProject(): Promise<ToolProject> {
  const root = await Deno.makeTempDir({ prefix: "stepflow-ui-tools-" });
  await cp(join(REPO_ROOT, ".agent", "tool-fixer"), join(root, ".agent", "tool-fixer"), {
    recursive: true,
  });
  const def = await loadAgentDefinition("tool-fixer", { cwd: root });
  return { root, def, store: runStoreFor(def, { cwd: root, durability: "process" }) };
}

/** How {@linkcode runTools} runs. */
export interface ToolRunOptions {
  /** Run id. */
  runId: string;
  /** The model's answers per step (`<stepId>`, `<stepId>#check`); default {@linkcode DEMO_SCRIPT}. */
  script?: ScriptedScript;
  /** The store to record into (default the project's file store). */
  store?: RunStore;
  /** Awaited before each model turn is answered (`turn` counts from 1 over the whole run). */
  beforeAnswer?: (turn: number) => void | Promise<void>;
}

/**
 * Runs the agent through the real runner: each model turn is the script's next entry for its
 * step (check calls read `<stepId>#check`); the tools really run in the project.
 */
export function runTools(project: ToolProject, options: ToolRunOptions): Promise<StepFlowResult> {
  const script = options.script ?? DEMO_SCRIPT;
  const used = new Map<string, number>();
  let turns = 0;
  const backend = new ScriptedBackend(async (req): Promise<ScriptedEntry> => {
    await options.beforeAnswer?.(++turns);
    const key = req.kind === "check" ? `${req.stepId}#check` : req.stepId;
    const index = used.get(key) ?? 0;
    used.set(key, index + 1);
    const entry = script[key]?.[index];
    if (entry === undefined) {
      throw new Error(`the test's script has no answer ${index + 1} for ${key}`);
    }
    return entry;
  });
  return new StepFlowRunner(project.def, { backend, store: options.store ?? project.store }).run({
    args: { topic: "the greeting misses a space" },
    cwd: project.root,
    runId: options.runId,
  });
}

/** `count` tool calls of one step, asked `perTurn` at a time (cheap Globs that find nothing). */
export function manyCalls(count: number, perTurn: number): ScriptedEntry[] {
  const turns: ScriptedEntry[] = [];
  for (let done = 0; done < count; done += perTurn) {
    const n = Math.min(perTurn, count - done);
    turns.push({
      toolCalls: Array.from({ length: n }, (_, i) => ({
        name: "Glob",
        arguments: { pattern: `nothing-${done + i + 1}/*.none` },
      })),
    });
  }
  return turns;
}
