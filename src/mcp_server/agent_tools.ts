/**
 * The tools `deno task mcp` serves, independent of the MCP wire: one `run_<agent>` tool per agent
 * under the agent root (its input schema from agent.json `parameters`), `answer_run` (answers a
 * run that waits at an input step and continues it), `list_runs` and `show_run`. Every call answers a {@linkcode ToolAnswer}; every problem — an unknown tool or agent,
 * bad arguments, a backend that cannot start — is thrown as a `StepflowError` that the server
 * turns into an MCP tool error, so a client's mistake never stops the server.
 *
 * A run that stops at an input step is not an error: its answer says it waits, asks its question and
 * names the run id to give `answer_run`.
 *
 * @module
 */
import { resolve } from "node:path";
import { listAgents, loadAgentDefinition } from "../definition/load.ts";
import type { AgentDefinition } from "../definition/types.ts";
import { closestMatch } from "../definition/suggest.ts";
import { boundDepth } from "../engine/ask_structured.ts";
import { StepflowError } from "../errors.ts";
import { createProgressLines, formatUsage, noteText } from "../events/progress_lines.ts";
import type { PendingInput } from "../flow/input_request.ts";
import { type AnswerGuide, answerGuide, answerHint, waitingView } from "./waiting_answer.ts";
import { StepFlowRunner } from "../flow/runner.ts";
import type { StepFlowResult } from "../flow/types.ts";
import { DEFAULT_BACKEND } from "../llm/agent_backend.ts";
import { defaultModelOf } from "../llm/model_chain.ts";
import { type BackendChoice, mergeBackendChoice, recordableChoice } from "../llm/backend_choice.ts";
import { createBackend } from "../llm/factory.ts";
import { formatRunHistory, formatRunList, historyFromLog } from "../store/format.ts";
import { asNextStep, commandLine, type CommandRenderer, commandRenderer } from "../invocation.ts";
import { FileRunStore } from "../store/file.ts";
import { PostgresRunStore } from "../store/postgres.ts";
import { shownStatus } from "../store/run_status.ts";
import { spendView } from "../store/spend_view.ts";
import { costOrNull } from "../token_counts.ts";
import { isValidRunId } from "../store/run_id.ts";
import { selectRunStore } from "../store/select.ts";
import type { RunCheckpoint, RunSummary } from "../store/types.ts";
import {
  checkAnswerValue,
  checkToolArguments,
  parametersInputSchema,
  type ToolInputSchema,
} from "./tool_schema.ts";

/** Prefix of the tool that runs an agent: `run_haiku` runs agent `haiku`. */
export const RUN_TOOL_PREFIX = "run_";

/** Agent names usable in a tool name (MCP tool names: letters, digits, `_`, `-`, `.`). */
const TOOL_NAME_AGENT = /^[A-Za-z0-9_.-]{1,120}$/;

/** Nesting kept in structured answers (a stored value deeper than this is elided). */
const ANSWER_DEPTH = 1_000;

/** How the server runs agents: the same choices `run-agent` takes as flags. */
export interface AgentToolsOptions {
  /** The user's directory: `.agent/` and `--script` resolve there; runs start there. */
  cwd: string;
  /** Environment (credentials, `STEPFLOW_STORE`). */
  env: Record<string, string | undefined>;
  /**
   * The backend flags (`--backend`, `--script` resolved against `cwd`, `--model`, `--base-url`);
   * each field overrides the agent's `behavior`, as in `run-agent`.
   */
  backend: Partial<BackendChoice>;
  /** `--store`: `file` or a `postgres://` URL (else `STEPFLOW_STORE`, agent.json, file). */
  store?: string;
  /** `--allow-run`: command steps and validators may run the commands agent.json lists. */
  allowRun?: boolean;
  /** Warnings (an agent that cannot be served, a backend's notes); the CLI prints them on stderr. */
  onWarning?: (message: string) => void;
}

