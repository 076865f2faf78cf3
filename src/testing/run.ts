/**
 * {@linkcode runAgentForTest}: one run of an agent for a test — in a temporary run store, on a
 * script, a recording or any backend — returning the result, the history, the events, the backend
 * calls and the run log.
 *
 * @module
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadAgentDefinition } from "../definition/load.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { EVENT_NAMES, type ExecutorEvents } from "../events/types.ts";
import { StepFlowRunner } from "../flow/runner.ts";
import type { HistoryEntry, StepFlowResult, StepFlowRunnerOptions } from "../flow/types.ts";
import { writeFileAtomic } from "../atomic_write.ts";
import { ReplayBackend, type ReplayDrift, type ReplayMode } from "../llm/replay.ts";
import { type RecordedCall, recordedCalls, replayFromLog, replayText } from "../llm/replay_file.ts";
import { loadScriptFile } from "../llm/script_file.ts";
import { ScriptedBackend, type ScriptedEntry, type ScriptedScript } from "../llm/scripted.ts";
import { supportsToolTurns } from "../llm/tool_turn.ts";
import type { LlmBackend } from "../llm/types.ts";
import { FileRunStore } from "../store/file.ts";
import type { RunLogEntry } from "../store/types.ts";
import { childRunLogs } from "../flow/child_logs.ts";
import { answersPermissions, answerWaits, type ScriptAnswer, scriptAnswers } from "./answers.ts";

/** One event the run emitted, in order. */
export interface RecordedEvent {
  /** The handler's name (`onStepStart`, `onStepEnd`, …). */
  name: string;
  /** The step, for step events. */
  stepId?: string;
  /** The handler's arguments after the step info (result, error, attempt, …). */
  args: unknown[];
}

/** One backend call of the run as the runner logged it. */
export interface TestCall {
  /** The step. */
  stepId: string;
  /** `step`, `check` or `reask`. */
  kind: string;
  /** The run's iteration. */
  iteration: number;
  /** The prompt sent. */
  prompt: string;
  /** The system prompt sent, when the agent has one. */
  system?: string;
  /** The answer's text (absent when the call failed). */
  text?: string;
  /** The answer's structured output. */
  output?: unknown;
  /**
   * The tool calls the model asked for during the call, in order over its turns (absent for a
   * call that did not go through the tool loop).
   */
  toolCalls?: { id: string; name: string; arguments: unknown }[];
  /** The error the call failed with. */
  error?: string;
}

/** One tool call of the run, as its `tool_call` log line records it. */
export interface TestToolCall {
  /** The step that made it. */
  stepId: string;
  /** The call's id (the model's, or one made up when it sent none). */
  id: string;
  /** The tool, as the model named it. */
  tool: string;
  /**
   * The arguments: those the tool ran with, else (an invalid call) those the model sent, as
   * recorded in the call's turns; absent when neither is known.
   */
  args?: unknown;
  /** `allow` (it ran), `deny` (refused) or `invalid` (unknown tool, bad arguments). */
  decision: string;
  /** True when the model got an error back. */
  isError: boolean;
  /** The result or error text sent back (an excerpt). */
  result: string;
}

/** Options of {@linkcode runAgentForTest}. */
export interface TestRunOptions {
  /** The agent: a name under `<cwd>/.agent/`, a folder path, or a loaded definition. */
  agent: string | URL | AgentDefinition;
  /**
   * The answers: a script or recording file (path or URL, YAML/JSON), a script map, a list of
   * answers, or any backend. A recording is checked against the prompts (see `replay`).
   */
  script: string | URL | ScriptedScript | ScriptedEntry[] | LlmBackend;
  /** How a recording treats a changed prompt: `strict` (default) or `lenient`. */
  replay?: ReplayMode;
  /** The agent's parameters (`{uv-<name>}`). */
  args?: Record<string, unknown>;
  /** Text for `{input_text}`, as if piped on stdin. */
  stdin?: string;
  /** Where `.agent/` and relative paths are found, and the run's working directory (default: cwd). */
  cwd?: string;
  /** Environment whose credentials are redacted in recordings (default: the process's, if readable). */
  env?: Record<string, string | undefined>;
  /** Write the run's replay file here afterwards (as `stepflow run AGENT --record FILE`). */
  record?: string | URL;
  /**
   * The answers to the run's waits, in the order it waits — an input step's answer, a tool call's
   * permission (`{ value: { decision: "allow" } }`), a child run's question — each
   * `{ value, step?, tool?, by? }`. Default: the `_answers` of the script or recording (a recording
   * holds what the person answered). A wait with no answer left ends the run `waiting`.
   */
  answers?: readonly ScriptAnswer[];
  /** More runner options (`allowRun`, `skipValidators`, `maxTotalIterations`, …). */
  runner?: Omit<StepFlowRunnerOptions, "backend" | "store" | "events">;
}

