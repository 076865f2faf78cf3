/**
 * Replaying a recorded run: {@linkcode ReplayBackend} answers each call from a replay file (the
 * scripted backend's format whose entries also carry `fingerprint`, `prompt`, `system`, `model`,
 * `kind` and `iteration`) and checks that the prompt sent is the prompt recorded. A step with tools
 * takes one entry per model turn; `toolCalls` means what it means in a script: this turn the model
 * asks for these calls.
 *
 * @module
 */
import { StepflowError } from "../errors.ts";
import type { ModelFallbackEvent } from "../events/types.ts";
import { shortDiff } from "../text_diff.ts";
import { promptFingerprint } from "./prompt_fingerprint.ts";
import { credentialSecrets, redactText, type Secret } from "./redact.ts";
import { ScriptedBackend, type ScriptedEntry } from "./scripted.ts";
import { ANSWERS_KEY, parseScriptAnswers, type ScriptAnswer } from "./script_answers.ts";
import {
  type ToolTurnBackend,
  type ToolTurnRequest,
  type ToolTurnResponse,
  turnAsRequest,
} from "./tool_turn.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse } from "./types.ts";

/**
 * How a replay treats a prompt that changed since it was recorded: `strict` (the default) fails the
 * call with `REPLAY_PROMPT_CHANGED`; `lenient` warns once per drift and answers anyway.
 */
export type ReplayMode = "strict" | "lenient";

/** The replay modes, for flag parsing. */
export const REPLAY_MODES: readonly ReplayMode[] = Object.freeze(["strict", "lenient"]);

/** What a replay file records of one call besides its answer. */
export interface ReplayCallRecord {
  /** `step`, `check` or `reask`. */
  kind?: string;
  /** The run's iteration when the call was made. */
  iteration?: number;
  /** The model that answered. */
  model?: string;
  /** The backend that answered, when a model chain chose it. */
  backend?: string;
  /** The model chain's fall-throughs before the answer (replayed as `onFallback` notices). */
  fallbacks?: ModelFallbackEvent[];
  /** {@linkcode promptFingerprint} of the redacted system prompt and prompt. */
  fingerprint?: string;
  /** The prompt sent (redacted), for the diff shown on drift. */
  prompt?: string;
  /** The system prompt sent (redacted). */
  system?: string;
}

/** The keys a replay entry adds to a scripted entry. */
export const REPLAY_ENTRY_KEYS: ReadonlySet<string> = new Set([
  "kind",
  "iteration",
  "model",
  "backend",
  "fallbacks",
  "fingerprint",
  "prompt",
  "system",
]);

/** The header key of a replay file (never a step id: step ids start with a letter or digit). */
export const REPLAY_HEADER_KEY = "_replay";

/** A prompt that differed from its recording. */
export interface ReplayDrift {
  /** The step. */
  stepId: string;
  /** The script key (`<stepId>` or `<stepId>#check`). */
  key: string;
  /** 1-based number of the recorded entry under that key (a step with tools has one per model turn). */
  call: number;
  /** The request kind. */
  kind: string;
  /** The short diff (recorded → sent). */
  diff: string;
  /** The full message. */
  message: string;
}

/** Options of {@linkcode ReplayBackend}. */
export interface ReplayOptions {
  /** `strict` (default) or `lenient`. */
  mode?: ReplayMode;
  /** Where the recording comes from, for messages (a file path). */
  source?: string;
  /** The environment whose credentials are redacted before fingerprinting (default: none). */
  env?: Record<string, string | undefined>;
  /** Receives one warning per drift in lenient mode (default `console.warn`). */
  onWarning?: (message: string) => void;
}

