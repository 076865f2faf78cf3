/**
 * Replay files from run logs. The runner logs one `llm_call` entry per backend call
 * (src/flow/llm_call_log.ts); {@linkcode replayFromLog} turns a run's log into a replay file —
 * the scripted backend's format (step id → answers) whose entries also carry the model, the
 * prompt's fingerprint and text, and tool calls. `run-agent --record FILE` and
 * `run-agent --show RUN_ID --as-script` both go through it.
 *
 * @module
 */
import { stringify as stringifyYaml } from "yaml";
import { StepflowError } from "../errors.ts";
import type { RunLogEntry } from "../store/types.ts";
import { promptFingerprint } from "./prompt_fingerprint.ts";
import { credentialSecrets, redactDeep } from "./redact.ts";
import { REPLAY_HEADER_KEY } from "./replay.ts";

/** The log entry type of one backend call. */
export const LLM_CALL_ENTRY = "llm_call";

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
}

/** A replay document: the header and, per script key, the recorded calls. */
export interface ReplayDocument {
  /** Header: format version, agent, run, when it was written. */
  header: Record<string, unknown>;
  /** Script key (`<stepId>` or `<stepId>#check`) → recorded calls in call order. */
  calls: Record<string, Record<string, unknown>[]>;
  /** How many calls the document holds. */
  count: number;
}

/**
 * The replay document of a run's log: one entry per `llm_call`, redacted with the credentials of
 * `env`. Calls of an iteration that a crash interrupted (logged before a `run_resume` but never
 * ended) are left out, since the resumed run made them again. A log without `llm_call` entries (a
 * run recorded by an older stepflow, or one that made no call) is `REPLAY_NOT_RECORDED`.
 *
 * @example
 * ```ts
 * import { replayFromLog } from "./replay_file.ts";
 * const doc = replayFromLog([
 *   { ts: "t", runId: "r1", type: "llm_call", iteration: 1, stepId: "a", kind: "step", prompt: "Go",
 *     answer: { text: "done" } },
 * ], { agent: "demo", runId: "r1", env: {} });
 * console.log(doc.calls.a[0].text); // "done"
 * ```
 */
export function replayFromLog(
  log: readonly RunLogEntry[],
  options: ReplayFromLogOptions,
): ReplayDocument {
  const secrets = credentialSecrets(options.env);
  let kept: RunLogEntry[] = [];
  let lastEnded = 0;
  let redriven = false;
  for (const entry of log) {
    if (entry.type === LLM_CALL_ENTRY) kept.push(entry);
    else if (entry.type === "step_end" && typeof entry.iteration === "number") {
      lastEnded = Math.max(lastEnded, entry.iteration);
    } else if (entry.type === "run_resume") {
      kept = kept.filter((c) => typeof c.iteration !== "number" || c.iteration <= lastEnded);
    } else if (entry.type === "run_redrive") redriven = true;
  }
  if (kept.length === 0) {
    throw new StepflowError(
      "REPLAY_NOT_RECORDED",
      `Run ${options.runId} of agent "${options.agent}" has no recorded backend calls: it made none, or it was recorded by a stepflow older than replay files. Run the agent again (with --record FILE to write the replay file at once).`,
      { details: { runId: options.runId } },
    );
  }
  const calls: Record<string, Record<string, unknown>[]> = {};
  for (const entry of kept) {
    const stepId = String(entry.stepId ?? "");
    const key = entry.kind === "check" ? `${stepId}#check` : stepId;
    const list = Object.hasOwn(calls, key) ? calls[key] : (calls[key] = []);
    list.push(replayEntry(entry, secrets));
  }
  const header: Record<string, unknown> = {
    version: 1,
    agent: options.agent,
    runId: options.runId,
    ...options.header,
    calls: kept.length,
    written: new Date().toISOString(),
  };
  if (redriven) {
    header.note =
      "the run was redriven: replayed from its start, it stops where its first drive failed";
  }
  return {
    header: redactDeep(header, secrets) as Record<string, unknown>,
    calls,
    count: kept.length,
  };
}

/** One replay entry from an `llm_call` log entry (already redacted). */
function replayEntry(
  entry: RunLogEntry,
  secrets: ReturnType<typeof credentialSecrets>,
): Record<string, unknown> {
  const prompt = typeof entry.prompt === "string" ? entry.prompt : "";
  const system = typeof entry.system === "string" ? entry.system : undefined;
  const out: Record<string, unknown> = {};
  const answer = entry.answer as Record<string, unknown> | undefined;
  if (typeof entry.error === "string") out.error = entry.error;
  else if (answer) {
    if (answer.output !== undefined) out.output = answer.output;
    out.text = answer.text;
    for (const k of ["usage", "costUsd", "sessionId"]) {
      if (answer[k] !== undefined) out[k] = answer[k];
    }
  }
  out.kind = entry.kind;
  if (typeof entry.iteration === "number") out.iteration = entry.iteration;
  if (typeof entry.model === "string") out.model = entry.model;
  if (Array.isArray(answer?.toolCalls)) out.toolCalls = answer.toolCalls;
  out.fingerprint = promptFingerprint(system, prompt, secrets);
  if (system !== undefined) out.system = system;
  out.prompt = prompt;
  return redactDeep(out, secrets) as Record<string, unknown>;
}

/**
 * The YAML text of a replay document: a comment saying what it is and how to use it, the header
 * under `_replay`, then one list of calls per step.
 */
export function replayYaml(doc: ReplayDocument): string {
  const h = doc.header;
  const comment = [
    `# stepflow replay of run ${h.runId} of agent "${h.agent}" (${doc.count} backend calls).`,
    `# Replay: deno task run-agent --agent ${h.agent} --script THIS_FILE [the run's parameters]`,
    "# Each entry answers one call; its prompt must still match `fingerprint` (docs/testing.md).",
  ];
  const body = stringifyYaml(
    { [REPLAY_HEADER_KEY]: h, ...doc.calls },
    { lineWidth: 0, aliasDuplicateObjects: false },
  );
  return `${comment.join("\n")}\n${body}`;
}