/** One tool as `tools/list` describes it. */
export interface AgentTool {
  /** Tool name. */
  name: string;
  /** Short human title. */
  title: string;
  /** What the tool does (the agent's description for a run tool). */
  description: string;
  /** JSON Schema of the arguments. */
  inputSchema: ToolInputSchema;
}

/** What a call is given besides its arguments. */
export interface ToolCallContext {
  /** Aborted when the client cancels the request (or the server stops): the run is cancelled. */
  signal: AbortSignal;
  /** One line per step event of a run (the client's progress notifications). */
  onProgress?: (message: string) => void;
}

/** A tool's answer. */
export interface ToolAnswer {
  /** The text the client shows (or a model reads). */
  text: string;
  /** The same answer as JSON. */
  structured: Record<string, unknown>;
  /** True when the run did not succeed. */
  isError?: boolean;
}

/**
 * The tools served for the agents under `options.cwd`'s `.agent/`: `run_<agent>` for each agent
 * that loads (an agent that does not is left out, with a warning naming its problem), then
 * `answer_run`, `list_runs` and `show_run`. Read anew on each call, so agents added while serving appear.
 */
export async function listAgentTools(options: AgentToolsOptions): Promise<AgentTool[]> {
  const tools: AgentTool[] = [];
  const names: string[] = [];
  for (const summary of await listAgents({ cwd: options.cwd })) {
    if (!TOOL_NAME_AGENT.test(summary.name)) {
      options.onWarning?.(
        `Agent folder "${summary.name}" is not served: an MCP tool name takes letters, digits, "_", "-" and "." only; rename the folder.`,
      );
      continue;
    }
    let definition: AgentDefinition;
    try {
      definition = await loadAgentDefinition(summary.name, { cwd: options.cwd });
    } catch (error) {
      options.onWarning?.(
        `Agent "${summary.name}" is not served: ${
          error instanceof Error ? error.message.split("\n")[0] : String(error)
        } (check it with: ${
          commandLine({ action: "validate", agent: summary.name }, { cwd: options.cwd })
        })`,
      );
      continue;
    }
    names.push(definition.name);
    tools.push({
      name: `${RUN_TOOL_PREFIX}${definition.name}`,
      title: `Run agent ${definition.agent.displayName ?? definition.name}`,
      description: `${
        sentence(definition.agent.description ?? `Runs the stepflow agent "${definition.name}".`)
      } Answers the run's output and its run id; cancelling the call cancels the run.`,
      inputSchema: parametersInputSchema(definition.agent.parameters ?? {}),
    });
  }
  const agentProperty = {
    type: "string",
    description: "The agent (folder name under .agent/)",
    ...(names.length > 0 ? { enum: names } : {}),
  };
  const runIdProperty = {
    type: "string",
    description: "The run id (from list_runs or a run's answer)",
  };
  tools.push(
    {
      name: "answer_run",
      title: "Answer a waiting run",
      description:
        "Answers a run that waits at an input step (a run_<agent> or answer_run result with status waiting) and continues it: the value must match the question's answer schema. Answers the run's output like run_<agent>; a run can be answered once.",
      inputSchema: {
        type: "object",
        properties: {
          agent: agentProperty,
          runId: runIdProperty,
          value: { description: "The answer: JSON matching the waiting step's answer schema" },
        },
        required: ["agent", "runId", "value"],
        additionalProperties: false,
      },
    },
    {
      name: "list_runs",
      title: "List recorded runs",
      description:
        "Lists the recorded runs of an agent (or of every agent), newest first: run id, status, step, duration.",
      inputSchema: {
        type: "object",
        properties: { agent: agentProperty },
        additionalProperties: false,
      },
    },
    {
      name: "show_run",
      title: "Show a recorded run",
      description:
        "Shows one run of an agent: its status, the steps it took with their results, and its output.",
      inputSchema: {
        type: "object",
        properties: {
          agent: agentProperty,
          runId: runIdProperty,
        },
        required: ["agent", "runId"],
        additionalProperties: false,
      },
    },
  );
  return tools;
}

