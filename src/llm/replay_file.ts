/**
 * Replay files from run logs. The runner keeps every backend call in the `calls` of its
 * iteration's `step_end` log entry (src/flow/llm_call_log.ts); {@linkcode replayFromLog} turns a run's log into a replay file —
 * the scripted backend's format (step id → answers) whose entries also carry the model, the
 * prompt's fingerprint and text, and tool calls — and, under `_answers`, the answers the run was
 * given at its waits (`script_answers.ts`). `stepflow run AGENT --record FILE` and
 * `stepflow show RUN_ID --as-script` both go through it.
 *
 * @module
 */
import { stringify as stringifyYaml } from "yaml";
import { StepflowError } from "../errors.ts";
import type { ModelFallbackEvent } from "../events/types.ts";
import type { RunLogEntry } from "../store/types.ts";
import { promptFingerprint } from "./prompt_fingerprint.ts";
import { credentialSecrets, redactDeep } from "./redact.ts";
import { REPLAY_HEADER_KEY } from "./replay.ts";
import { ANSWERS_KEY, answersFromLog, type ScriptAnswer } from "./script_answers.ts";

/** One backend call as the run log keeps it (in the `calls` of its iteration's `step_end`). */
export interface RecordedCall {
  /** The step. */
  stepId: string;
  /** `step`, `check` or `reask`. */
  kind: string;
  /** The run's iteration when the call was made. */
  iteration: number;
  /** The prompt sent. */
  prompt: string;
  /** The system prompt sent. */
  system?: string;
  /** The model that answered (a model chain's choice, else the request's or the backend's default). */
  model?: string;
  /** The backend that answered, when a model chain chose it. */
  backend?: string;
  /** The model chain's fall-throughs before the answer (absent: none). */
  fallbacks?: ModelFallbackEvent[];
  /** The answer, when the call succeeded. */
  answer?: {
    text: string;
    output?: unknown;
    usage?: unknown;
    costUsd?: number;
    sessionId?: string;
  };
  /**
   * The model's turns of a call made through the tool loop, in order: the turns that asked for tool
   * calls, then (when the call succeeded) the final answer's turn. Absent for a plain call.
   */
  turns?: RecordedTurn[];
  /** The error the call failed with. */
  error?: string;
}

/** One model turn of a call with tools, as the run log keeps it. */
export interface RecordedTurn {
  /** The model's text in the turn. */
  text: string;
  /** The calls it asked for (empty in the final answer's turn). */
  toolCalls: { id: string; name: string; arguments: unknown }[];
  /** The turn's token usage, when reported. */
  usage?: unknown;
  /** The turn's cost, when known. */
  costUsd?: number;
}

/**
 * The backend calls of a run's log, in call order: the `calls` of every `step_end` entry. Calls of
 * an iteration that never ended (a crash) are not in the log; the resumed run made them again.
 */
export function recordedCalls(log: readonly RunLogEntry[]): RecordedCall[] {
  const calls: RecordedCall[] = [];
  for (const entry of log) {
    if (entry.type !== "step_end" || !Array.isArray(entry.calls)) continue;
    for (const c of entry.calls as unknown[]) {
      if (c === null || typeof c !== "object") continue;
      const call = c as Partial<RecordedCall>;
      if (typeof call.stepId !== "string" || typeof call.prompt !== "string") continue;
      calls.push({
        ...call,
        stepId: call.stepId,
        prompt: call.prompt,
        kind: typeof call.kind === "string" ? call.kind : "step",
        iteration: typeof call.iteration === "number" ? call.iteration : 0,
      });
    }
  }
  return calls;
}

/** Options of {@linkcode replayFromLog}. */
export interface ReplayFromLogOptions {
  /** The agent's name (header). */
  agent: string;
  /** The run (header and messages). */
  runId: string;
  /** The environment whose credentials are redacted (see `redact.ts`). */
  env: Record<string, string | undefined>;
  /** Extra header fields (backend, …). */
  header?: Record<string, unknown>;
  /**
   * The logs of the run's child runs (agent steps; `childRunLogs` in `src/flow/child_logs.ts`):
   * their calls are recorded under `<agent>/<stepId>`, so that one file replays the run and its
   * children, as one script answers both.
   */
  children?: readonly { agent: string; log: readonly RunLogEntry[] }[];
}

