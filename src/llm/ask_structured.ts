/**
 * The one structured-output path of the project: ask → extract → validate → re-ask. The step-flow
 * runner and QPlan's `ai` module both call {@linkcode askStructured}, so a model's answer is read,
 * bounded and judged the same way everywhere, and every re-ask says what was wrong in words a
 * model can act on.
 *
 * @module
 */
import { extractJson } from "./structured_output.ts";
import type { LlmRequest, LlmResponse } from "./types.ts";

/**
 * The deepest nesting of objects and arrays accepted in a model's structured output. `{}` and `[]`
 * are 1 level, `{"a": {}}` is 2. Deeper output is rejected at validation time (and re-asked): it
 * cannot be useful to a flow and deeper data crashes `structuredClone` and `JSON.stringify`.
 */
export const MAX_OUTPUT_DEPTH = 64;

/** The longest raw answer kept in history entries and run logs, in characters. */
export const ANSWER_EXCERPT_CHARS = 8_192;

/** The longest prompt kept in `step_start` run-log entries, in characters. */
export const PROMPT_EXCERPT_CHARS = 16_384;

/** The most validation errors quoted in a re-ask, a log entry or an error message. */
const MAX_ERRORS_SHOWN = 20;

/** A text cut to a bound, with the full text's length in characters. */
export interface TextExcerpt {
  /** The first characters of the text (all of it when it fits). */
  text: string;
  /** The full length in characters (UTF-16 code units, as `String.length`). */
  length: number;
}

/**
 * The first `max` characters of `text` with its full length.
 *
 * @example
 * ```ts
 * import { excerpt } from "./ask_structured.ts";
 * excerpt("abcdef", 3); // { text: "abc", length: 6 }
 * ```
 */
export function excerpt(text: string, max: number): TextExcerpt {
  return { text: text.length > max ? text.slice(0, max) : text, length: text.length };
}

/**
 * True when `value` nests objects/arrays deeper than `limit` levels. Iterative and linear in the
 * number of nodes (it stops at the first node past the limit), so it is safe on any input.
 *
 * @example
 * ```ts
 * import { exceedsDepth } from "./ask_structured.ts";
 * exceedsDepth({ a: [{}] }, 3); // false
 * exceedsDepth({ a: [{}] }, 2); // true
 * ```
 */
export function exceedsDepth(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit < 1) return true;
  // One interleaved stack (node, depth), allocated only when a node has object children: this runs
  // on every answer, and most answers are a handful of small objects.
  let stack: unknown[] | undefined;
  let node = value as object;
  let depth = 1;
  for (;;) {
    const children: unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (child !== null && typeof child === "object") {
        if (depth >= limit) return true;
        (stack ??= []).push(child, depth + 1);
      }
    }
    if (stack === undefined || stack.length === 0) return false;
    depth = stack.pop() as number;
    node = stack.pop() as object;
  }
}

/**
 * A copy of `value` in which every object or array nested deeper than `limit` levels is replaced by
 * a string saying so. Iterative (no recursion), so data already stored by an older version can be
 * cloned, printed as JSON or checkpointed without a stack overflow. Returns `value` itself when it is
 * within the limit.
 *
 * @example
 * ```ts
 * import { boundDepth } from "./ask_structured.ts";
 * boundDepth({ a: { b: {} } }, 2); // { a: { b: "[nested deeper than 2 levels: omitted]" } }
 * ```
 */