/**
 * Calls tool `name` with the client's `args`. Throws `MCP_TOOL_UNKNOWN`, `MCP_ARGUMENTS_INVALID`,
 * `AGENT_NOT_FOUND`, `RUN_NOT_FOUND`, an answer's refusal (`INPUT_NOT_WAITING`,
 * `INPUT_ANSWER_INVALID`, `INPUT_WAIT_EXPIRED`) or a backend's setup error; a run that ends
 * without success is an answer with `isError`, a run that waits for an answer is not.
 */
export async function callAgentTool(
  name: string,
  args: unknown,
  options: AgentToolsOptions,
  context: ToolCallContext,
): Promise<ToolAnswer> {
  if (name === "list_runs") return await listRuns(args, options);
  if (name === "show_run") return await showRun(args, options);
  if (name === "answer_run") return await answerRun(args, options, context);
  if (name.startsWith(RUN_TOOL_PREFIX)) {
    const agent = name.slice(RUN_TOOL_PREFIX.length);
    const served = (await listAgents({ cwd: options.cwd })).some((a) => a.name === agent);
    if (served) return await runAgent(agent, args, options, context);
  }
  const known = (await listAgentTools({ ...options, onWarning: () => {} })).map((t) => t.name);
  const near = closestMatch(name, known);
  throw new StepflowError(
    "MCP_TOOL_UNKNOWN",
    `There is no tool ${JSON.stringify(name.slice(0, 200))}${
      near ? ` (did you mean "${near}"?)` : ""
    }. Tools served: ${known.join(", ")}.`,
    { details: { tool: name.slice(0, 200) } },
  );
}

/**
 * Loads an agent the server serves: only a folder directly under the agent root, by its name —
 * never a path (`..`, `/etc`), which `run-agent --agent` would accept from its own user.
 */
async function loadServedAgent(
  agent: string,
  options: AgentToolsOptions,
): Promise<AgentDefinition> {
  const served = (await listAgents({ cwd: options.cwd })).map((a) => a.name);
  if (!TOOL_NAME_AGENT.test(agent) || agent.startsWith(".") || !served.includes(agent)) {
    const near = closestMatch(agent, served);
    throw new StepflowError(
      "MCP_TOOL_UNKNOWN",
      `There is no agent ${JSON.stringify(agent.slice(0, 200))} under ${
        resolve(options.cwd, ".agent")
      }${near ? ` (did you mean "${near}"?)` : ""}. Agents served: ${served.join(", ") || "none"}.`,
      { details: { agent: agent.slice(0, 200) } },
    );
  }
  return await loadAgentDefinition(agent, { cwd: options.cwd });
}

async function runAgent(
  agent: string,
  rawArgs: unknown,
  options: AgentToolsOptions,
  context: ToolCallContext,
): Promise<ToolAnswer> {
  const definition = await loadServedAgent(agent, options);
  const { args, inputText } = checkToolArguments(
    definition.name,
    definition.agent.parameters ?? {},
    rawArgs,
  );
  return await drive(definition, options, context, (runner, backendChoice) =>
    runner.run({
      args,
      cwd: options.cwd,
      backendChoice,
      signal: context.signal,
      ...(inputText !== undefined ? { inputText } : {}),
    }));
}

/** `answer_run`: records the answer (as `mcp`) and continues the run to its next wait or end. */
async function answerRun(
  rawArgs: unknown,
  options: AgentToolsOptions,
  context: ToolCallContext,
): Promise<ToolAnswer> {
  const { agent, runId, value } = checkRunArguments("answer_run", rawArgs, {
    agent: true,
    runId: true,
    value: true,
  });
  if (!isValidRunId(runId)) {
    throw new StepflowError(
      "MCP_ARGUMENTS_INVALID",
      `Invalid arguments for answer_run: runId ${
        JSON.stringify(runId!.slice(0, 200))
      } is not a run id (letters, digits, "_" or "-"); copy it from the waiting run's answer or list_runs.`,
      { details: { tool: "answer_run", problems: ["runId: not a run id"] } },
    );
  }
  checkAnswerValue(value);
  const definition = await loadServedAgent(agent!, options);
  return await drive(
    definition,
    options,
    context,
    (runner, backendChoice) =>
      runner.answer(runId, value, {
        answeredBy: "mcp",
        backendChoice,
        signal: context.signal,
      }),
  );
}

