import { StepflowError } from "../errors.ts";
import { sleep } from "../backoff.ts";
import { ANSWERS_KEY, parseScriptAnswers, type ScriptAnswer } from "./script_answers.ts";
import {
  type ToolTurnBackend,
  type ToolTurnRequest,
  type ToolTurnResponse,
  turnAsRequest,
} from "./tool_turn.ts";
import type { LlmBackend, LlmCallOptions, LlmRequest, LlmResponse, LlmUsage } from "./types.ts";

/**
 * One scripted answer. A string is the answer's text (the engine reads any JSON in it, as it does
 * for every backend). An object may set:
 * `text`, `structuredOutput` (or its alias `output`), `sessionId`, `usage`, `costUsd`,
 * `error` (the call rejects with this message — a backend failure), and `delayMs` (the call waits
 * first, honouring cancellation).
 */
export type ScriptedEntry = string | ScriptedEntryObject;

/** The object form of {@linkcode ScriptedEntry}. */
export interface ScriptedEntryObject {
  /** Answer text. */
  text?: string;
  /** Structured output returned as is. */
  structuredOutput?: unknown;
  /** Alias of `structuredOutput`, shorter in YAML scripts. */
  output?: unknown;
  /** Session id to report. */
  sessionId?: string;
  /** Token usage to report (without it the call's tokens are unknown, as with a server that sends none). */
  usage?: LlmUsage;
  /** Cost to report. */
  costUsd?: number;
  /** Makes the call fail with this message. */
  error?: string;
  /** Waits this long before answering (cancellable). */
  delayMs?: number;
  /**
   * Tool calls this answer asks for (a step with tools): `[{ name, arguments, id? }]`. The next
   * entry of the step answers after the results, with more calls or the final answer.
   */
  toolCalls?: ScriptedToolCall[];
  /**
   * Only a call whose prompt contains this text takes this answer; other calls pass it over (it
   * stays for the call it is meant for). For runs that go on at once — a fan-out step's children
   * each ask the same step — so each child gets its own answers, whatever the order they ask in.
   */
  promptIncludes?: string;
}

/** A scripted tool call: `arguments` may be an object or a (possibly broken) JSON string. */
export interface ScriptedToolCall {
  /** The tool's name. */
  name: string;
  /** Its arguments. */
  arguments?: unknown;
  /** The call's id (default `call_<n>`). */
  id?: string;
}

/**
 * A script keyed by step id: `{ "<stepId>": [entries…], "<stepId>#check": [entries…] }`.
 * Step and re-ask calls consume the `<stepId>` list; check calls consume `<stepId>#check`.
 */
export type ScriptedScript = Record<string, ScriptedEntry[]>;

/** A function that answers each call. */
export type ScriptedResponder = (
  req: LlmRequest,
) => ScriptedEntry | LlmResponse | Promise<ScriptedEntry | LlmResponse>;

const ENTRY_KEYS = new Set([
  "text",
  "structuredOutput",
  "output",
  "sessionId",
  "usage",
  "costUsd",
  "error",
  "delayMs",
  "toolCalls",
  "promptIncludes",
]);

/**
 * A backend that answers from a script instead of a model: for tests, demos and CI.
 *
 * - a list is consumed in call order, whatever the step;
 * - a {@linkcode ScriptedScript} map is consumed per step id (`<stepId>#check` for check calls);
 *   a key `<agent>/<stepId>` answers that agent's step only and is preferred over `<stepId>` (a
 *   parent agent and the child its agent step runs may have steps of the same id);
 * - a function answers every call.
 *
 * An entry with `promptIncludes` is taken only by a call whose prompt contains its text; a call
 * takes the first unused entry it may take, so concurrent runs asking the same step (a fan-out's
 * children) each take their own.
 *
 * In a step with tools, the answer to a turn is the one at the conversation's turn count: a
 * conversation that arrives with earlier turns already in it (a run resumed inside a step, its
 * turns replayed from the run log) skips the answers those turns used, as a model would go on
 * from the conversation it is sent (each conversation — a step's prompt — counted apart).
 *
 * Every request is recorded in {@linkcode ScriptedBackend.calls}. Running out of answers is an error
 * that names the call, never a silent default. An answer's text is also given to the call's
 * `onText` a word at a time, as a streaming backend would.
 *
 * @example
 * ```ts
 * import { ScriptedBackend } from "./scripted.ts";
 * const backend = new ScriptedBackend([{ output: { next_action: { action: "complete" } } }]);
 * const res = await backend.complete({
 *   kind: "step", agent: "demo", stepId: "initial.issue", iteration: 1, prompt: "Go", cwd: ".",
 * });
 * console.log(res.structuredOutput); // { next_action: { action: "complete" } }
 * console.log(backend.calls.length); // 1
 * ```
 */