export function boundDepth(value: unknown, limit: number): unknown {
  if (!exceedsDepth(value, limit)) return value;
  const omitted = `[nested deeper than ${limit} levels: omitted]`;
  const copyOf = (node: object): Record<string, unknown> | unknown[] =>
    Array.isArray(node) ? new Array(node.length) : {};
  const root = copyOf(value as object);
  const stack: { source: object; target: Record<string, unknown> | unknown[]; depth: number }[] = [
    { source: value as object, target: root, depth: 1 },
  ];
  while (stack.length > 0) {
    const { source, target, depth } = stack.pop()!;
    for (const [key, child] of Object.entries(source)) {
      let copy: unknown = child;
      if (child !== null && typeof child === "object") {
        if (depth >= limit) copy = omitted;
        else {
          copy = copyOf(child);
          stack.push({ source: child, target: copy as Record<string, unknown>, depth: depth + 1 });
        }
      }
      // defineProperty, not assignment: a "__proto__" key stays data, never a prototype.
      Object.defineProperty(target, key, {
        value: copy,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
  return root;
}

/** Why an answer was rejected, in words a model (and a person reading the log) can act on. */
export interface AnswerRejection {
  /** One sentence: "your answer contained no JSON object", "your answer is not valid JSON: …". */
  reason: string;
  /** The validator's findings (`/next_action/action: must be one of …`), when it ran. */
  errors: string[];
}

/** One re-ask, as reported to {@linkcode AskStructuredOptions.onReask}. */
export interface ReaskInfo extends AnswerRejection {
  /** 1-based re-ask number. */
  attempt: number;
  /** The rejected answer, cut to {@linkcode ANSWER_EXCERPT_CHARS}. */
  answer: TextExcerpt;
}

/** Options of {@linkcode askStructured}. */
export interface AskStructuredOptions {
  /** The request of the first call (its `outputSchema` is what the answer must match). */
  request: LlmRequest;
  /** Makes one backend call (the caller adds its timeout, usage accounting, pause, …). */
  call: (request: LlmRequest) => Promise<LlmResponse>;
  /** Validates a parsed answer; returns the problems (empty when it is valid). */
  validate: (value: unknown) => string[];
  /** Re-asks after an invalid answer (default 1). */
  maxReasks?: number;
  /** Nesting limit (default {@linkcode MAX_OUTPUT_DEPTH}). */
  maxDepth?: number;
  /** Called before each re-ask is sent. */
  onReask?: (info: ReaskInfo) => void | Promise<void>;
}

/** The outcome of {@linkcode askStructured}. */
export type AskStructuredResult =
  | {
    ok: true;
    /** The validated value. */
    value: unknown;
    /** The last response. */
    response: LlmResponse;
    /** The last answer, cut to {@linkcode ANSWER_EXCERPT_CHARS}. */
    answer: TextExcerpt;
    /** Re-asks sent. */
    reasks: number;
  }
  | ({
    ok: false;
    /** The last response. */
    response: LlmResponse;
    /** The last answer, cut to {@linkcode ANSWER_EXCERPT_CHARS}. */
    answer: TextExcerpt;
    /** Re-asks sent. */
    reasks: number;
  } & AnswerRejection);

/**
 * Asks for structured output and insists on it: calls the backend, reads the answer (native
 * structured output, else JSON extracted from the text), rejects output nested deeper than
 * `maxDepth`, validates it, and on failure re-asks (`kind: "reask"`) with the original prompt plus
 * what was wrong, up to `maxReasks` times. It never throws for a bad answer (that is
 * `ok: false` with the reason); call errors propagate.
 *
 * @example
 * ```ts
 * import { askStructured } from "./ask_structured.ts";
 * import { ScriptedBackend } from "./scripted.ts";
 * const backend = new ScriptedBackend(["Sure thing!", '{"greeting": "hi"}']);
 * const result = await askStructured({
 *   request: { kind: "step", agent: "demo", stepId: "hello", iteration: 1, prompt: "Greet", cwd: "." },
 *   call: (req) => backend.complete(req),
 *   validate: (v) => typeof (v as { greeting?: unknown }).greeting === "string" ? [] : ["/greeting: must be string"],
 * });
 * console.log(result.ok, result.reasks); // true 1
 * ```
 */
export async function askStructured(options: AskStructuredOptions): Promise<AskStructuredResult> {
  const { request, call, validate } = options;
  const maxReasks = options.maxReasks ?? 1;
  const maxDepth = options.maxDepth ?? MAX_OUTPUT_DEPTH;
  let response = await call(request);
  for (let reasks = 0;; reasks++) {
    const answer = excerpt(response.text, ANSWER_EXCERPT_CHARS);
    const judged = judgeAnswer(response, validate, maxDepth);
    if (judged.ok) return { ok: true, value: judged.value, response, answer, reasks };
    if (reasks >= maxReasks) return { ok: false, ...judged.rejection, response, answer, reasks };
    await options.onReask?.({ attempt: reasks + 1, answer, ...judged.rejection });
    response = await call({
      ...request,
      kind: "reask",
      prompt: reaskPrompt(request.prompt, judged.rejection),
    });
  }
}

/** Reads, bounds and validates one answer. */
export function judgeAnswer(
  response: LlmResponse,
  validate: (value: unknown) => string[],
  maxDepth: number = MAX_OUTPUT_DEPTH,
): { ok: true; value: unknown } | { ok: false; rejection: AnswerRejection } {
  let value = response.structuredOutput;
  if (value === undefined) {
    const extracted = extractJson(response.text);
    if (!extracted.ok) {
      // Past a bound of the extraction, its reason says which; the text is not parsed again.
      const reason = extracted.limit ? extracted.reason : noJsonReason(response.text);
      return { ok: false, rejection: { reason, errors: [] } };
    }
    value = extracted.value;
  }
  if (exceedsDepth(value, maxDepth)) {
    return {
      ok: false,
      rejection: {
        reason:
          `your answer nests objects/arrays deeper than ${maxDepth} levels; answer with a flatter JSON object`,
        errors: [`(root): must not be nested deeper than ${maxDepth} levels`],
      },
    };
  }
  const errors = validate(value);
  if (errors.length === 0) return { ok: true, value };
  // A huge invalid answer can produce thousands of findings; the model needs the first few.
  const shown = errors.length > MAX_ERRORS_SHOWN
    ? [...errors.slice(0, MAX_ERRORS_SHOWN), `… and ${errors.length - MAX_ERRORS_SHOWN} more`]
    : errors;
  return {
    ok: false,
    rejection: { reason: "your answer did not match the required JSON schema", errors: shown },
  };
}

/** Why no JSON could be read from `text`. */
function noJsonReason(text: string): string {
  const trimmed = text.trim();
  if (trimmed === "") return "your answer was empty";
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      JSON.parse(trimmed);
    } catch (error) {
      return `your answer is not valid JSON: ${(error as Error).message}`;
    }
  }
  return "your answer contained no JSON object";
}

/**
 * The prompt of a re-ask: the original prompt, what was wrong, and what to do.
 *
 * @example
 * ```ts
 * import { reaskPrompt } from "./ask_structured.ts";
 * reaskPrompt("Classify.", { reason: "your answer contained no JSON object", errors: [] });
 * ```
 */
export function reaskPrompt(prompt: string, rejection: AnswerRejection): string {
  const errors = rejection.errors.map((e) => `\n- ${e}`).join("");
  return `${prompt}\n\n---\nYour previous answer was rejected: ${rejection.reason}.${errors}\n` +
    "Answer again with only a JSON object that matches the required JSON schema exactly.";
}