/**
 * One drive of a run (a new run or an answered one): the backend and store chosen as `run-agent`
 * chooses them, progress lines to the client, the store closed after.
 */
async function drive(
  definition: AgentDefinition,
  options: AgentToolsOptions,
  context: ToolCallContext,
  go: (
    runner: StepFlowRunner,
    backendChoice: ReturnType<typeof recordableChoice>,
  ) => Promise<StepFlowResult>,
): Promise<ToolAnswer> {
  const behavior = definition.agent.behavior;
  const given = options.backend;
  const name = given.backend ?? (given.script !== undefined ? "scripted" : undefined) ??
    behavior.backend ?? DEFAULT_BACKEND;
  const choice = mergeBackendChoice({ backend: name.toLowerCase() }, given);
  const model = choice.model ?? defaultModelOf(behavior.model);
  const backend = await createBackend({
    name: choice.backend,
    ...(model !== undefined ? { model } : {}),
    // Able to walk the agent's and the steps' model chains with these options.
    fallbackModels: [...(choice.fallbackModels ?? [])],
    ...(choice.baseUrl !== undefined ? { baseUrl: choice.baseUrl } : {}),
    ...(choice.script !== undefined ? { script: resolve(options.cwd, choice.script) } : {}),
    env: options.env,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  });
  const store = selectRunStore(definition, {
    cwd: options.cwd,
    env: options.env,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    ...(options.store !== undefined ? { store: options.store } : {}),
  });
  const progress = createProgressLines({
    write: (text) => {
      for (const line of text.split("\n")) if (line.trim() !== "") context.onProgress?.(line);
    },
  });
  let result: StepFlowResult;
  try {
    const runner = new StepFlowRunner(definition, {
      backend,
      events: progress.events,
      store,
      ...(options.allowRun ? { allowRun: true } : {}),
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
      // Only a chosen model overrides the steps' own models (and chains).
      ...(choice.model !== undefined ? { model: choice.model } : {}),
    });
    result = await go(runner, recordableChoice(choice));
  } finally {
    if (store instanceof PostgresRunStore) await store.close();
  }
  return await runAnswer(definition, result, commandRenderer({ cwd: options.cwd }, options.store));
}

/** An error's code and message, as the answer gives them. */
const errorFields = ({ code, message }: { code: string; message: string }) => ({ code, message });

/**
 * A description as a sentence of its own, so that the tool's own words after it do not run on
 * (`…to approve. Answers the run's output…`, not `…to approve Answers…`).
 */