/**
 * A backend that replays a recording: each call takes the next recorded answer of its step (the
 * `<stepId>#check` list for check calls) after checking the prompt against the recorded
 * fingerprint. A changed prompt fails the call with `REPLAY_PROMPT_CHANGED` and a short diff (or,
 * lenient, warns); a step the recording never saw is `REPLAY_STEP_UNKNOWN`; one call too many is
 * `REPLAY_EXHAUSTED`. Entries without a fingerprint are answered unchecked, as by
 * {@linkcode ScriptedBackend}. A step with tools takes one entry per model turn
 * ({@linkcode ReplayBackend.toolTurn}): the first turn is checked like a plain call, the later
 * turns answer from the entries that follow.
 *
 * @example
 * ```ts
 * import { ReplayBackend } from "./replay.ts";
 * import { promptFingerprint } from "./prompt_fingerprint.ts";
 * const backend = new ReplayBackend({
 *   "draft.haiku": [{ text: "Leaves fall", fingerprint: promptFingerprint(undefined, "Write") }],
 * });
 * const req = { kind: "step" as const, agent: "haiku", stepId: "draft.haiku", iteration: 1, cwd: "." };
 * await backend.complete({ ...req, prompt: "Write" }); // { text: "Leaves fall" }
 * ```
 */
export class ReplayBackend implements LlmBackend, ToolTurnBackend {
  /** Always `"replay"`. */
  readonly name = "replay";
  /** Every drift seen, in order (lenient replays go on; strict ones fail at the first). */
  readonly drifts: ReplayDrift[] = [];
  /**
   * The answers the recording gives the run's waits (its `_answers`: what the person answered at
   * input steps and permission waits), in order — the test kit and `deno task eval` answer with
   * them; the backend itself never reads them.
   */
  readonly answers: readonly ScriptAnswer[] = [];
  readonly #scripted: ScriptedBackend;
  readonly #records = new Map<string, ReplayCallRecord[]>();
  readonly #used = new Map<string, number>();
  readonly #mode: ReplayMode;
  readonly #source: string;
  readonly #secrets: Secret[];
  readonly #warn: (message: string) => void;