/** What {@linkcode runAgentForTest} returns. */
export interface TestRun {
  /** The agent's name. */
  agent: string;
  /** The run's result. */
  result: StepFlowResult;
  /** `result.state.history`. */
  history: HistoryEntry[];
  /** Every event, in order. */
  events: RecordedEvent[];
  /** Every backend call, in order (from the run log). */
  calls: TestCall[];
  /**
   * Every tool call the run handled, in order (its `tool_call` log lines): what the model asked
   * for, what was decided and what it got back. `undefined` when the backend runs its tools itself
   * and reports none (a backend without tool turns that does not report its calls, as `claude-code`
   * does): then nobody can tell.
   */
  toolCalls: TestToolCall[] | undefined;
  /** The run log. */
  log: RunLogEntry[];
  /** Prompt drifts a lenient replay accepted (a strict replay fails the run instead). */
  drifts: ReplayDrift[];
  /** Warnings the runner gave (and one when answers were left unused). */
  warnings: string[];
  /** How many of the answers ({@linkcode TestRunOptions.answers}, or the script's) were given. */
  answered: number;
}

/**
 * Runs an agent for a test in a temporary run store (removed afterwards), on scripted or recorded
 * answers. It never touches the agent's own run store.
 *
 * @example
 * ```ts
 * import { runAgentForTest } from "./run.ts";
 * const run = await runAgentForTest({
 *   agent: "haiku",
 *   script: ".agent/haiku/demo.script.yaml",
 *   args: { topic: "autumn" },
 * });
 * console.log(run.history.map((h) => h.stepId)); // ["draft.haiku", "draft.haiku"]
 * ```
 */
export async function runAgentForTest(options: TestRunOptions): Promise<TestRun> {
  const cwd = options.cwd ?? Deno.cwd();
  const env = options.env ?? readEnv();
  const definition = typeof options.agent === "object" && !(options.agent instanceof URL)
    ? options.agent
    : await loadAgentDefinition(
      options.agent instanceof URL ? fileURLToPath(options.agent) : options.agent,
      { cwd },
    );
  const warnings: string[] = [];
  const backend = await backendOf(options, cwd, env, (m) => warnings.push(m));
  const events: RecordedEvent[] = [];
  const storeDir = await Deno.makeTempDir({ prefix: "stepflow-test-run-" });
  try {
    const store = new FileRunStore(storeDir, { durability: "process" });
    const answers = options.answers ?? scriptAnswers(backend);
    const runner = new StepFlowRunner(definition, {
      onWarning: (m) => warnings.push(m),
      // A tool call's recorded permission is answered: the call waits for it instead of being refused.
      ...(answersPermissions(answers) ? { permissionAsks: "wait" as const } : {}),
      ...options.runner,
      backend,
      store,
      events: recorder(events),
    });
    const first = await runner.run({
      args: options.args ?? {},
      cwd,
      ...(options.stdin !== undefined ? { inputText: options.stdin } : {}),
    });
    const { result, used } = await answerWaits(runner, first, answers, {
      by: "test",
      source: options.answers ? "the test's answers" : scriptSource(options.script),
    });
    if (used < answers.length && result.completionReason !== "waiting") {
      warnings.push(
        `${
          answers.length - used
        } of the ${answers.length} answers were not used: the run ended ${result.completionReason} first.`,
      );
    }
    const log = await store.readLog(result.runId);
    const calls = recordedCalls(log).map(testCall);
    if (options.record !== undefined) {
      const children = await childRunLogs(store, definition, log);
      const doc = replayFromLog(log, {
        agent: definition.name,
        runId: result.runId,
        env,
        children,
      });
      const file = pathOf(options.record, cwd);
      await writeFileAtomic(file, replayText(doc, file));
    }
    return {
      agent: definition.name,
      result,
      history: result.state.history,
      events,
      calls,
      toolCalls: runToolCalls(backend, log, calls),
      log,
      drifts: backend instanceof ReplayBackend ? backend.drifts : [],
      warnings,
      answered: used,
    };
  } finally {
    await Deno.remove(storeDir, { recursive: true }).catch(() => {});
  }
}

