import { StepflowError } from "../errors.ts";
import { sleep } from "../backoff.ts";
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
]);

/**
 * A backend that answers from a script instead of a model: for tests, demos and CI.
 *
 * - a list is consumed in call order, whatever the step;
 * - a {@linkcode ScriptedScript} map is consumed per step id (`<stepId>#check` for check calls);
 * - a function answers every call.
 *
 * Every request is recorded in {@linkcode ScriptedBackend.calls}. Running out of answers is an error
 * that names the call, never a silent default.
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
export class ScriptedBackend implements LlmBackend {
  /** Always `"scripted"`. */
  readonly name = "scripted";
  /** Every request received, in order. */
  readonly calls: LlmRequest[] = [];
  readonly #list?: ScriptedEntry[];
  readonly #byStep?: Map<string, ScriptedEntry[]>;
  readonly #responder?: ScriptedResponder;
  #listIndex = 0;
  readonly #stepIndex = new Map<string, number>();

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
    return await toResponse(entry, req, opts.signal);
  }

  /** How many scripted answers are still unused (list and map forms). */
  remaining(): number {
    if (this.#list) return this.#list.length - this.#listIndex;
    if (!this.#byStep) return 0;
    let n = 0;
    for (const [key, list] of this.#byStep) n += list.length - (this.#stepIndex.get(key) ?? 0);
    return n;
  }

  #next(req: LlmRequest): ScriptedEntry {
    if (this.#list) {
      const entry = this.#list[this.#listIndex];
      if (entry === undefined) {
        throw new StepflowError(
          "SCRIPT_EXHAUSTED",
          `Scripted backend ran out of responses at call ${this.calls.length} (${req.kind} of step "${req.stepId}", iteration ${req.iteration}). Add more entries to the script.`,
          { details: { stepId: req.stepId } },
        );
      }
      this.#listIndex++;
      return entry;
    }
    const key = req.kind === "check" ? `${req.stepId}#check` : req.stepId;
    const list = this.#byStep!.get(key);
    const index = this.#stepIndex.get(key) ?? 0;
    if (!list || index >= list.length) {
      const have = list
        ? `all ${list.length} responses under "${key}" are used`
        : `the script has no "${key}" key`;
      throw new StepflowError(
        "SCRIPT_EXHAUSTED",
        `Scripted backend has no response for the ${req.kind} call of step "${req.stepId}" (iteration ${req.iteration}): ${have}. Add an entry under "${key}".`,
        { details: { stepId: req.stepId } },
      );
    }
    this.#stepIndex.set(key, index + 1);
    return list[index];
  }
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