export class ScriptedBackend implements LlmBackend, ToolTurnBackend {
  /** Always `"scripted"`. */
  readonly name = "scripted";
  /** Every request received, in order. */
  readonly calls: LlmRequest[] = [];
  /**
   * The answers the script gives the run's waits (its `_answers`: input steps, tool calls waiting
   * for permission), in order — the test kit and `deno task eval` answer with them; the backend
   * itself never reads them.
   */
  readonly answers: readonly ScriptAnswer[] = [];
  readonly #list?: ScriptedEntry[];
  readonly #byStep?: Map<string, ScriptedEntry[]>;
  readonly #responder?: ScriptedResponder;
  /** Per script key (`""` for the list form): which entries were used, and the first unused. */
  readonly #used = new Map<string, { used: boolean[]; first: number }>();

  /**
   * Creates the backend from its script.
   *
   * @param source a list of answers, a map from step id to answers, or a responder function
   */
  constructor(source: ScriptedEntry[] | ScriptedScript | ScriptedResponder) {
    if (typeof source === "function") this.#responder = source;
    else if (Array.isArray(source)) {
      source.forEach((e, i) => assertEntry(e, `entry ${i + 1}`));
      this.#list = source;
    } else {
      this.#byStep = new Map();
      for (const [key, entries] of Object.entries(source)) {
        if (key === ANSWERS_KEY) {
          this.answers = parseScriptAnswers(entries, "Scripted backend");
          continue;
        }
        if (!Array.isArray(entries)) {
          throw new StepflowError(
            "SCRIPT_INVALID",
            `Scripted backend: "${key}" must be a list of responses, got ${typeof entries}.`,
          );
        }
        entries.forEach((e, i) => assertEntry(e, `"${key}" entry ${i + 1}`));
        this.#byStep.set(key, entries);
      }
    }
  }

  /** Answers one call from the script. */
  async complete(req: LlmRequest, opts: LlmCallOptions = {}): Promise<LlmResponse> {
    this.calls.push(req);
    opts.signal?.throwIfAborted();
    const entry = this.#responder ? await this.#responder(req) : this.#next(req);
    if (isObject(entry) && (entry as ScriptedEntryObject).toolCalls !== undefined) {
      throw new StepflowError(
        "SCRIPT_INVALID",
        `Scripted backend: the answer for the ${req.kind} call of step "${req.stepId}" calls tools, but the step offers none. Give the step allowedTools (and use a backend with tools), or remove toolCalls.`,
        { details: { stepId: req.stepId } },
      );
    }
    const response = await toResponse(entry, req, opts.signal);
    streamText(response.text, opts.onText);
    return response;
  }