/** A replay document: the header and, per script key, the recorded calls. */
export interface ReplayDocument {
  /** Header: format version, agent, run, when it was written. */
  header: Record<string, unknown>;
  /** Script key (`<stepId>` or `<stepId>#check`) → recorded calls in call order. */
  calls: Record<string, Record<string, unknown>[]>;
  /** How many calls the document holds. */
  count: number;
  /**
   * The answers the run was given at its waits (input steps, permission waits), in order, written
   * under `_answers` so that a replay answers them again (absent when it was given none).
   */
  answers?: ScriptAnswer[];
}

/**
 * The replay document of a run's log: one entry per recorded call ({@linkcode recordedCalls}),
 * redacted with the credentials of `env`. A log without recorded calls (a run recorded by an older
 * stepflow, or one that made no call) is `REPLAY_NOT_RECORDED`.
 *
 * @example
 * ```ts
 * import { replayFromLog } from "./replay_file.ts";
 * const doc = replayFromLog([
 *   { ts: "t", runId: "r1", type: "step_end", stepId: "a", calls: [
 *     { stepId: "a", kind: "step", iteration: 1, prompt: "Go", answer: { text: "done" } },
 *   ] },
 * ], { agent: "demo", runId: "r1", env: {} });
 * console.log(doc.calls.a[0].text); // "done"
 * ```
 */
export function replayFromLog(
  log: readonly RunLogEntry[],
  options: ReplayFromLogOptions,
): ReplayDocument {
  const secrets = credentialSecrets(options.env);
  const own = recordedCalls(log).map((call) => ({ call, prefix: "" }));
  const children = (options.children ?? []).flatMap((child) =>
    recordedCalls(child.log).map((call) => ({ call, prefix: `${child.agent}/` }))
  );
  const kept = [...own, ...children];
  const redriven = log.some((e) => e.type === "run_redrive");
  if (kept.length === 0) {
    throw new StepflowError(
      "REPLAY_NOT_RECORDED",
      `Run ${options.runId} of agent "${options.agent}" has no recorded backend calls: it made none, or it was recorded by a stepflow older than replay files. Run the agent again (with --record FILE to write the replay file at once).`,
      { details: { runId: options.runId } },
    );
  }
  const calls: Record<string, Record<string, unknown>[]> = {};
  let entries = 0;
  for (const { call: entry, prefix } of kept) {
    const key = `${prefix}${entry.kind === "check" ? `${entry.stepId}#check` : entry.stepId}`;
    const list = Object.hasOwn(calls, key) ? calls[key] : (calls[key] = []);
    const written = replayEntries(entry, secrets);
    list.push(...written);
    entries += written.length;
  }
  const header: Record<string, unknown> = {
    version: 1,
    agent: options.agent,
    runId: options.runId,
    ...options.header,
    calls: kept.length,
    ...(entries !== kept.length ? { turns: entries } : {}),
    ...(children.length > 0 ? { childCalls: children.length } : {}),
    written: new Date().toISOString(),
  };
  if (redriven) {
    header.note =
      "the run was redriven: replayed from its start, it stops where its first drive failed";
  }
  const answers = answersFromLog(log);
  if (answers.length > 0) header.answers = answers.length;
  return {
    header: redactDeep(header, secrets) as Record<string, unknown>,
    calls,
    count: kept.length,
    ...(answers.length > 0 ? { answers: redactDeep(answers, secrets) as ScriptAnswer[] } : {}),
  };
}

/**
 * The replay entries of a recorded call (redacted): one per model turn. A call made through the
 * tool loop gives an entry per turn that asked for tool calls (`toolCalls`: the calls with their ids
 * and arguments, as in a script), then the final answer; only the first carries the prompt and its
 * fingerprint, since only the call's first turn sends the step's prompt.
 */
