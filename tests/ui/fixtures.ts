/**
 * Real runs for the dashboard tests: the seed 004 agent in a temp project, driven by the real
 * runner with a scripted backend into the agent's real file store.
 *
 * @module
 */
import { uiMain } from "../../src/cli/ui.ts";
import { loadAgentDefinition } from "../../src/definition/load.ts";
import type { AgentDefinition } from "../../src/definition/types.ts";
import { StepFlowRunner } from "../../src/flow/runner.ts";
import type { StepFlowResult } from "../../src/flow/types.ts";
import { ScriptedBackend, type ScriptedEntry } from "../../src/llm/scripted.ts";
import type { LlmUsage } from "../../src/llm/types.ts";
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
  /** The run's group (`RunOptions.group`). */
  group?: string;
  /** Redrive this run instead of starting one. */
  redrive?: string;
  /** The topic. */
  topic?: string;
  /** The n-th `continuation.issue` call fails (a backend error: the run ends failed). */
  failAt?: number;
  /**
   * Awaited before each backend call is answered (`call` counts from 1; the run's `running`
   * checkpoint is written before call 1): a test learns the run got there, or holds it there.
   */
  beforeAnswer?: (call: number) => void | Promise<void>;
  /** How often the runner asks the store for a cancel request (default: the runner's 1 s). */
  cancelPollMs?: number;
  /** The usage each call reports (default 1,200 in, 310 out). */
  usage?: LlmUsage;
}

/**
 * A run held before one backend call ({@linkcode holdAt}). Disposing it releases the run, so a
 * check that fails while holding it leaves no run waiting forever.
 */
export interface Hold extends Disposable {
  /** Pass as the script's `beforeAnswer`. */
  beforeAnswer: (call: number) => Promise<void>;
  /** Resolves when the run reaches the call (it then waits for {@linkcode Hold.release}). */
  reached: Promise<void>;
  /** Lets the run go on. */
  release: () => void;
}

/** Holds a run before its `call`-th backend call until released: the test's event, not a timer. */
export function holdAt(call: number): Hold {
  const reached = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  return {
    beforeAnswer: async (n) => {
      if (n !== call) return;
      reached.resolve();
      await released.promise;
    },
    reached: reached.promise,
    release: () => released.resolve(),
    [Symbol.dispose]: () => released.resolve(),
  };
}

/** Resolves when the run reaches its `call`-th backend call, without holding it there. */
export function reachingCall(call: number): Pick<Hold, "beforeAnswer" | "reached"> {
  using hold = holdAt(call);
  return { beforeAnswer: hold.beforeAnswer, reached: hold.reached };
}

/** Runs the agent to completion through the real runner; the run is recorded in the store. */
export function runFlow(
  project: Pick<DemoProject, "root" | "def"> & { store: RunStore },
  script: FlowScript = {},
): Promise<StepFlowResult> {
  const continuations = script.continuations ?? 2;
  let seen = 0;
  let calls = 0;
  const usage = script.usage ?? { inputTokens: 1200, outputTokens: 310 };
  const backend = new ScriptedBackend(async (req): Promise<ScriptedEntry> => {
    await script.beforeAnswer?.(++calls);
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
  const runner = new StepFlowRunner(project.def, {
    backend,
    store: project.store,
    ...(script.cancelPollMs ? { cancelPollMs: script.cancelPollMs } : {}),
  });
  return runner.run({
    args: { topic: script.topic ?? "Fix the flaky login test" },
    cwd: project.root,
    ...(script.runId ? { runId: script.runId } : {}),
    ...(script.group !== undefined ? { group: script.group } : {}),
    ...(script.redrive ? { redrive: script.redrive } : {}),
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

/** What `deno task ui` printed and its exit code. */
export interface UiOutcome {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `deno task ui ARGS` in-process through `uiMain` (the process itself has its smoke test in
 * server_test.ts): from `cwd`, with only `env`, stopped as soon as it listens.
 */
export async function runUi(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<UiOutcome> {
  let stdout = "";
  let stderr = "";
  const stop = new AbortController();
  const code = await uiMain(args, {
    cwd,
    env,
    signal: stop.signal,
    stdout: { write: (t) => void (stdout += t) },
    stderr: { write: (t) => void (stderr += t) },
    onListen: () => stop.abort(),
  });
  return { code, stdout, stderr };
}