  /**
   * One turn of a step with tools: the next entry of the step, as tool calls (`toolCalls`) or the
   * final answer. Recorded in {@linkcode ScriptedBackend.toolTurns}.
   */
  async toolTurn(req: ToolTurnRequest, opts: LlmCallOptions = {}): Promise<ToolTurnResponse> {
    this.toolTurns.push(req);
    opts.signal?.throwIfAborted();
    const asRequest = turnAsRequest(req);
    this.calls.push(asRequest);
    if (!this.#responder) this.#skipAnswered(asRequest, req);
    const entry = this.#responder ? await this.#responder(asRequest) : this.#next(asRequest);
    const calls = isObject(entry) ? (entry as ScriptedEntryObject).toolCalls : undefined;
    if (calls && calls.length > 0) {
      const obj = entry as ScriptedEntryObject;
      if (obj.delayMs) await sleep(obj.delayMs, opts.signal);
      const response: ToolTurnResponse = {
        text: obj.text ?? "",
        toolCalls: calls.map((c, i) => ({
          id: c.id ?? `call_${this.toolTurns.length}_${i + 1}`,
          name: c.name,
          arguments: c.arguments ?? {},
        })),
      };
      if (obj.usage) response.usage = obj.usage;
      streamText(response.text, opts.onText);
      return response;
    }
    const answer = await toResponse(entry, asRequest, opts.signal);
    streamText(answer.text, opts.onText);
    const response: ToolTurnResponse = { text: answer.text, toolCalls: [] };
    if (answer.structuredOutput !== undefined) response.structuredOutput = answer.structuredOutput;
    if (answer.sessionId) response.sessionId = answer.sessionId;
    if (answer.usage) response.usage = answer.usage;
    if (answer.costUsd !== undefined) response.costUsd = answer.costUsd;
    return response;
  }

  /** Every tool turn received, in order (they are also counted in {@linkcode ScriptedBackend.calls}). */
  readonly toolTurns: ToolTurnRequest[] = [];

  /** How many scripted answers are still unused (list and map forms). */
  remaining(): number {
    const unused = (key: string, list: readonly ScriptedEntry[]) =>
      list.length - (this.#used.get(key)?.used.filter(Boolean).length ?? 0);
    if (this.#list) return unused("", this.#list);
    if (!this.#byStep) return 0;
    let n = 0;
    for (const [key, list] of this.#byStep) n += unused(key, list);
    return n;
  }

  /**
   * Skips the answers of the turns a conversation holds that this backend did not give (a resumed
   * conversation): the entry used is the conversation's first one plus its model turns so far.
   */
  #skipAnswered(asRequest: LlmRequest, req: ToolTurnRequest): void {
    const answered = req.messages.filter((m) => m.role === "assistant").length;
    const key = this.#list ? "" : this.#key(asRequest);
    const conversation = `${key}\n${asRequest.prompt}`;
    const given = answered === 0 ? 0 : this.#turnsGiven.get(conversation) ?? 0;
    for (let skip = Math.max(0, answered - given); skip > 0; skip--) this.#take(key, asRequest);
    this.#turnsGiven.set(conversation, answered + 1);
  }

  /** Per conversation (script key and prompt): the model turns it holds after this backend's answer. */
  readonly #turnsGiven = new Map<string, number>();

  /** The script key of a request (map form). */
  #key(req: LlmRequest): string {
    // `<agent>/<stepId>` first: a parent and its child agent (agent steps) may share step ids.
    const base = req.kind === "check" ? `${req.stepId}#check` : req.stepId;
    const scoped = req.agent ? `${req.agent}/${base}` : undefined;
    return scoped !== undefined && this.#byStep!.has(scoped) ? scoped : base;
  }

  /** Takes the first unused entry of `key` that `req` may take (`promptIncludes`). */
  #take(key: string, req: LlmRequest): ScriptedEntry | undefined {
    const list = this.#list ?? this.#byStep!.get(key);
    if (!list) return undefined;
    let state = this.#used.get(key);
    if (!state) this.#used.set(key, state = { used: [], first: 0 });
    for (let i = state.first; i < list.length; i++) {
      if (state.used[i]) continue;
      const entry = list[i];
      const wants = typeof entry === "object" ? entry.promptIncludes : undefined;
      if (wants !== undefined && !req.prompt.includes(wants)) continue;
      state.used[i] = true;
      while (state.first < list.length && state.used[state.first]) state.first++;
      return entry;
    }
    return undefined;
  }

  #next(req: LlmRequest): ScriptedEntry {
    if (this.#list) {
      const entry = this.#take("", req);
      if (entry === undefined) {
        throw new StepflowError(
          "SCRIPT_EXHAUSTED",
          `Scripted backend ran out of responses at call ${this.calls.length} (${req.kind} of step "${req.stepId}", iteration ${req.iteration}). Add more entries to the script.`,
          { details: { stepId: req.stepId } },
        );
      }
      return entry;
    }
    const key = this.#key(req);
    const list = this.#byStep!.get(key);
    const entry = this.#take(key, req);
    if (entry === undefined) {
      const have = list
        ? `all ${list.length} responses under "${key}" are used (or meant for other prompts: promptIncludes)`
        : `the script has no "${key}" key`;
      throw new StepflowError(
        "SCRIPT_EXHAUSTED",
        `Scripted backend has no response for the ${req.kind} call of step "${req.stepId}" (iteration ${req.iteration}): ${have}. Add an entry under "${key}".`,
        { details: { stepId: req.stepId } },
      );
    }
    return entry;
  }
}

/** An answer's text as a streaming backend gives it: a word (with its spaces) at a time. */
function streamText(text: string, onText: ((text: string) => void) | undefined): void {
  if (!onText || text === "") return;
  for (const piece of text.match(/\s*\S+\s*/g) ?? [text]) onText(piece);
}

function isObject(entry: unknown): boolean {
  return entry !== null && typeof entry === "object" && !Array.isArray(entry);
}

function assertEntry(entry: unknown, where: string): asserts entry is ScriptedEntry {
  if (typeof entry === "string") return;
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
    throw new StepflowError(
      "SCRIPT_INVALID",
      `Scripted backend: ${where} must be a string or an object with text/output/error/delayMs, got ${
        Array.isArray(entry) ? "a list" : entry === null ? "null" : typeof entry
      }.`,
    );
  }
  const calls = (entry as ScriptedEntryObject).toolCalls;
  if (
    calls !== undefined &&
    (!Array.isArray(calls) ||
      calls.some((c) => !isObject(c) || typeof (c as ScriptedToolCall).name !== "string"))
  ) {
    throw new StepflowError(
      "SCRIPT_INVALID",
      `Scripted backend: ${where} has toolCalls that are not a list of { name, arguments, id? }.`,
    );
  }
  const unknown = Object.keys(entry).filter((k) => !ENTRY_KEYS.has(k));
  if (unknown.length > 0) {
    throw new StepflowError(
      "SCRIPT_INVALID",
      `Scripted backend: ${where} has unknown key(s) ${
        unknown.map((k) => `"${k}"`).join(", ")
      }; allowed: ${[...ENTRY_KEYS].join(", ")}. (Put structured output under "output".)`,
    );
  }
}

async function toResponse(
  entry: ScriptedEntry | LlmResponse,
  req: LlmRequest,
  signal?: AbortSignal,
): Promise<LlmResponse> {
  if (typeof entry === "string") return { text: entry };
  const obj = entry as ScriptedEntryObject;
  if (obj.delayMs !== undefined && obj.delayMs > 0) await sleep(obj.delayMs, signal);
  if (obj.error !== undefined) {
    throw new StepflowError("BACKEND_ERROR", `scripted backend error: ${obj.error}`, {
      details: { stepId: req.stepId },
    });
  }
  const structured = obj.structuredOutput !== undefined ? obj.structuredOutput : obj.output;
  const response: LlmResponse = {
    text: obj.text ?? (structured !== undefined ? JSON.stringify(structured) : ""),
  };
  if (structured !== undefined) response.structuredOutput = structured;
  if (obj.sessionId !== undefined) response.sessionId = obj.sessionId;
  if (obj.usage !== undefined) response.usage = obj.usage;
  if (obj.costUsd !== undefined) response.costUsd = obj.costUsd;
  return response;
}