function sentence(text: string): string {
  const trimmed = text.trim();
  return trimmed === "" || /[.!?…。]["')\]]*$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

/**
 * A run's answer: its id and how it ended (or what it waits for), then its output as JSON. The next
 * step a run's end names (the resume with a raised budget of a run its budget stopped) is in the
 * error as data (`next`) and in the text as the command that takes it.
 */
async function runAnswer(
  definition: AgentDefinition,
  result: StepFlowResult,
  commandFor: CommandRenderer,
): Promise<ToolAnswer> {
  const agent = definition.name;
  const next = asNextStep(result.error?.details?.next);
  if (result.completionReason === "waiting" && result.waiting) {
    return waitingAnswer(
      agent,
      result,
      result.waiting,
      await answerGuide(definition, result.waiting),
    );
  }
  const structured: Record<string, unknown> = {
    runId: result.runId,
    agent,
    success: result.success,
    completionReason: result.completionReason,
    finalStepId: result.finalStepId,
    iterations: result.iterations,
    // What the run spent; a cost no call could be priced for is null (unknown, never 0).
    usage: { ...result.usage, costUsd: costOrNull(result.usage) },
    ...(result.output !== undefined ? { output: boundDepth(result.output, ANSWER_DEPTH) } : {}),
    ...(result.error ? { error: { ...errorFields(result.error), ...(next ? { next } : {}) } } : {}),
    ...(result.declined ? { declined: boundDepth(result.declined, ANSWER_DEPTH) } : {}),
  };
  const declined = result.completionReason === "declined" ? result.declined : undefined;
  const lines = [
    `Run ${result.runId} of agent "${agent}" ${
      result.success
        ? "completed"
        : declined
        ? `was declined by ${declined.by}`
        : `ended: ${result.completionReason}`
    } at step "${result.finalStepId}" after ${result.iterations} iteration${
      result.iterations === 1 ? "" : "s"
    }.`,
  ];
  const spent = formatUsage(result.usage);
  if (spent) lines.push(`Spent: ${spent}.`);
  if (result.error) lines.push(`Error ${result.error.code}: ${result.error.message}`);
  if (next) lines.push(`Next: ${commandFor(next)}`);
  const note = noteText(declined?.note);
  if (note) lines.push(`Note: ${note}`);
  if (result.output !== undefined) {
    lines.push("Output:", JSON.stringify(structured.output, null, 2));
  }
  // A person's "no" is their decision, not a failed run: not a tool error.
  const failed = !result.success && result.completionReason !== "declined";
  return { text: lines.join("\n"), structured, ...(failed ? { isError: true } : {}) };
}

/** A run stopped at an input step: not an error — its question, and how to answer it. */
function waitingAnswer(
  agent: string,
  result: StepFlowResult,
  waiting: PendingInput,
  guide: AnswerGuide | undefined,
): ToolAnswer {
  const structured: Record<string, unknown> = {
    runId: result.runId,
    agent,
    status: "waiting",
    success: false,
    completionReason: "waiting",
    finalStepId: result.finalStepId,
    iterations: result.iterations,
    waiting: waitingView(waiting, guide),
  };
  const text = [
    `Run ${result.runId} of agent "${agent}" is waiting for an answer at input step "${waiting.stepId}":`,
    waiting.prompt.trimEnd(),
    answerHint(agent, result.runId, waiting, guide),
  ].join("\n");
  return { text, structured };
}

/** `list_runs`: one agent's runs, or every served agent's. */
async function listRuns(rawArgs: unknown, options: AgentToolsOptions): Promise<ToolAnswer> {
  const { agent } = checkRunArguments("list_runs", rawArgs, { agent: false, runId: false });
  const agents = agent !== undefined
    ? [agent]
    : (await listAgents({ cwd: options.cwd })).map((a) => a.name);
  const runs: (RunSummary & { shownStatus: string })[] = [];
  for (const name of agents) {
    let definition: AgentDefinition;
    try {
      definition = await loadServedAgent(name, options);
    } catch (error) {
      if (agent !== undefined) throw error;
      continue; // listing every agent: one that does not load has no runs to show
    }
    await withStore(definition, options, async (store) => {
      for (const run of await store.list()) runs.push({ ...run, shownStatus: shownStatus(run) });
    });
  }
  runs.sort((a, b) => b.startedAt.localeCompare(a.startedAt));
  const text = runs.length === 0
    ? `No runs recorded${agent !== undefined ? ` for agent "${agent}"` : ""}.`
    : `${runs.length} run(s), newest first:\n${
      formatRunList(runs, { commandFor: commandRenderer({ cwd: options.cwd }, options.store) })
    }`;
  return { text, structured: { runs } };
}

/** `show_run`: one run's status, steps and output, as `stepflow show` prints it. */
async function showRun(rawArgs: unknown, options: AgentToolsOptions): Promise<ToolAnswer> {
  const { agent, runId } = checkRunArguments("show_run", rawArgs, { agent: true, runId: true });
  const definition = await loadServedAgent(agent!, options);
  return await withStore(definition, options, async (store) => {
    let checkpoint: RunCheckpoint | undefined;
    try {
      checkpoint = await store.loadCheckpoint(runId!);
    } catch (error) {
      // A run that stopped before its first checkpoint still has a log worth showing.
      if (!(error instanceof StepflowError && error.code === "RUN_CHECKPOINT_MISSING")) throw error;
    }
    const log = await store.readLog(runId!);
    if (!checkpoint && log.length === 0) {
      throw new StepflowError(
        "RUN_NOT_FOUND",
        `No run ${runId} of agent "${definition.name}" is recorded. List the runs with the list_runs tool.`,
        { details: { runId } },
      );
    }
    const summary = (await store.list()).find((run) => run.runId === runId);
    const historyLength = checkpoint?.state.historyLength;
    const structured: Record<string, unknown> = {
      runId,
      agent: definition.name,
      ...(checkpoint ? { shownStatus: shownStatus(summary ?? checkpoint) } : {}),
      ...(checkpoint ? { checkpoint: boundDepth(checkpoint, ANSWER_DEPTH) } : {}),
      history: boundDepth(
        historyFromLog(log, typeof historyLength === "number" ? historyLength : undefined),
        ANSWER_DEPTH,
      ),
      // Cost per run, step and call (a cost no call could be priced for is null).
      cost: spendView(checkpoint, log),
    };
    let text = formatRunHistory(checkpoint, log, {
      runId: runId!,
      commandFor: commandRenderer({ cwd: options.cwd }, options.store),
      ...(summary?.live !== undefined ? { live: summary.live } : {}),
    });
    // The checkpoint is read from disk: use its request only when it has the shape one has.
    const waiting = (checkpoint?.status === "waiting" ? checkpoint.state.waiting : undefined) as
      | PendingInput
      | undefined;
    if (typeof waiting?.stepId === "string" && typeof waiting.prompt === "string") {
      const guide = await answerGuide(definition, waiting);
      structured.waiting = waitingView(waiting, guide);
      text += `\n${answerHint(definition.name, runId!, waiting, guide)}`;
    }
    return { text, structured };
  });
}

async function withStore<T>(
  definition: AgentDefinition,
  options: AgentToolsOptions,
  use: (store: FileRunStore | PostgresRunStore) => Promise<T>,
): Promise<T> {
  const store = selectRunStore(definition, {
    cwd: options.cwd,
    env: options.env,
    ...(options.store !== undefined ? { store: options.store } : {}),
  });
  try {
    return await use(store);
  } finally {
    if (!(store instanceof FileRunStore)) await store.close();
  }
}

/** The `agent`, `runId` (and `value`) arguments of `list_runs`, `show_run`, `answer_run`, checked. */
function checkRunArguments(
  tool: string,
  rawArgs: unknown,
  required: { agent: boolean; runId: boolean; value?: boolean },
): { agent?: string; runId?: string; value?: unknown } {
  const given = (rawArgs ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof given !== "object" || Array.isArray(given)) {
    problems.push("the arguments must be an object");
  } else {
    const allowed = required.runId ? ["agent", "runId"] : ["agent"];
    if (required.value) {
      if (!Object.hasOwn(given, "value")) problems.push("value: required, but not given");
    }
    for (const key of Object.keys(given)) {
      if (!allowed.includes(key) && !(required.value && key === "value")) {
        problems.push(`${JSON.stringify(key.slice(0, 100))} is not an argument of ${tool}`);
      }
    }
    for (const key of allowed) {
      const value = Object.hasOwn(given, key) ? given[key] : undefined;
      if (value === undefined) {
        if (required[key as "agent" | "runId"]) problems.push(`${key}: required, but not given`);
      } else if (typeof value !== "string" || value === "" || value.length > 200) {
        problems.push(`${key}: expects a name of 1 to 200 characters`);
      }
    }
  }
  if (problems.length > 0) {
    throw new StepflowError(
      "MCP_ARGUMENTS_INVALID",
      `Invalid arguments for ${tool}: ${problems.join("; ")}.`,
      { details: { tool, problems } },
    );
  }
  return {
    ...(typeof given.agent === "string" ? { agent: given.agent } : {}),
    ...(typeof given.runId === "string" ? { runId: given.runId } : {}),
    ...(required.value ? { value: given.value } : {}),
  };
}