  /**
   * Creates the backend from a replay script (step id → entries; the header key is ignored).
   *
   * @param script the recording: scripted entries extended with {@linkcode ReplayCallRecord} keys
   * @param options mode, source name, environment, warnings
   */
  constructor(script: Record<string, unknown>, options: ReplayOptions = {}) {
    this.#mode = options.mode ?? "strict";
    this.#source = options.source ?? "the recording";
    this.#secrets = credentialSecrets(options.env ?? {});
    this.#warn = options.onWarning ?? ((m) => console.warn(m));
    const answers: Record<string, ScriptedEntry[]> = {};
    for (const [key, entries] of Object.entries(script)) {
      if (key === REPLAY_HEADER_KEY) continue;
      if (key === ANSWERS_KEY) {
        this.answers = parseScriptAnswers(entries, `Replay ${this.#source}`);
        continue;
      }
      if (!Array.isArray(entries)) {
        throw new StepflowError(
          "SCRIPT_INVALID",
          `Replay ${this.#source}: "${key}" must be a list of recorded calls, got ${typeof entries}.`,
        );
      }
      const records: ReplayCallRecord[] = [];
      answers[key] = entries.map((entry, i) => {
        const { answer, record } = splitEntry(entry, `"${key}" entry ${i + 1}`, this.#source);
        records.push(record);
        return answer;
      });
      this.#records.set(key, records);
    }
    this.#scripted = new ScriptedBackend(answers);
  }

  /** Every request received, in order. */
  get calls(): LlmRequest[] {
    return this.#scripted.calls;
  }

  /** How many recorded answers are still unused. */
  remaining(): number {
    return this.#scripted.remaining();
  }

  /** Checks the prompt against the recording, then answers with the recorded answer. */
  async complete(req: LlmRequest, opts: LlmCallOptions = {}): Promise<LlmResponse> {
    const record = this.#take(req, 0);
    return answeredAsRecorded(await this.#scripted.complete(req, opts), record, opts);
  }

  /**
   * One model turn of a step with tools: the next recorded entry of the step, as tool calls
   * (`toolCalls`) or the final answer. The call's first turn sends the step's prompt and is checked
   * as {@linkcode ReplayBackend.complete} checks it; the later turns carry tool results and take
   * the entries that follow.
   */
  async toolTurn(req: ToolTurnRequest, opts: LlmCallOptions = {}): Promise<ToolTurnResponse> {
    const asRequest = turnAsRequest(req);
    const turn = req.messages.filter((m) => m.role === "assistant").length;
    const record = this.#take(asRequest, turn);
    return answeredAsRecorded(await this.#scripted.toolTurn(req, opts), record, opts);
  }

  /**
   * Takes the next recorded entry for `req` after checking it is there and, on a call's first turn
   * (`turnsBefore` 0), that the prompt is the one recorded.
   */
  #take(req: LlmRequest, turnsBefore: number): ReplayCallRecord {
    const plain = req.kind === "check" ? `${req.stepId}#check` : req.stepId;
    // A child run's calls are recorded under `<agent>/<stepId>` (its agent's, as in a script).
    const own = `${req.agent}/${plain}`;
    const key = this.#records.has(own) ? own : plain;
    const records = this.#records.get(key);
    const index = this.#used.get(key) ?? 0;
    const where = `the ${req.kind} call of step "${req.stepId}" (iteration ${req.iteration}${
      turnsBefore > 0 ? `, model turn ${turnsBefore + 1} after its tool calls` : ""
    })`;
    if (!records) {
      const seen = [...this.#records.keys()].map((k) => `"${k}"`).join(", ") || "none";
      throw new StepflowError(
        "REPLAY_STEP_UNKNOWN",
        `${
          capitalize(where)
        } is not in ${this.#source}: the recorded run never made it (it recorded ${seen}). The flow took another path than the recorded run; record the run again (run it with --record FILE).`,
        { details: { stepId: req.stepId, key, source: this.#source } },
      );
    }
    if (index >= records.length) {
      throw new StepflowError(
        "REPLAY_EXHAUSTED",
        `The run went past the end of ${this.#source}: ${where} needs entry ${
          index + 1
        } of "${key}", but the recording holds ${records.length}. The flow took another path than the recorded run; record the run again (run it with --record FILE).`,
        { details: { stepId: req.stepId, key, call: index + 1, source: this.#source } },
      );
    }
    this.#used.set(key, index + 1);
    const record = records[index];
    if (turnsBefore === 0 && record.fingerprint !== undefined) {
      this.#checkPrompt(req, key, index + 1, record);
    }
    return record;
  }

  #checkPrompt(req: LlmRequest, key: string, call: number, record: ReplayCallRecord): void {
    const sent = promptFingerprint(req.systemPrompt, req.prompt, this.#secrets);
    if (sent === record.fingerprint) return;
    const diff = this.#diff(req, record);
    const recordedAt = record.iteration !== undefined
      ? `, recorded in iteration ${record.iteration}`
      : "";
    const message =
      `The ${req.kind} prompt of step "${req.stepId}" changed since it was recorded in ${this.#source} (entry ${call} of "${key}", iteration ${req.iteration}${recordedAt}):\n${diff}`;
    this.drifts.push({ stepId: req.stepId, key, call, kind: req.kind, diff, message });
    if (this.#mode === "lenient") {
      this.#warn(`replay drift (lenient): ${message}`);
      return;
    }
    throw new StepflowError(
      "REPLAY_PROMPT_CHANGED",
      `${message}\nRecord the run again (run it with --record FILE) to accept the new prompt, or replay with --replay lenient.`,
      { details: { stepId: req.stepId, key, call, source: this.#source } },
    );
  }

  #diff(req: LlmRequest, record: ReplayCallRecord): string {
    const parts: string[] = [];
    const system = redactText(req.systemPrompt ?? "", this.#secrets);
    const prompt = redactText(req.prompt, this.#secrets);
    if (record.prompt === undefined && record.system === undefined) {
      return "  (the recording keeps only the prompt's fingerprint, so no diff can be shown)";
    }
    if ((record.system ?? "") !== system) {
      parts.push("system prompt:", shortDiff(record.system ?? "", system, { maxLines: 12 }));
    }
    if ((record.prompt ?? "") !== prompt) {
      parts.push(shortDiff(record.prompt ?? "", prompt, { maxLines: 16 }));
    }
    return parts.join("\n") ||
      "  (the texts agree but the fingerprint does not: the file was edited)";
  }
}

/**
 * The answer as the recorded run got it: from the model that answered then (a model chain's
 * choice), its fall-throughs told again as they were (`onFallback`), so a replayed run records the
 * same.
 */
function answeredAsRecorded<A extends LlmResponse | ToolTurnResponse>(
  answer: A,
  record: ReplayCallRecord,
  opts: LlmCallOptions,
): A {
  if (record.model !== undefined) answer.model = record.model;
  if (record.backend !== undefined) answer.backend = record.backend;
  if (record.fallbacks?.length) {
    answer.fallbacks = record.fallbacks;
    for (const fallback of record.fallbacks) opts.onFallback?.(fallback);
  }
  return answer;
}

/** Splits one replay entry into the scripted answer and the replay record. */
function splitEntry(
  entry: unknown,
  where: string,
  source: string,
): { answer: ScriptedEntry; record: ReplayCallRecord } {
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
    return { answer: entry as ScriptedEntry, record: {} };
  }
  const answer: Record<string, unknown> = {};
  const record: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(entry)) {
    if (REPLAY_ENTRY_KEYS.has(k)) record[k] = v;
    else answer[k] = v;
  }
  if (record.fallbacks !== undefined && !isFallbackList(record.fallbacks)) {
    throw new StepflowError(
      "SCRIPT_INVALID",
      `Replay ${source}: ${where} has "fallbacks" that are not a model chain's fall-throughs ({ from, to, reason, detail }); re-create the file (a run with --record FILE, or show --as-script).`,
    );
  }
  for (const k of ["fingerprint", "prompt", "system", "model", "backend", "kind"]) {
    if (record[k] !== undefined && typeof record[k] !== "string") {
      throw new StepflowError(
        "SCRIPT_INVALID",
        `Replay ${source}: ${where} has a non-text "${k}"; re-create the file (a run with --record FILE, or show --as-script).`,
      );
    }
  }
  const calls = answer.toolCalls;
  if (Array.isArray(calls) && calls.some(isOldToolNote)) {
    throw new StepflowError(
      "REPLAY_FILE_OUTDATED",
      `Replay ${source}: ${where} lists "toolCalls" as { name, input } notes of an answer, the meaning an older stepflow gave the key. "toolCalls" now says what the model asks for in that turn, as in a script: [{ name, arguments, id? }], followed by the entry that answers after the results. Record the run again (run it with --record FILE), or rewrite the entry as a tool-call turn.`,
      { details: { source } },
    );
  }
  return { answer: answer as ScriptedEntry, record: record as ReplayCallRecord };
}

/** A list of recorded fall-throughs (at most 16, each `{ from, to, reason, detail }`). */
function isFallbackList(value: unknown): boolean {
  const ref = (r: unknown) =>
    r !== null && typeof r === "object" && typeof (r as { backend?: unknown }).backend === "string";
  return Array.isArray(value) && value.length <= 16 &&
    value.every((f) =>
      f !== null && typeof f === "object" && ref(f.from) && ref(f.to) &&
      FALLBACK_REASONS.has(f.reason) && typeof f.detail === "string"
    );
}

const FALLBACK_REASONS: ReadonlySet<unknown> = new Set([
  "rate_limit",
  "overload",
  "server_error",
  "context_length",
]);

/** A tool call written the old way: `{ name, input, output? }` without `arguments`. */
function isOldToolNote(call: unknown): boolean {
  if (call === null || typeof call !== "object" || Array.isArray(call)) return false;
  return !Object.hasOwn(call, "arguments") &&
    (Object.hasOwn(call, "input") || Object.hasOwn(call, "output"));
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