function replayEntries(
  entry: RecordedCall,
  secrets: ReturnType<typeof credentialSecrets>,
): Record<string, unknown>[] {
  const turns = Array.isArray(entry.turns) ? entry.turns.filter(isTurn) : [];
  const asking = turns.filter((t) => t.toolCalls.length > 0);
  const final = turns.length > 0 && turns[turns.length - 1].toolCalls.length === 0
    ? turns[turns.length - 1]
    : undefined;
  const out: Record<string, unknown>[] = asking.map((turn) => {
    const e: Record<string, unknown> = {};
    if (turn.text !== "") e.text = turn.text;
    e.toolCalls = turn.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
    if (turn.usage !== undefined) e.usage = turn.usage;
    if (turn.costUsd !== undefined) e.costUsd = turn.costUsd;
    return e;
  });
  const last: Record<string, unknown> = {};
  const answer = entry.answer as Record<string, unknown> | undefined;
  if (typeof entry.error === "string") last.error = entry.error;
  else if (answer) {
    if (answer.output !== undefined) last.output = answer.output;
    last.text = answer.text;
    // After tool turns the answer's usage and cost are sums; the entry keeps its own turn's.
    const own = turns.length > 0 ? (final ?? {}) as Record<string, unknown> : answer;
    for (const k of ["usage", "costUsd"]) if (own[k] !== undefined) last[k] = own[k];
    if (answer.sessionId !== undefined) last.sessionId = answer.sessionId;
  }
  out.push(last);
  const system = typeof entry.system === "string" ? entry.system : undefined;
  for (const [i, e] of out.entries()) {
    e.kind = entry.kind;
    e.iteration = entry.iteration;
    if (typeof entry.model === "string") e.model = entry.model;
    if (typeof entry.backend === "string") e.backend = entry.backend;
    // The call's fall-throughs, with the answer they led to (its last entry).
    if (i === out.length - 1 && Array.isArray(entry.fallbacks) && entry.fallbacks.length > 0) {
      e.fallbacks = entry.fallbacks;
    }
    if (i > 0) continue;
    e.fingerprint = promptFingerprint(system, entry.prompt, secrets);
    if (system !== undefined) e.system = system;
    e.prompt = entry.prompt;
  }
  return out.map((e) => redactDeep(e, secrets) as Record<string, unknown>);
}

function isTurn(turn: unknown): turn is RecordedTurn {
  if (turn === null || typeof turn !== "object") return false;
  const t = turn as Partial<RecordedTurn>;
  return typeof t.text === "string" && Array.isArray(t.toolCalls) &&
    t.toolCalls.every((c) => c !== null && typeof c === "object" && typeof c.name === "string");
}

/**
 * The text of a replay document for `file`: JSON for a `.json` file (as `--script` reads it), else
 * YAML ({@linkcode replayYaml}).
 */
export function replayText(doc: ReplayDocument, file: string): string {
  if (!file.toLowerCase().endsWith(".json")) return replayYaml(doc);
  return `${JSON.stringify(documentObject(doc), null, 2)}\n`;
}

/**
 * The YAML text of a replay document: a comment saying what it is and how to use it, the header
 * under `_replay`, then one list of calls per step.
 */
export function replayYaml(doc: ReplayDocument): string {
  const h = doc.header;
  const comment = [
    `# stepflow replay of run ${h.runId} of agent "${h.agent}" (${doc.count} backend calls).`,
    `# Replay: stepflow run ${h.agent} --script THIS_FILE [the run's parameters]`,
    "# Each entry answers one call; its prompt must still match `fingerprint` (docs/testing.md).",
  ];
  if (doc.answers) {
    comment.push(
      `# ${ANSWERS_KEY}: the answers the run was given at its waits, in order; the test kit and eval answer with them.`,
    );
  }
  const body = stringifyYaml(documentObject(doc), { lineWidth: 0, aliasDuplicateObjects: false });
  return `${comment.join("\n")}\n${body}`;
}

/** The file's object: the header, the answers when there are any, then the calls per step. */
function documentObject(doc: ReplayDocument): Record<string, unknown> {
  return {
    [REPLAY_HEADER_KEY]: doc.header,
    ...(doc.answers ? { [ANSWERS_KEY]: doc.answers } : {}),
    ...doc.calls,
  };
}