async function backendOf(
  options: TestRunOptions,
  cwd: string,
  env: Record<string, string | undefined>,
  warn: (m: string) => void,
): Promise<LlmBackend> {
  const script = options.script;
  if (typeof script === "string" || script instanceof URL) {
    return await loadScriptFile(pathOf(script, cwd), {
      env,
      onWarning: warn,
      ...(options.replay ? { replay: options.replay } : {}),
    });
  }
  if (Array.isArray(script)) return new ScriptedBackend(script);
  if (typeof (script as LlmBackend).complete === "function") return script as LlmBackend;
  return new ScriptedBackend(script as ScriptedScript);
}

/** Where a test's script came from, for messages. */
function scriptSource(script: TestRunOptions["script"]): string {
  if (script instanceof URL) return fileURLToPath(script);
  return typeof script === "string" ? script : "the script";
}

function pathOf(target: string | URL, cwd: string): string {
  return target instanceof URL ? fileURLToPath(target) : resolve(cwd, target);
}

function readEnv(): Record<string, string | undefined> {
  try {
    return Deno.env.toObject();
  } catch {
    return {}; // without --allow-env there is nothing to redact with
  }
}

/** Event handlers that push every event into `events`. */
function recorder(events: RecordedEvent[]): ExecutorEvents {
  // Every event but the streamed text: listening to it makes backends stream, which a test run
  // should not change.
  const names = EVENT_NAMES.filter((name) => name !== "onStepText");
  const handlers: Record<string, (...args: unknown[]) => void> = {};
  for (const name of names) {
    handlers[name] = (first: unknown, ...rest: unknown[]) => {
      const stepId = name.startsWith("onStep") || name === "onToolCall"
        ? (first as { stepId?: string } | undefined)?.stepId
        : undefined;
      events.push({ name, ...(stepId !== undefined ? { stepId } : {}), args: rest });
    };
  }
  return handlers as ExecutorEvents;
}

/** A backend call of the run as a test reads it. */
export function testCall(call: RecordedCall): TestCall {
  const out: TestCall = {
    stepId: call.stepId,
    kind: call.kind,
    iteration: call.iteration,
    prompt: call.prompt,
  };
  if (call.system !== undefined) out.system = call.system;
  if (call.error !== undefined) out.error = call.error;
  if (call.answer) {
    out.text = call.answer.text;
    if (call.answer.output !== undefined) out.output = call.answer.output;
  }
  if (Array.isArray(call.turns)) {
    out.toolCalls = call.turns.flatMap((t) => Array.isArray(t?.toolCalls) ? t.toolCalls : []);
  }
  return out;
}

/**
 * The tool calls of a run on `backend` ({@linkcode TestRun.toolCalls}): its `tool_call` log lines,
 * or `undefined` when the backend runs its tools itself and reports none.
 */
export function runToolCalls(
  backend: LlmBackend,
  log: readonly RunLogEntry[],
  calls: readonly TestCall[],
): TestToolCall[] | undefined {
  return supportsToolTurns(backend) || backend.reportsToolCalls === true
    ? testToolCalls(log, calls)
    : undefined;
}

/**
 * The run's tool calls from its `tool_call` log lines. The line keeps an excerpt of the arguments;
 * when that excerpt is cut (or the call was invalid) the arguments come from the model's recorded
 * turns, by call id.
 */
function testToolCalls(
  log: readonly RunLogEntry[],
  calls: readonly TestCall[],
): TestToolCall[] {
  const asked = new Map<string, unknown>();
  for (const call of calls) {
    for (const c of call.toolCalls ?? []) asked.set(`${call.stepId}\0${c.id}`, c.arguments);
  }
  const out: TestToolCall[] = [];
  for (const line of log) {
    if (line.type !== "tool_call") continue;
    const stepId = String(line.stepId ?? "");
    const id = String(line.callId ?? "");
    const found: TestToolCall = {
      stepId,
      id,
      tool: String(line.tool ?? ""),
      decision: String(line.decision ?? ""),
      isError: line.isError === true,
      result: String(line.result ?? ""),
    };
    const args = parsedArgs(line.args) ?? parsedArgs(asked.get(`${stepId}\0${id}`));
    if (args !== undefined) found.args = args;
    out.push(found);
  }
  return out;
}

/** Arguments as an object: given as one, or as JSON text that parses (a cut excerpt does not). */
function parsedArgs(value: unknown): unknown {
  if (typeof value !== "string") return value ?? undefined;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}
